"""fuse_batchnorm_with_conv3d: a batch norm after a CONV_3D or CONV_3D_TRANSPOSE goes into its
filter and bias.

    before:  x -> CONV_3D(W, b) -> MUL(s) -> ADD(t, act) -> y        (NDHWC data)
    after:   x -> CONV_3D(W', b', act) -> y

    W'[d, h, w, i, o] = s[o]·W[d, h, w, i, o]   (CONV_3D filter DHWIO, output channel on axis 4)
    W'[d, h, w, o, i] = s[o]·W[d, h, w, o, i]   (CONV_3D_TRANSPOSE filter DHWOI, axis 3)
    b'[o]             = s[o]·b[o] + t[o]        (b = 0 when there is no bias: one is created)

The TFLite converter never folds this one. Constants may be [], [1], [C], [1,C], [1,1,C],
[1,1,1,C] or [1,1,1,1,C] (see affine.py). Skipped with a reason: an activation on the layer or
inside the chain, the layer output or a chain intermediate read elsewhere or being a graph
output, non-constant or non-float32 weights, bias or constants, constants that vary along a
non-channel axis, a non-finite result. A filter shared with another op is copied, never edited.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_conv3d")
