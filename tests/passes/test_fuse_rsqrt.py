"""fuse_rsqrt: 1 / SQRT(x) becomes RSQRT(x), bit for bit in LiteRT and onert; a numerator other than
1, a fused activation on the DIV, a SQRT read elsewhere keep it (the latter two say why)."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, build_copy, inputs_for
from bnfold.values import litert
from decoder_models import CIRCLE, TFLITE, assert_equal_in_runtime, optimized, reasons, run_in

PASS = "fuse_rsqrt"
SHAPE = [2, 7, 3]


def net(one=1.0, act="NONE", observed=False) -> Net:
    n = Net(seed=13)
    x = n.input("x", SHAPE)
    v = n.op("EXP", [x], "v", SHAPE)  # > 0
    s = n.op("SQRT", [v], "root", SHAPE)
    n.outputs = [n.op("DIV", [n.const("one", [], values=[one]), s], "y", SHAPE, fused_activation_function=act)]
    n.outputs += [s] if observed else []
    return n


@pytest.mark.parametrize("fmt", [TFLITE, CIRCLE])
def test_one_over_sqrt_becomes_rsqrt_bit_for_bit(fmt):
    original, model, report = optimized(net(), [PASS], fmt=fmt)
    assert model.op_counts() == {"EXP": 1, "RSQRT": 1}
    xs = inputs_for(original)
    assert np.array_equal(run_in(original, xs)[0], run_in(model, xs)[0])
    assert_equal_in_runtime(original, model)


def test_another_numerator_is_not_taken():
    _, model, report = optimized(net(one=2.0), [PASS], fmt=TFLITE)
    assert model.op_counts()["DIV"] == 1 and not report["folds"] and not reasons(report)


@pytest.mark.parametrize(
    "change, why",
    [
        (dict(act="RELU6"), "the DIV's fused RELU6 would be lost"),
        (dict(observed=True), "the SQRT's output is read elsewhere or is a graph output"),
    ],
)
def test_what_keeps_it_is_reported(change, why):
    _, model, report = optimized(net(**change), [PASS], fmt=TFLITE)
    assert model.op_counts()["DIV"] == 1
    assert reasons(report) == [f"1 / SQRT stays: {why}"]


def test_the_runtimes_compute_rsqrt_as_one_over_sqrt():
    """The exactness argument: LiteRT's RSQRT equals 1 / sqrt bit for bit on 10^5 values over 80 octaves."""
    n = Net()
    n.input("x", [100000])
    n.op("RSQRT", ["x"], "y", [100000])
    x = np.exp2(np.random.default_rng(0).uniform(-40, 40, 100000)).astype(np.float32)
    got = litert.run(build_copy(n.model()), [x])[0]
    assert np.array_equal(got, np.float32(1) / np.sqrt(x))
