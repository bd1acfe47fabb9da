"""remove_unnecessary_mul: a MUL by ones (either side, any broadcast that does not grow x) goes, exact in
LiteRT; a constant one ulp from 1, a fused activation and a growing broadcast keep it (the last two
say why)."""

from __future__ import annotations

import numpy as np
import pytest

from decoder_models import TFLITE, assert_equal_in_runtime, by_constant_net, optimized, reasons

PASS = "remove_unnecessary_mul"
KIND = "MUL"


@pytest.mark.parametrize("ones_shape", [(6,), (1,), (3, 4, 6), (4, 1)])
def test_an_op_by_ones_goes(ones_shape):
    original, model, report = optimized(by_constant_net(KIND, ones_shape), [PASS], fmt=TFLITE)
    assert model.op_counts() == {"EXP": 1, "TANH": 1}
    assert_equal_in_runtime(original, model)


def test_one_ulp_from_one_is_not_one():
    value = float(np.nextafter(np.float32(1), np.float32(2)))
    _, model, report = optimized(by_constant_net(KIND, value=value), [PASS], fmt=TFLITE)
    assert model.op_counts()[KIND] == 1 and not report["folds"] and not reasons(report)


@pytest.mark.parametrize(
    "change, why",
    [
        (dict(act="RELU"), "its fused RELU changes values"),
        (dict(ones_shape=(2, 3, 4, 6)), "the constant broadcasts x [3, 4, 6] to [2, 3, 4, 6]"),
    ],
)
def test_what_keeps_it_is_reported(change, why):
    _, model, report = optimized(by_constant_net(KIND, **change), [PASS], fmt=TFLITE)
    assert model.op_counts()[KIND] == 1
    assert reasons(report) == [f"a {KIND} by ones stays: {why}"]


def test_ones_on_either_side():
    _, model, _ = optimized(by_constant_net(KIND, ones_first=True), [PASS], fmt=TFLITE)
    assert model.op_counts() == {"EXP": 1, "TANH": 1}
