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

Guards (skipped with a reason): an activation on the layer, the layer output
or a chain intermediate read elsewhere or being a graph output, non-constant or non-float32
weights, bias or constants, constants that vary along a non-channel axis, a non-finite result.
A filter shared with another op is copied, never edited.
"""

from __future__ import annotations

from ..engine.backward import fold_backward, splits_activation
from ..engine.report import PassResult
from ..engine.targets import writes_circle
from ..ir.graph import Graph, Op
from ..ir.ops import LAYERS

SPEC = LAYERS["TRANSPOSE_CONV"]


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_tconv", finish=finish)


def finish(graph: Graph, layer: Op) -> dict:
    """Give the folded layer an operator version (TFLite) or a standalone activation (Circle).
    Shared with fuse_add_with_tconv, which folds into the same layer."""
    details: dict[str, object] = {}
    act = layer.fused_activation
    if splits_activation(graph, SPEC, act):
        details["standalone_activation"] = _split_activation(graph, layer, act).outputs[0].name
        act = "NONE"
    if graph.model is not None and not writes_circle(graph):
        need = SPEC.version_for("activation" if act != "NONE" else "bias")
        if layer.opcode.version < need:
            details["opcode_version"] = [layer.opcode.version, need]
            layer.opcode = graph.model.opcode(layer.kind, version=need)
    return details


def _split_activation(graph: Graph, layer: Op, act: str) -> Op:
    """layer(act) -> y  becomes  layer -> y/pre_activation -> act -> y."""
    y = layer.outputs[0]
    pre = graph.add_tensor(f"{y.name}/pre_activation", y.dtype, y.shape)
    layer.fused_activation = "NONE"
    graph.set_output(layer, 0, pre)
    return graph.add_op(act, [pre], [y], None, after=layer)
