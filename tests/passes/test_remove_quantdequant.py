"""remove_quantdequant: DEQUANTIZE -> QUANTIZE back to the same type, scale and zero point goes, and
so does QUANTIZE -> DEQUANTIZE of a tensor a DEQUANTIZE of those parameters made; both are checked
bit for bit in LiteRT. Other parameters, and a QUANTIZE -> DEQUANTIZE of an arbitrary float (ONE
removes it; it rounds), stay with the reason."""

from __future__ import annotations

import pytest

from quant_models import QNet, optimize_quantized, reasons

PASS = "remove_quantdequant"
SHAPE = [2, 5, 7, 3]


def dequantize_quantize_net(dtype="INT8", zero=3, *, second=None, output_is_pair=False) -> QNet:
    """x (float) -> QUANTIZE (dtype, 0.05, zero) -> q -> DEQUANTIZE -> f -> QUANTIZE (second or the
    same) -> q2 [-> MAX_POOL (q2's parameters) -> y]."""
    n = QNet()
    n.input("x", SHAPE)
    n.op("QUANTIZE", ["x"], n.q("q", SHAPE, dtype, 0.05, zero), SHAPE)
    n.op("DEQUANTIZE", ["q"], "f", SHAPE)
    dtype2, scale2, zero2 = second or (dtype, 0.05, zero)
    n.op("QUANTIZE", ["f"], n.q("q2", SHAPE, dtype2, scale2, zero2), SHAPE)
    if output_is_pair:
        n.outputs = ["q2"]
        return n
    pool = dict(padding="VALID", stride_w=1, stride_h=1, filter_width=2, filter_height=2)
    n.outputs = [n.op("MAX_POOL_2D", ["q2"], n.q("y", [2, 4, 6, 3], dtype2, scale2, zero2), [2, 4, 6, 3], **pool)]
    return n


@pytest.mark.parametrize("dtype,zero", [("INT8", 3), ("INT8", -128), ("UINT8", 128), ("INT16", 0)])
def test_dequantize_quantize_with_equal_parameters_goes(dtype, zero):
    optimize_quantized(dequantize_quantize_net(dtype, zero).recipe(), [PASS], {"QUANTIZE": 1, "DEQUANTIZE": 0})


def test_a_model_output_is_written_by_the_op_before_the_pair():
    _, model, _ = optimize_quantized(
        dequantize_quantize_net(output_is_pair=True).recipe(), [PASS], {"QUANTIZE": 1, "DEQUANTIZE": 0}
    )
    assert [t.name for t in model.graphs[0].outputs] == ["q2"]


@pytest.mark.parametrize(
    "second,words",
    [(("INT8", 0.1, 3), "scale 0.1"), (("INT8", 0.05, 4), "zero point 4"), (("INT16", 0.05, 0), "INT16")],
)
def test_other_parameters_keep_the_pair(second, words):
    _, _, report = optimize_quantized(
        dequantize_quantize_net(second=second).recipe(), [PASS], {"QUANTIZE": 2, "DEQUANTIZE": 1}
    )
    assert any("DEQUANTIZE -> QUANTIZE kept" in r and words in r for r in reasons(report)), reasons(report)


def quantize_dequantize_net(*, on_grid: bool) -> QNet:
    """x -> [QUANTIZE -> DEQUANTIZE ->] f -> QUANTIZE -> q2 -> DEQUANTIZE -> f2 -> TANH -> y."""
    n = QNet()
    n.input("x", SHAPE)
    f = "x"
    if on_grid:
        n.op("QUANTIZE", ["x"], n.q("q", SHAPE, "INT8", 0.05, 3), SHAPE)
        f = n.op("DEQUANTIZE", ["q"], "f", SHAPE)
    n.op("QUANTIZE", [f], n.q("q2", SHAPE, "INT8", 0.05, 3), SHAPE)
    n.op("DEQUANTIZE", ["q2"], "f2", SHAPE)
    n.outputs = [n.op("TANH", ["f2"], "y", SHAPE)]
    return n


def test_quantize_dequantize_of_a_dequantized_tensor_goes():
    optimize_quantized(quantize_dequantize_net(on_grid=True).recipe(), [PASS], {"QUANTIZE": 1, "DEQUANTIZE": 1})


def test_quantize_dequantize_of_any_float_stays_and_says_it_rounds():
    _, _, report = optimize_quantized(
        quantize_dequantize_net(on_grid=False).recipe(), [PASS], {"QUANTIZE": 1, "DEQUANTIZE": 1}
    )
    assert any("rounds its float input to the integer grid" in r for r in reasons(report)), reasons(report)


def test_a_model_output_after_the_pair_is_written_by_the_first_dequantize():
    n = QNet()
    n.input("x", SHAPE)
    n.op("QUANTIZE", ["x"], n.q("q", SHAPE, "INT8", 0.05, 3), SHAPE)
    n.op("DEQUANTIZE", ["q"], "f", SHAPE)
    n.op("QUANTIZE", ["f"], n.q("q2", SHAPE, "INT8", 0.05, 3), SHAPE)
    n.outputs = [n.op("DEQUANTIZE", ["q2"], "f2", SHAPE)]
    _, model, _ = optimize_quantized(n.recipe(), [PASS], {"QUANTIZE": 1, "DEQUANTIZE": 1})
    assert [t.name for t in model.graphs[0].outputs] == ["f2"]
