"""fold_quantize: a QUANTIZE of float32 weights to int8 (PT2E's weights -> QUANTIZE -> DEQUANTIZE)
becomes the int8 constant, bit for bit what LiteRT computed (builtin kernels and XNNPACK); with
fold_quantized_weight_layout the TRANSPOSE after the DEQUANTIZE goes too. A value at a half step,
where kernels round apart, or an int16 QUANTIZE stays with the reason; a half step both of whose
neighbours clamp alike (PT2E's largest weight at 127.5 steps) does not stop it."""

from __future__ import annotations

import numpy as np
import pytest

from quant_models import QNet, optimize_quantized, reasons

PASS = "fold_quantize"
SCALES = [0.011, 0.02, 0.013, 0.031]


def pt2e_net(weights: np.ndarray | None = None, dtype: str = "INT8") -> QNet:
    """x [1,5,6,3] -> CONV_2D whose weights are float32 OIHW [4,3,2,2] -> QUANTIZE (per channel
    along 0) -> DEQUANTIZE -> TRANSPOSE(0,2,3,1) to OHWI, as litert-torch writes a PT2E model."""
    n = QNet()
    n.input("x", [1, 5, 6, 3])
    if weights is None:
        weights = np.random.default_rng(4).uniform(-1, 1, [4, 3, 2, 2])
    n.const("w", [4, 3, 2, 2], values=[float(v) for v in np.asarray(weights, np.float32).reshape(-1)])
    zeros = [0] * 4
    n.op("QUANTIZE", ["w"], n.q("wq", [4, 3, 2, 2], dtype, SCALES, zeros, 0), [4, 3, 2, 2])
    n.op("DEQUANTIZE", ["wq"], "wf", [4, 3, 2, 2])
    n.op("TRANSPOSE", ["wf", n.ints("p", [0, 2, 3, 1])], "wt", [4, 2, 2, 3])
    conv = dict(padding="VALID", stride_w=1, stride_h=1)
    n.outputs = [n.op("CONV_2D", ["x", "wt", n.const("b", [4])], "y", [1, 4, 5, 4], **conv)]
    return n


def test_quantized_weights_are_stored_and_their_transpose_goes():
    counts = {"QUANTIZE": 0, "DEQUANTIZE": 1, "TRANSPOSE": 0}
    _, model, report = optimize_quantized(
        pt2e_net().recipe(), [PASS, "fold_quantized_weight_layout"], counts, float_kernels_may_change=True
    )
    assert [f["pass"] for f in report.folds] == [PASS, "fold_quantized_weight_layout"]
    [w] = [t for t in model.graphs[0].tensors if t.dtype == "INT8" and t.is_const]
    assert w.shape == (4, 2, 2, 3) and w.quantization.quantizedDimension == 0


def test_the_folded_integers_are_what_litert_computes():
    """The QUANTIZE alone (its DEQUANTIZE reads a constant then), bit for bit in both kernel sets."""
    optimize_quantized(pt2e_net().recipe(), [PASS], {"QUANTIZE": 0, "TRANSPOSE": 1})


def with_value(steps: float) -> np.ndarray:
    weights = np.random.default_rng(4).uniform(-1, 1, [4, 3, 2, 2])
    weights[1, 2, 0, 1] = steps * SCALES[1]
    return weights


@pytest.mark.parametrize("steps", [-7.5, 2.5, -0.5, 126.5])
def test_a_value_at_a_half_step_stays(steps):
    _, _, report = optimize_quantized(pt2e_net(with_value(steps)).recipe(), [PASS], {"QUANTIZE": 1})
    assert any("1 of its values lie at a half step" in r for r in reasons(report)), reasons(report)


def test_a_half_step_beyond_the_range_folds():
    optimize_quantized(pt2e_net(with_value(127.5)).recipe(), [PASS], {"QUANTIZE": 0})


def test_int16_stays():
    _, _, report = optimize_quantized(pt2e_net(dtype="INT16").recipe(), [PASS], {"QUANTIZE": 1}, exact=False)
    assert any("only 8-bit quantization is folded" in r for r in reasons(report)), reasons(report)
