"""remove_unnecessary_add: an ADD of a constant zero goes (either side, any broadcast that does not
grow x); a non-zero constant, a fused activation or a growing broadcast keeps it."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_unnecessary_add"
SHAPE = [3, 7, 5]


def add_net(zero_shape, values=None, *, zero_first=False, act="NONE", out_shape=SHAPE) -> Net:
    """x -> EXP -> h -> ADD(zeros) -> a -> TANH -> y."""
    n = Net()
    n.input("x", SHAPE)
    h = n.op("EXP", ["x"], "h", SHAPE)
    count = 1
    for d in zero_shape:
        count *= d
    z = n.const("z", zero_shape, values=values if values is not None else [0.0] * count)
    a = n.op("ADD", [z, h] if zero_first else [h, z], "a", out_shape, fused_activation_function=act)
    n.outputs = [n.op("TANH", [a], "y", out_shape)]
    return n


@pytest.mark.parametrize("zero_shape", [[5], [1], [3, 7, 5], [7, 1]])
@pytest.mark.parametrize("zero_first", [False, True])
def test_add_of_zero_goes(zero_shape, zero_first):
    optimize_and_compare(add_net(zero_shape, zero_first=zero_first).recipe(), [PASS], {"ADD": 0, "EXP": 1})


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(zero_shape=[5], values=[0.0, 0.0, 1e-30, 0.0, 0.0]), None),  # no zero: no candidate
        (dict(zero_shape=[5], act="RELU"), "its fused RELU changes the values"),
        (
            dict(zero_shape=[2, 3, 7, 5], out_shape=[2, 3, 7, 5]),
            "the zero [2, 3, 7, 5] makes 'a' another shape, type or quantization than 'h'",
        ),
    ],
)
def test_add_that_changes_something_stays(case, reason):
    _, report = optimize_and_compare(add_net(**case).recipe(), [PASS], {"ADD": 1})
    assert_said(report, PASS, reason)


def test_add_of_zero_from_a_graph_input_into_a_graph_output_stays_and_says_why():
    n = Net()
    n.input("x", SHAPE)
    n.outputs = [n.op("ADD", ["x", n.const("z", [5], values=[0.0] * 5)], "a", SHAPE)]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"ADD": 1})
    assert_said(report, PASS, "'a' is a model output, and 'x' is a graph input, a constant or read elsewhere")
