"""transform_min_relu_to_relu6: RELU(MINIMUM(x, 6)) becomes one RELU6 computing the same values;
another bound, a broadcasting bound and a MINIMUM someone else reads stay."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "transform_min_relu_to_relu6"
SHAPE = [3, 2, 5]


def min_relu_net(high=6.0, *, const_first=False, bound_shape=(), other_reader=False) -> Net:
    n = Net()
    n.input("x", SHAPE)
    h = n.op("MUL", ["x", n.const("s", [5], low=2.0, high=6.0)], "h", SHAPE)
    c = n.const("bound", list(bound_shape), values=[high])
    out_shape = [1] * (len(bound_shape) - len(SHAPE)) + SHAPE
    m = n.op("MINIMUM", [c, h] if const_first else [h, c], "m", out_shape)
    n.outputs = [n.op("RELU", [m], "y", out_shape)]
    if other_reader:
        n.outputs.append(n.op("TANH", [m], "t", out_shape))
    return n


@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize("bound_shape", [[], [1], [1, 1]])
def test_relu_of_minimum_six_becomes_relu6(const_first, bound_shape):
    model, report = optimize_and_compare(
        min_relu_net(const_first=const_first, bound_shape=bound_shape).recipe(),
        [PASS],
        {"RELU6": 1, "MINIMUM": 0, "RELU": 0},
    )
    relu6 = next(op for op in model.graphs[0].ops if op.kind == "RELU6")
    assert relu6.inputs[0].name == "h" and relu6.outputs[0].name == "y" and len(report.folds) == 1


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(high=5.5), None),  # no clamp at 6: no candidate
        (dict(bound_shape=[1, 1, 1, 1]), "'m' is [1, 3, 2, 5] but 'h' is [3, 2, 5]: a constant broadcasts it"),
        (dict(other_reader=True), "'m' has another reader than the RELU, so it must stay computed"),
    ],
)
def test_other_forms_stay(case, reason):
    _, report = optimize_and_compare(min_relu_net(**case).recipe(), [PASS], {"RELU6": 0, "MINIMUM": 1, "RELU": 1})
    assert_said(report, PASS, reason)
