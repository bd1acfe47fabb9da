"""fuse_batchnorm_with_tconv: a batch norm after a TRANSPOSE_CONV goes into its filter and bias.

    before:  size, W, x -> TRANSPOSE_CONV(size, W, x[, b]) -> MUL(s) -> ADD(t, act) -> y
    after:   size, W', x, b' -> TRANSPOSE_CONV(act) -> y                       (TFLite)
             size, W', x, b' -> TRANSPOSE_CONV -> RELU/RELU6/RELU_N1_TO_1 -> y  (Circle)

The filter is OHWI with O the *output* channels (ONE's first version scaled axis 3, the input
channels, which is wrong). Every output value of channel o is a sum of products with W[o, ...]
only, plus b[o], so for any padding, stride or kernel shape:

    W'[o, h, w, i] = s[o]·W[o, h, w, i]     (axis 0)
    b'[o]          = s[o]·b[o] + t[o]       (the optional 4th input; created when missing)

Operator versions (TFLite's op_version rules): a bias input needs TRANSPOSE_CONV version 3 and a
fused activation version 4, so the operator code is raised to what the folded op uses; a runtime
too old for that refuses the model instead of silently dropping the bias or the activation
(older kernels do not read either). LiteRT 2.3 runs a 4-input TRANSPOSE_CONV and a fused
RELU/RELU6 at any version (checked against the unfused op). In Circle the activation is emitted
as a standalone op after the layer, as ONE does: its backends do not run TransposeConv with a
fused activation (ONE splits one off by default), and the Circle version is left as it was.

Guards (skipped with a reason): an activation on the layer or inside the chain, the layer output
or a chain intermediate read elsewhere or being a graph output, non-constant or non-float32
weights, bias or constants, constants that vary along a non-channel axis, a non-finite result.
A filter shared with another op is copied, never edited.
"""

from __future__ import annotations

from ..io.formats import TFLITE
from ..ir.graph import Graph, Op
from .layers import TRANSPOSE_CONV, fold_backward
from .manager import PassLog

BIAS_VERSION = 3
ACTIVATION_VERSION = 4
STANDALONE = ("RELU", "RELU6", "RELU_N1_TO_1", "TANH")


def run(graph: Graph, log: PassLog) -> bool:
    return fold_backward(graph, log, TRANSPOSE_CONV, after=_finish)


def _finish(graph: Graph, log: PassLog, layer: Op) -> None:
    """Give the folded layer an operator version (TFLite) or a standalone activation (Circle)."""
    record = log.report.folds[-1]
    tflite = graph.model is None or graph.model.format is TFLITE
    act = layer.fused_activation
    if act != "NONE" and not tflite and act in STANDALONE:
        record["standalone_activation"] = _split_activation(graph, layer, act).outputs[0].name
        act = "NONE"
    if tflite and graph.model is not None:
        need = ACTIVATION_VERSION if act != "NONE" else BIAS_VERSION
        if layer.opcode.version < need:
            record["opcode_version"] = [layer.opcode.version, need]
            layer.opcode = graph.model.opcode(TRANSPOSE_CONV.kind, version=need)


def _split_activation(graph: Graph, layer: Op, act: str) -> Op:
    """layer(act) -> y  becomes  layer -> y/pre_activation -> act -> y."""
    y = layer.outputs[0]
    pre = graph.add_tensor(f"{y.name}/pre_activation", y.dtype, y.shape)
    layer.fused_activation = "NONE"
    graph.set_output(layer, 0, pre)
    return graph.add_op(act, [pre], [y], None, after=layer)
