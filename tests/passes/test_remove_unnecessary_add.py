"""remove_unnecessary_add: an ADD of a constant zero goes (either side, any broadcast that does not
grow x); a non-zero constant, a fused activation or a growing broadcast keeps it."""

from __future__ import annotations

import pytest

from bn_models import Net, optimize_and_compare

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
    "case",
    [
        dict(zero_shape=[5], values=[0.0, 0.0, 1e-30, 0.0, 0.0]),
        dict(zero_shape=[5], act="RELU"),
        dict(zero_shape=[2, 3, 7, 5], out_shape=[2, 3, 7, 5]),
    ],
)
def test_add_that_changes_something_stays(case):
    optimize_and_compare(add_net(**case).recipe(), [PASS], {"ADD": 1})


@pytest.mark.parametrize("read_elsewhere", [False, True])
def test_add_of_zero_between_the_outside_and_the_outside_stays_with_a_reason(read_elsewhere):
    """y = x + 0 with y a graph output: only x's producer could write y; a graph input x has none,
    and an x read elsewhere must keep its own values. The ADD stays, and the report says why."""
    n = Net()
    n.input("x", SHAPE)
    x = n.op("EXP", ["x"], "h", SHAPE) if read_elsewhere else "x"
    a = n.op("ADD", [x, n.const("z", [5], values=[0.0] * 5)], "a", SHAPE)
    n.outputs = [a] + ([n.op("TANH", [x], "t", SHAPE)] if read_elsewhere else [])
    _, report = optimize_and_compare(n.recipe(), [PASS], {"ADD": 1})
    (refusal,) = report.not_folded
    assert ("read or seen elsewhere" if read_elsewhere else "has no producer") in refusal["reason"]
