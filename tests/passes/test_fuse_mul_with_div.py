"""fuse_mul_with_div: d / (m·x) becomes (d/m) / x and (m·x) / d becomes x · (m/d), values within
float rounding; per-channel constants, a zero divisor, activations and a product read elsewhere
stay."""

from __future__ import annotations

import math

import pytest

from bn_models import Net, assert_said, assert_values_agree, optimize_and_compare, without_options
from bnfold import api
from bnfold.recipe.chef import build

PASS = "fuse_mul_with_div"
SHAPE = [3, 5, 2]


def mul_div_net(m=1.25, d=-3.0, *, numerator=True, mul_const_first=False, m_shape=(1,), act="NONE", other=False) -> Net:
    n = Net()
    n.input("x", SHAPE)
    mc = n.const("m", list(m_shape), values=[m] * math.prod(m_shape))
    p = n.op("MUL", [mc, "x"] if mul_const_first else ["x", mc], "p", SHAPE)
    dc = n.const("d", [], values=[d])
    n.outputs = [n.op("DIV", [dc, p] if numerator else [p, dc], "y", SHAPE, fused_activation_function=act)]
    if other:
        n.outputs.append(n.op("TANH", [p], "t", SHAPE))
    return n


@pytest.mark.parametrize("mul_const_first", [False, True])
def test_constant_over_product_becomes_one_div(mul_const_first):
    model, report = optimize_and_compare(
        mul_div_net(mul_const_first=mul_const_first).recipe(), [PASS], {"DIV": 1, "MUL": 0}
    )
    div = next(op for op in model.graphs[0].ops if op.kind == "DIV")
    assert div.inputs[1].name == "x" and div.inputs[0].data.item() == pytest.approx(-3.0 / 1.25)
    assert report.folds[0]["constant"] == pytest.approx(-2.4)


def test_product_over_constant_becomes_one_mul():
    model, _ = optimize_and_compare(mul_div_net(numerator=False).recipe(), [PASS], {"DIV": 0, "MUL": 1})
    mul = next(op for op in model.graphs[0].ops if op.kind == "MUL")
    assert mul.inputs[0].name == "x" and mul.inputs[1].data.item() == pytest.approx(1.25 / -3.0)


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(m_shape=(2,)), None),  # per-channel, not a scalar: no candidate
        (dict(m=0.0), "the MUL is by zero"),  # d / (0·x): no finite constant d / 0 stands for it
        (dict(act="RELU"), "the DIV's fused RELU is not the MUL's"),
        (dict(other=True), "'p' has another reader than the DIV, so it must stay computed"),
    ],
)
def test_other_forms_stay(case, reason):
    _, report = optimize_and_compare(mul_div_net(**case).recipe(), [PASS], {"DIV": 1, "MUL": 1})
    assert_said(report, PASS, reason)


def test_zero_divisor_stays():
    _, report = optimize_and_compare(mul_div_net(d=0.0, numerator=False).recipe(), [PASS], {"DIV": 1, "MUL": 1})
    assert_said(report, PASS, "the DIV is by zero")


@pytest.mark.parametrize("numerator", [True, False])
def test_ops_without_options_tables_fuse(numerator):
    """A file may give MUL and DIV no options table: the op made gets its kind's table, and the
    values stay (mypy found options.copy() called on None: exit 3)."""
    recipe = mul_div_net(numerator=numerator).recipe()
    model = without_options(recipe, {"MUL", "DIV"})
    assert [op.options for op in model.graphs[0].ops] == [None, None]
    report = api.apply_passes(model, [PASS])
    assert len(report.folds) == 1 and len(model.graphs[0].ops) == 1
    assert_values_agree(build(recipe), model)
