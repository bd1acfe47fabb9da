"""transform_min_max_to_relu6: MINIMUM(6) and MAXIMUM(0), in either order and operand order,
become one RELU6 computing the same values; other bounds, a broadcasting bound and an
intermediate someone else reads stay."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "transform_min_max_to_relu6"
SHAPE = [2, 5, 3]


def clamp_net(first="MINIMUM", low=0.0, high=6.0, *, const_first=False, bound_shape=(), expose_middle=False) -> Net:
    """x -> MUL(s) -> h -> first(h, bound) -> m -> second(m, bound) -> y; s spreads h over [-12, 12]."""
    n = Net()
    n.input("x", SHAPE)
    h = n.op("MUL", ["x", n.const("s", [3], low=2.0, high=6.0)], "h", SHAPE)
    bounds = {"MINIMUM": high, "MAXIMUM": low}
    second = "MAXIMUM" if first == "MINIMUM" else "MINIMUM"
    x = h
    for i, kind in enumerate((first, second)):
        c = n.const(f"bound{i}", list(bound_shape), values=[bounds[kind]])
        out_shape = ([1] * (len(bound_shape) - len(SHAPE)) + SHAPE) if len(bound_shape) > len(SHAPE) else SHAPE
        x = n.op(kind, [c, x] if const_first else [x, c], "m" if i == 0 else "y", out_shape)
    n.outputs = ["y", "m"] if expose_middle else ["y"]
    return n


@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize("first", ["MINIMUM", "MAXIMUM"])
def test_clamp_to_zero_six_becomes_relu6(first, const_first):
    model, report = optimize_and_compare(
        clamp_net(first, const_first=const_first).recipe(), [PASS], {"RELU6": 1, "MINIMUM": 0, "MAXIMUM": 0, "MUL": 1}
    )
    relu6 = next(op for op in model.graphs[0].ops if op.kind == "RELU6")
    assert relu6.inputs[0].name == "h" and relu6.outputs[0].name == "y"
    assert [f["activation"] for f in report.folds] == ["RELU6"]


@pytest.mark.parametrize("bound_shape", [[1], [1, 1, 1]])
def test_one_element_bounds_of_any_rank_count(bound_shape):
    optimize_and_compare(clamp_net(bound_shape=bound_shape).recipe(), [PASS], {"RELU6": 1, "MINIMUM": 0})


@pytest.mark.parametrize("low, high", [(0.0, 5.0), (-1.0, 6.0), (0.0, 6.000001)])
def test_other_bounds_stay(low, high):
    recipe = clamp_net(low=low, high=high).recipe()
    _, report = optimize_and_compare(recipe, [PASS], {"RELU6": 0, "MINIMUM": 1, "MAXIMUM": 1})
    assert_said(report, PASS, None)  # no clamp to [0, 6]: no candidate


def test_bound_that_broadcasts_x_stays():
    _, report = optimize_and_compare(clamp_net(bound_shape=[1, 1, 1, 1]).recipe(), [PASS], {"RELU6": 0, "MINIMUM": 1})
    assert_said(report, PASS, "'m' is [1, 2, 5, 3] but 'h' is [2, 5, 3]: a constant broadcasts it")


def test_intermediate_seen_outside_stays():
    recipe = clamp_net(expose_middle=True).recipe()
    _, report = optimize_and_compare(recipe, [PASS], {"RELU6": 0, "MINIMUM": 1, "MAXIMUM": 1})
    assert_said(report, PASS, "'m' is a model output, so it must stay computed")
