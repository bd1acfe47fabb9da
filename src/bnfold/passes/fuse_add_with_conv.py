"""fuse_add_with_conv: an ADD of a per-channel (or scalar) constant after a CONV_2D goes into the
conv's bias. ONE's flag; fuse_batchnorm_with_conv's backward fold (backward.py) with the chain restricted to ADD
(a scale of 1).

    before:  x -> CONV_2D(W, b) -> ADD(t, act) -> y
    after:   x -> CONV_2D(W, b', act) -> y

    b'[o] = b[o] + t[o]      (b = 0 when the conv has no bias: one is created; W is unchanged)

Consecutive ADDs fold as one; any other op after them stays. Refused with a reason: an activation
on the conv, the conv output read elsewhere or a graph output, a non-constant operand (a residual
ADD of two feature maps is not a bias), a constant varying along a spatial axis, non-float32
operands.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_conv", chain_kinds=frozenset({"ADD"}))
