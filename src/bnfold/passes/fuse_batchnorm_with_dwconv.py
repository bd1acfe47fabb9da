"""fuse_batchnorm_with_dwconv: a batch norm after a DEPTHWISE_CONV_2D goes into its filter and bias.

    before:  x -> DEPTHWISE_CONV_2D(W, b, M) -> MUL(s) -> ADD(t, act) -> y
    after:   x -> DEPTHWISE_CONV_2D(W', b', M, act) -> y

The filter is [1, H, W, I·M] and output channel c = i·M + m is computed by column c alone, so for
any depth multiplier M the batch norm runs over all I·M output channels and

    W'[0, h, w, c] = s[c]·W[0, h, w, c]      (axis 3)
    b'[c]          = s[c]·b[c] + t[c]        (b = 0 when there is no bias: one is created)

(ONE indexes s[c / M] and emits I biases, which is right only for M = 1; here s has I·M entries.)

Any chain form is accepted (Mul/Add/Sub/Div, constant on either side where that is affine, shapes
[], [1], [C], [1,C], [1,1,C], [1,1,1,C]); see affine.py. Skipped with a reason: an activation on
the layer or inside the chain, the layer output or a chain intermediate read elsewhere or being a
graph output, non-constant or non-float32 weights, bias or constants, constants that vary along a
non-channel axis, a non-finite result. A filter shared with another op is copied, never edited.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_dwconv")
