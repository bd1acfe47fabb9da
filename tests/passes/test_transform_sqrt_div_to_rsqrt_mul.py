"""transform_sqrt_div_to_rsqrt_mul: x / SQRT(v) becomes x · RSQRT(v) (the DIV's activation moving to the
MUL), equal up to float rounding in LiteRT and onert; a constant numerator (fuse_rsqrt's) is left, a
SQRT read elsewhere keeps the DIV and says why."""

from __future__ import annotations

import pytest

from bn_models import Net
from decoder_models import CIRCLE, TFLITE, assert_equal_in_runtime, optimized, reasons

PASS = "transform_sqrt_div_to_rsqrt_mul"
SHAPE = [1, 3, 5, 2]


def net(act="NONE", observed=False, numerator=None, root_shape=SHAPE) -> Net:
    n = Net(seed=17)
    x = n.input("x", SHAPE)
    w = n.input("w", root_shape)
    v = n.op("EXP", [w], "v", root_shape)
    s = n.op("SQRT", [v], "root", root_shape)
    top = x if numerator is None else n.const("c", [], values=[numerator])
    n.outputs = [n.op("DIV", [top, s], "y", SHAPE, fused_activation_function=act)]
    n.outputs += [s] if observed else []
    return n


@pytest.mark.parametrize("fmt", [TFLITE, CIRCLE])
@pytest.mark.parametrize("act, root_shape", [("NONE", SHAPE), ("RELU", SHAPE), ("NONE", [1, 3, 1, 1])])
def test_x_over_sqrt_becomes_x_times_rsqrt(fmt, act, root_shape):
    original, model, report = optimized(net(act, root_shape=root_shape), [PASS], fmt=fmt)
    assert model.op_counts() == {"EXP": 1, "RSQRT": 1, "MUL": 1}
    mul = next(op for op in model.graphs[0].ops if op.kind == "MUL")
    assert mul.fused_activation == act and mul.outputs[0].name == "y"
    assert_equal_in_runtime(original, model)


def test_a_constant_numerator_is_left_to_fuse_rsqrt():
    _, model, report = optimized(net(numerator=1.0), [PASS], fmt=TFLITE)
    assert model.op_counts()["DIV"] == 1 and not report["folds"] and not reasons(report)


def test_a_sqrt_read_elsewhere_keeps_the_div():
    _, model, report = optimized(net(observed=True), [PASS], fmt=TFLITE)
    assert model.op_counts()["DIV"] == 1
    assert reasons(report) == [
        "x / SQRT stays: the SQRT's output is read elsewhere or is a graph output (an RSQRT beside it would add an op)"
    ]
