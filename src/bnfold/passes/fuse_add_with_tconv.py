"""fuse_add_with_tconv: an ADD of a per-channel constant after a TRANSPOSE_CONV goes into its bias.
ONE's flag; fuse_batchnorm_with_tconv's backward fold (backward.py) with the chain restricted to ADD.

    before:  size, W, x -> TRANSPOSE_CONV(size, W, x[, b]) -> ADD(t, act) -> y
    after:   size, W, x, b' -> TRANSPOSE_CONV(act) -> y                        (TFLite)
             size, W, x, b' -> TRANSPOSE_CONV -> RELU/RELU6/RELU_N1_TO_1 -> y   (Circle)

    b'[o] = b[o] + t[o]      (the optional 4th input; created when missing)

ONE requires the TRANSPOSE_CONV to have no bias and a rank-1 constant, and sets the constant as
the bias in place (so other readers of the layer would see it too); here an existing bias is
summed into a new tensor and any per-channel shape is accepted. The operator version and the
Circle activation are settled as in fuse_batchnorm_with_tconv. Refused with a reason: an
activation on the layer, its output read elsewhere or a graph output, a non-constant or
non-float32 operand, a constant varying along a spatial axis.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph
from .fuse_batchnorm_with_tconv import finish


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_tconv", finish=finish, chain_kinds=frozenset({"ADD"}))
