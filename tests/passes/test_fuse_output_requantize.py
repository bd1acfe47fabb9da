"""fuse_output_requantize: a QUANTIZE after an int8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED /
TRANSPOSE_CONV goes where the layer can write its parameters with no integer changed (one scale, a
clamp the new zero point keeps), bit for bit in LiteRT; another scale (TICO folds it: LiteRT's
results then differ by a step, shown here), another type or a moved clamp stay with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.recipe.chef import build
from bnfold.values import litert
from quant_models import QNet, optimize_quantized, quant_inputs, reasons

PASS = "fuse_output_requantize"
S_IN = 0.05


def layer_net(kind: str, out=(0.1, -128), requant=(0.1, -100), act="NONE", dtype="INT8") -> QNet:
    """x int8 -> kind (int8 weights, per channel but for FC; int32 bias) -> y (out: scale, zero
    point) -> QUANTIZE to requant -> q, the model's output."""
    n = QNet(seed=5)
    rng = np.random.default_rng(7)
    if kind == "FULLY_CONNECTED":
        x_shape, w_shape, y_shape, axis, channels = [3, 6], [4, 6], [3, 4], 0, 4
    elif kind == "DEPTHWISE_CONV_2D":
        x_shape, w_shape, y_shape, axis, channels = [1, 5, 6, 3], [1, 2, 2, 3], [1, 4, 5, 3], 3, 3
    else:
        x_shape, w_shape, y_shape, axis, channels = [1, 5, 6, 3], [4, 2, 2, 3], [1, 4, 5, 4], 0, 4
        if kind == "TRANSPOSE_CONV":
            y_shape = [1, 6, 7, 4]
    n.qinput("x", x_shape, "INT8", S_IN, -3)
    scales = [0.02] if kind == "FULLY_CONNECTED" else [0.01 + 0.005 * c for c in range(channels)]
    w = n.qconst("w", rng.integers(-127, 128, w_shape), "INT8", scales, [0] * len(scales), axis)
    b = n.qconst("b", rng.integers(-500, 500, [channels]), "INT32", [S_IN * s for s in scales], [0] * len(scales), 0)
    y = n.q("y", y_shape, dtype, *out)
    conv = dict(padding="VALID", stride_w=1, stride_h=1, fused_activation_function=act)
    if kind == "CONV_2D":
        n.op(kind, ["x", w, b], y, y_shape, **conv)
    elif kind == "DEPTHWISE_CONV_2D":
        n.op(kind, ["x", w, b], y, y_shape, depth_multiplier=1, **conv)
    elif kind == "FULLY_CONNECTED":
        n.op(kind, ["x", w, b], y, y_shape, fused_activation_function=act)
    else:
        n.op(
            kind, [n.ints("shape", y_shape), w, "x", b], y, y_shape, padding="VALID", stride_w=1, stride_h=1, version=3
        )
    n.outputs = [n.op("QUANTIZE", [y], n.q("q", y_shape, dtype, *requant), y_shape)]
    return n


@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV"])
def test_a_shift_of_zero_point_after_relu_folds(kind):
    act = "NONE" if kind == "TRANSPOSE_CONV" else "RELU"
    out, requant = ((0.1, 0), (0.1, 0)) if act == "NONE" else ((0.1, -128), (0.1, -100))
    _, model, _ = optimize_quantized(layer_net(kind, out, requant, act).recipe(), [PASS], {"QUANTIZE": 0, kind: 1})
    assert [t.name for t in model.graphs[0].outputs] == ["q"]


@pytest.mark.parametrize(
    "out,requant,act,words",
    [
        ((0.1, 0), (0.12, 0), "RELU", "rescales"),
        ((0.1, 0), (0.1, 5), "NONE", "clamps to [-128, 127]"),
        ((0.1, -100), (0.1, -128), "RELU", "after the QUANTIZE is [-128, 99]"),
    ],
)
def test_what_would_change_integers_stays(out, requant, act, words):
    _, _, report = optimize_quantized(layer_net("CONV_2D", out, requant, act).recipe(), [PASS], {"QUANTIZE": 1})
    assert any("QUANTIZE after CONV_2D kept" in r and words in r for r in reasons(report)), reasons(report)


def test_taking_over_another_scale_as_tico_does_changes_integers_in_litert():
    """Why another scale is refused: the conv writing the QUANTIZE's scale itself is off by a step."""
    recipe = layer_net("CONV_2D", (0.1, 0), (0.13, 0), "NONE").recipe()
    original, folded = build(recipe), build(recipe)
    graph = folded.graphs[0]
    quantize = next(op for op in graph.ops if op.kind == "QUANTIZE")
    conv = quantize.inputs[0].producer
    graph.remove_op(quantize)
    graph.set_output(conv, 0, quantize.outputs[0])
    differ = 0
    for seed in range(4):
        xs = quant_inputs(original, seed)
        differ += int(np.count_nonzero(litert.run(original, xs)[0] != litert.run(folded, xs)[0]))
    assert differ > 0
