"""fuse_batchnorm_with_conv: a batch norm after a CONV_2D goes into its filter and bias.

    before:  x -> CONV_2D(W, b) -> MUL(s) -> ADD(t, act) -> y
    after:   x -> CONV_2D(W', b', act) -> y

    W'[o, h, w, i] = s[o]·W[o, h, w, i]      (filter OHWI, output channel on axis 0)
    b'[o]          = s[o]·b[o] + t[o]        (b = 0 when the conv has no bias: one is created)

Any chain form is accepted (Mul/Add/Sub/Div, constant on either side where that is affine, shapes
[], [1], [C], [1,C], [1,1,C], [1,1,1,C]); see affine.py. Skipped with a reason: an activation on
the conv or inside the chain, the conv output or a chain intermediate read elsewhere or being a
graph output, non-constant or non-float32 weights, bias or constants, constants that vary along a
non-channel axis, a non-finite result. A filter shared with another op is copied, never edited.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_conv")
