"""fuse_batchnorm_with_fc: a batch norm after a FULLY_CONNECTED goes into its weights and bias.

    before:  x -> FULLY_CONNECTED(W, b) [-> RESHAPE] -> MUL(s) -> ADD(t, act) -> y
    after:   x -> FULLY_CONNECTED(W', b', act) [-> RESHAPE] -> y

Weights are [O, I] and output feature o is row o of W times x, plus b[o]:

    W'[o, i] = s[o]·W[o, i]       (axis 0)
    b'[o]    = s[o]·b[o] + t[o]   (b = 0 when there is no bias: one is created)

Through a RESHAPE that keeps the last axis (same last dimension O, so row-major order keeps every
element's feature index: flat index k·O + o before and after), the chain is matched on the
reshape output's last axis and the RESHAPE stays. That walk is the layout-op follower shared by
every backward fold (layout.py, via backward.chain_after); a reshape that merges or splits the
feature axis is not followed.

Guards (skipped with a reason): an activation on the layer, the FC output,
the reshape output or a chain intermediate read elsewhere or being a graph output, non-constant
or non-float32 weights, bias or constants, constants that vary along a non-feature axis, a
non-finite result. Weights shared with another op are copied, never edited.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_fc")
