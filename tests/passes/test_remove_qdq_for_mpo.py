"""remove_qdq_for_mpo: after FULLY_CONNECTED (or BATCH_MATMUL), QUANTIZE -> DEQUANTIZE -> QUANTIZE ->
DEQUANTIZE whose second pair writes what the first wrote loses its first pair; bit for bit in
LiteRT. Two scales or two types (ONE's int16 then int8: ONE removes the pair anyway) or a moved
zero point keep it with the reason; after another op the pattern is not ONE's and is left alone."""

from __future__ import annotations

import pytest

from quant_models import QNet, optimize_quantized, reasons

PASS = "remove_qdq_for_mpo"


def mpo_net(first, second, *, layer="FULLY_CONNECTED") -> QNet:
    """x [3, 6] -> FC (float) or TANH -> h -> Q(first) -> DQ -> Q(second) -> DQ -> y [3, 4]."""
    n = QNet()
    n.input("x", [3, 6])
    if layer == "FULLY_CONNECTED":
        h = n.op("FULLY_CONNECTED", ["x", n.const("w", [4, 6]), n.const("b", [4])], "h", [3, 4])
    else:
        h = n.op("TANH", ["x"], "h", [3, 6])
    shape = n.shapes[h]
    n.op("QUANTIZE", [h], n.q("a", shape, *first), shape)
    n.op("DEQUANTIZE", ["a"], "fa", shape)
    n.op("QUANTIZE", ["fa"], n.q("b2", shape, *second), shape)
    n.outputs = [n.op("DEQUANTIZE", ["b2"], "y", shape)]
    return n


@pytest.mark.parametrize(
    "first,second",
    [(("INT8", 0.01, 2), ("INT8", 0.01, 2)), (("INT16", 0.01, 0), ("INT16", 0.01, 0))],
)
def test_first_pair_of_one_scale_goes(first, second):
    optimize_quantized(mpo_net(first, second).recipe(), [PASS], {"QUANTIZE": 1, "DEQUANTIZE": 1})


@pytest.mark.parametrize(
    "first,second,words",
    [
        (("INT16", 0.001, 0), ("INT8", 0.01, 0), "round twice"),
        (("INT16", 0.01, 0), ("INT8", 0.01, 0), "another kernel"),
        (("INT8", 0.01, 0), ("INT8", 0.01, 5), "clamps"),
    ],
)
def test_a_pair_that_would_change_values_stays(first, second, words):
    _, _, report = optimize_quantized(mpo_net(first, second).recipe(), [PASS], {"QUANTIZE": 2, "DEQUANTIZE": 2})
    assert any("first QUANTIZE/DEQUANTIZE pair kept" in r and words in r for r in reasons(report)), reasons(report)


def test_after_another_op_it_is_not_the_pattern():
    _, _, report = optimize_quantized(
        mpo_net(("INT16", 0.01, 0), ("INT8", 0.01, 0), layer="TANH").recipe(), [PASS], {"QUANTIZE": 2}
    )
    assert reasons(report) == []
