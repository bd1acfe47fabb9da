"""The layout propagation on quantized graphs (issue 45's audit): int8 TRANSPOSEs around an int8 ADD
of a per-tensor constant cancel and the constant is permuted, an NCHW flatten into an int8
FULLY_CONNECTED whose weights are quantized per row moves into the weights' columns, both bit for
bit in LiteRT; a per-channel quantized constant is not permuted, and no transpose crosses a DEQUANTIZE or a QUANTIZE
of 8-bit integers, which LiteRT computes by position, nor an int8 MEAN whose axes it would move
(refused with the reason)."""

from __future__ import annotations

import numpy as np
import pytest

from quant_models import QNet, optimize_quantized

PASS = "remove_redundant_transpose"
NCHW, NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
X = [2, 5, 7, 3]
T = [2, 3, 5, 7]
Q = ("INT8", 0.05, -4)


def add_net(const_scales=(0.02,)) -> QNet:
    """x int8 [2,5,7,3] -> TRANSPOSE to NCHW -> ADD(int8 constant [1,3,1,1]) -> TRANSPOSE back -> y."""
    n = QNet()
    n.qinput("x", X, *Q)
    n.op("TRANSPOSE", ["x", n.ints("p", NCHW)], n.q("t", T, *Q), T)
    values = np.array([-50, 7, 90]).reshape(1, 3, 1, 1)
    axis = 1 if len(const_scales) > 1 else 0
    c = n.qconst("c", values, "INT8", list(const_scales), [0] * len(const_scales), axis)
    n.op("ADD", ["t", c], n.q("a", T, "INT8", 0.07, 3), T)
    n.outputs = [n.op("TRANSPOSE", ["a", n.ints("back", NHWC)], n.q("y", X, "INT8", 0.07, 3), X)]
    return n


def test_int8_transposes_cancel_around_an_add_of_a_per_tensor_constant():
    optimize_quantized(add_net().recipe(), [PASS], {"TRANSPOSE": 0, "ADD": 1})


def test_a_per_channel_constant_is_not_permuted():
    _, _, report = optimize_quantized(add_net((0.02, 0.03, 0.04)).recipe(), [PASS], {"TRANSPOSE": 2}, exact=False)
    assert any("quantized per channel" in t["reason"] for t in report.transposes), report.transposes


def flatten_fc_net(weight_axis: int) -> QNet:
    """x int8 [2,5,7,3] -> TRANSPOSE to NCHW -> RESHAPE [2, 105] -> FULLY_CONNECTED (int8 weights
    [4, 105], per row when weight_axis is 0) -> y."""
    n = QNet()
    n.qinput("x", X, *Q)
    n.op("TRANSPOSE", ["x", n.ints("p", NCHW)], n.q("t", T, *Q), T)
    n.op("RESHAPE", ["t", n.ints("s", [2, 105])], n.q("flat", [2, 105], *Q), [2, 105], new_shape=[2, 105])
    scales = [0.01, 0.015, 0.02, 0.025]
    w = n.qconst("w", np.random.default_rng(2).integers(-127, 128, [4, 105]), "INT8", scales, [0] * 4, weight_axis)
    b = n.qconst("b", np.array([10, -20, 30, -40]), "INT32", [0.05 * s for s in scales], [0] * 4, 0)
    n.outputs = [n.op("FULLY_CONNECTED", ["flat", w, b], n.q("y", [2, 4], "INT8", 0.3, 1), [2, 4])]
    return n


def test_an_nchw_flatten_moves_into_per_row_quantized_fc_columns():
    _, model, _ = optimize_quantized(flatten_fc_net(0).recipe(), [PASS], {"TRANSPOSE": 0})
    [w] = [t for t in model.graphs[0].tensors if t.dtype == "INT8" and t.is_const]
    assert w.quantization.quantizedDimension == 0


def requantize_net(through_float: bool, dtype: str = "INT8") -> QNet:
    """The layout fuzzer's seed 7, shrunk: x [2,3,5,1] -> TRANSPOSE(1,2,0,3) -> [DEQUANTIZE ->
    QUANTIZE | QUANTIZE] to scale 0.02 -> TRANSPOSE(2,0,1,3) back -> y: of 30 elements, 6 past
    LiteRT's vectorized blocks; values at half an output step (0.01 apart against 0.02)."""
    zero_in, zero_out = (94, 20) if dtype == "INT8" else (0, 0)
    n = QNet()
    n.qinput("x", [2, 3, 5, 1], dtype, 0.01, zero_in)
    n.op("TRANSPOSE", ["x", n.ints("p", [1, 2, 0, 3])], n.q("t", [3, 5, 2, 1], dtype, 0.01, zero_in), [3, 5, 2, 1])
    source = n.op("DEQUANTIZE", ["t"], "f", [3, 5, 2, 1]) if through_float else "t"
    n.op("QUANTIZE", [source], n.q("r", [3, 5, 2, 1], dtype, 0.02, zero_out), [3, 5, 2, 1])
    back = n.ints("back", [2, 0, 1, 3])
    n.outputs = [n.op("TRANSPOSE", ["r", back], n.q("y", [2, 3, 5, 1], dtype, 0.02, zero_out), [2, 3, 5, 1])]
    return n


@pytest.mark.parametrize("through_float", [True, False])
def test_no_transpose_crosses_an_8_bit_requantize_litert_computes_by_position(through_float):
    """LiteRT computes a DEQUANTIZE and a QUANTIZE to or from 8-bit integers by where an element lies:
    crossing one moved an element from the vectorized body to the scalar tail and changed a step
    (the layout fuzzer found both: seeds 7 and 1207); the transposes stay, with the reason."""
    _, _, report = optimize_quantized(requantize_net(through_float).recipe(), [PASS], {"TRANSPOSE": 2})
    assert any("compute it by where an element lies" in t["reason"] for t in report.transposes), report.transposes


def test_transposes_cancel_across_an_int16_requantize():
    """QUANTIZE int16 -> int16, which LiteRT computes alike at every position: they cancel."""
    net = requantize_net(through_float=False, dtype="INT16")
    optimize_quantized(net.recipe(), [PASS], {"TRANSPOSE": 0, "QUANTIZE": 1})


def test_no_transpose_crosses_an_int8_mean_whose_axes_it_would_move():
    """The layout fuzzer's seed 102: uint8 TRANSPOSE(0,3,2,1) -> MEAN over axes (2, 3): moved across,
    the MEAN reduces axes (1, 2), which LiteRT computes by another kernel path that rounds a step
    otherwise (ir/runtimes.py's BY_POSITION); the transpose stays, with the reason."""
    n = QNet()
    n.input("x", [1, 4, 3, 2])
    n.op("QUANTIZE", ["x"], n.q("q", [1, 4, 3, 2], "UINT8", 0.05, 219), [1, 4, 3, 2])
    n.op("TRANSPOSE", ["q", n.ints("p", [0, 3, 2, 1])], n.q("t", [1, 2, 3, 4], "UINT8", 0.05, 219), [1, 2, 3, 4])
    u8 = ("UINT8", 0.05, 219)
    n.op("MEAN", ["t", n.ints("axes", [2, 3])], n.q("m", [1, 2, 1, 1], *u8), [1, 2, 1, 1], keep_dims=True)
    n.outputs = [n.op("RESHAPE", ["m", n.ints("s", [1, 2])], n.q("y", [1, 2], *u8), [1, 2], new_shape=[1, 2])]
    _, _, report = optimize_quantized(n.recipe(), [PASS], {"TRANSPOSE": 1})
    assert any("by which axes it reduces" in t["reason"] for t in report.transposes), report.transposes
