"""fold_quantized_weight_layout: int8 weights -> DEQUANTIZE -> TRANSPOSE / RESHAPE -> layer become the
moved integers -> DEQUANTIZE -> layer, the per-channel axis moved with them, bit for bit in LiteRT's
builtin kernels (XNNPACK then takes the float layer, whose weights are now constant: float32
rounding there);
a RESHAPE that merges the channel axis, a DEQUANTIZE read elsewhere or a model output stay."""

from __future__ import annotations

import numpy as np
import pytest

from quant_models import QNet, optimize_quantized, reasons

PASS = "fold_quantized_weight_layout"
SCALES = [0.01, 0.02, 0.03, 0.04]


def conv_net(axis: int = 3, per_channel: bool = True, share: bool = False, zero: int = 0) -> QNet:
    """x [1,5,6,3] -> CONV_2D with weights int8 HWIO [2,2,3,4] (per channel along `axis`) ->
    DEQUANTIZE -> TRANSPOSE(3,0,1,2) to OHWI."""
    n = QNet()
    n.input("x", [1, 5, 6, 3])
    w_shape = [2, 2, 3, 4]
    scales = [SCALES[c % 4] * (1 + c) for c in range(w_shape[axis])] if per_channel else [0.02]
    values = np.random.default_rng(0).integers(-127, 128, w_shape)
    n.qconst("w", values, "INT8", scales, [zero] * len(scales), axis if per_channel else 0)
    n.op("DEQUANTIZE", ["w"], "wf", w_shape)
    n.op("TRANSPOSE", ["wf", n.ints("p", [3, 0, 1, 2])], "wt", [4, 2, 2, 3])
    conv = dict(padding="VALID", stride_w=1, stride_h=1)
    n.outputs = [n.op("CONV_2D", ["x", "wt", n.const("b", [4])], "y", [1, 4, 5, 4], **conv)]
    if share:
        n.outputs.append(n.op("TANH", ["wf"], "other", w_shape))
    return n


@pytest.mark.parametrize("per_channel", [True, False])
def test_transposed_weights_are_stored_moved(per_channel):
    _, model, _ = optimize_quantized(
        conv_net(per_channel=per_channel).recipe(),
        [PASS],
        {"TRANSPOSE": 0, "DEQUANTIZE": 1, "CONV_2D": 1},
        float_kernels_may_change=True,
    )
    [w] = [t for t in model.graphs[0].tensors if t.dtype == "INT8"]
    assert w.shape == (4, 2, 2, 3)
    if per_channel:
        assert w.quantization.quantizedDimension == 0


def fc_net(shape, channel_axis: int) -> QNet:
    """x [3, 12] -> FULLY_CONNECTED with weights int8 `shape` (per channel along `channel_axis`)
    -> DEQUANTIZE -> RESHAPE to [4, 12]."""
    n = QNet()
    n.input("x", [3, 12])
    scales = [0.01 * (1 + c) for c in range(shape[channel_axis])]
    values = np.random.default_rng(1).integers(-127, 128, shape)
    n.qconst("w", values, "INT8", scales, [0] * len(scales), channel_axis)
    n.op("DEQUANTIZE", ["w"], "wf", shape)
    n.op("RESHAPE", ["wf", n.ints("s", [4, 12])], "wr", [4, 12], new_shape=[4, 12])
    n.outputs = [n.op("FULLY_CONNECTED", ["x", "wr", n.const("b", [4])], "y", [3, 4])]
    return n


def test_a_reshape_keeping_the_channel_axis_folds():
    _, model, _ = optimize_quantized(
        fc_net([4, 3, 2, 2], 0).recipe(), [PASS], {"RESHAPE": 0, "DEQUANTIZE": 1}, float_kernels_may_change=True
    )
    [w] = [t for t in model.graphs[0].tensors if t.dtype == "INT8"]
    assert w.shape == (4, 12) and w.quantization.quantizedDimension == 0


def test_a_reshape_merging_the_channel_axis_stays():
    _, _, report = optimize_quantized(fc_net([4, 3, 2, 2], 1).recipe(), [PASS], {"RESHAPE": 1})
    assert any("merges or splits" in r and "channel axis 1" in r for r in reasons(report)), reasons(report)


def test_a_dequantize_read_elsewhere_stays():
    _, _, report = optimize_quantized(conv_net(share=True).recipe(), [PASS], {"TRANSPOSE": 1})
    assert any("read by other ops too" in r for r in reasons(report)), reasons(report)


def pt2e_net(tie_steps: float | None = None, other_reader: bool = False, per_channel: bool = True) -> QNet:
    """x [1,5,6,3] -> CONV_2D whose weights are float32 OIHW [4,3,2,2] -> QUANTIZE (per channel
    along 0) -> DEQUANTIZE -> TRANSPOSE(0,2,3,1), as litert-torch writes a PT2E model; one weight
    at `tie_steps` (a half step: fold_quantize leaves the QUANTIZE, kernels round it apart)."""
    weights = np.random.default_rng(4).uniform(-1, 1, [4, 3, 2, 2])
    if tie_steps is not None:
        weights[1, 2, 0, 1] = tie_steps * SCALES[1]
    n = QNet()
    n.input("x", [1, 5, 6, 3])
    n.const("w", [4, 3, 2, 2], values=[float(v) for v in weights.astype(np.float32).reshape(-1)])
    scales = SCALES if per_channel else [SCALES[1]]
    n.op("QUANTIZE", ["w"], n.q("wq", [4, 3, 2, 2], "INT8", scales, [0] * len(scales), 0), [4, 3, 2, 2])
    n.op("DEQUANTIZE", ["wq"], "wf", [4, 3, 2, 2])
    n.op("TRANSPOSE", ["wf", n.ints("p", [0, 2, 3, 1])], "wt", [4, 2, 2, 3])
    conv = dict(padding="VALID", stride_w=1, stride_h=1)
    n.outputs = [n.op("CONV_2D", ["x", "wt", n.const("b", [4])], "y", [1, 4, 5, 4], **conv)]
    if other_reader:
        n.outputs.append(
            n.op(
                "MAX_POOL_2D",
                ["wq"],
                n.q("pooled", [4, 2, 1, 2], "INT8", 0.02),
                [4, 2, 1, 2],
                padding="VALID",
                stride_w=1,
                stride_h=1,
                filter_width=2,
                filter_height=2,
            )
        )
    return n


@pytest.mark.parametrize("steps", [-7.5, 2.5, -0.5])
def test_a_quantize_left_at_a_half_step_has_its_float_weights_moved(steps):
    """fold_quantize keeps the QUANTIZE (builtin kernels round the half step away from zero,
    XNNPACK to even); the float32 weights are stored OHWI before it, and each kernel set still
    computes what it computed, bit for bit."""
    counts = {"QUANTIZE": 1, "DEQUANTIZE": 1, "TRANSPOSE": 0, "CONV_2D": 1}
    _, model, report = optimize_quantized(pt2e_net(steps).recipe(), ["fold_quantize", PASS], counts)
    assert [f["pass"] for f in report.folds] == [PASS]
    [quantize] = [op for op in model.graphs[0].ops if op.kind == "QUANTIZE"]
    assert quantize.inputs[0].shape == (4, 2, 2, 3) and quantize.inputs[0].dtype == "FLOAT32"
    assert quantize.outputs[0].quantization.quantizedDimension == 0


def test_a_quantized_weight_read_elsewhere_stays():
    _, _, report = optimize_quantized(
        pt2e_net(2.5, other_reader=True).recipe(), ["fold_quantize", PASS], {"TRANSPOSE": 1, "QUANTIZE": 1}
    )
    assert any("'wq' is read by other ops too" in r for r in reasons(report)), reasons(report)


def test_a_per_tensor_quantize_of_float_weights_stays():
    """LiteRT computes a per-tensor QUANTIZE from float by where an element lies: moved weights could
    round otherwise (ir/runtimes.py's BY_POSITION), so the TRANSPOSE stays, with the reason."""
    _, _, report = optimize_quantized(
        pt2e_net(2.5, per_channel=False).recipe(), ["fold_quantize", PASS], {"TRANSPOSE": 1, "QUANTIZE": 1}
    )
    assert any("compute it by where an element lies" in r for r in reasons(report)), reasons(report)


def test_a_per_tensor_dequantize_of_a_nonzero_zero_point_stays():
    """LiteRT dequantizes per-tensor int8 with a nonzero zero point by where an element lies (zero
    point 0 alike everywhere: the per-tensor case above folds), so those integers are not moved."""
    _, _, report = optimize_quantized(conv_net(per_channel=False, zero=5).recipe(), [PASS], {"TRANSPOSE": 1})
    assert any("DEQUANTIZE from INT8 to FLOAT32: litert compute it by where" in r for r in reasons(report)), reasons(
        report
    )
