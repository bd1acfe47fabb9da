"""fuse_add_with_fully_connected: an ADD of a per-feature (or scalar) constant after a
FULLY_CONNECTED goes into its bias. ONE's flag; fuse_batchnorm_with_fc's backward fold (backward.py) with the
chain restricted to ADD.

    before:  x -> FULLY_CONNECTED(W, b) [-> RESHAPE] -> ADD(t, act) -> y
    after:   x -> FULLY_CONNECTED(W, b', act) [-> RESHAPE] -> y

    b'[o] = b[o] + t[o]      (b = 0 when there is no bias: one is created; W is unchanged)

Consecutive ADDs fold as one; what follows stays. Refused with a reason: an activation on the
layer, its output read elsewhere or a graph output, a non-constant operand (ONE's
Net_FullyConnected_Add_000 adds a graph input: not a bias), a constant varying along a
non-feature axis, non-float32 operands.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_fc", chain_kinds=frozenset({"ADD"}))
