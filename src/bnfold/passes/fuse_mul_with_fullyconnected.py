"""fuse_mul_with_fullyconnected: a MUL by a per-feature (or scalar) constant after a
FULLY_CONNECTED goes into its weights and bias. ONE's flag; fuse_batchnorm_with_fc's backward fold (backward.py)
with the chain restricted to MUL.

    before:  x -> FULLY_CONNECTED(W, b) [-> RESHAPE] -> MUL(s, act) -> y
    after:   x -> FULLY_CONNECTED(W', b', act) [-> RESHAPE] -> y

    W'[o, i] = s[o]·W[o, i]     (weights [O, I], output feature on axis 0)
    b'[o]    = s[o]·b[o]        (no bias: one with zeros is created)

s of shape [], [1], [O], [1,O], [1,1,O], ... (a scalar scales every feature). Consecutive MULs fold
as one; what follows stays. Refused with a reason: an activation on the layer, its output read
elsewhere or a graph output, a non-constant or non-float32 operand, a constant varying along a
non-feature axis, a non-finite result.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_fc", chain_kinds=frozenset({"MUL"}))
