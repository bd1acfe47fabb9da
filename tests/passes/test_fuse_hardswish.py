"""fuse_hardswish: every spelling of x·relu6(x+3)/6 becomes one HARD_SWISH with the same values in
LiteRT; near misses (another constant, another multiplicand, an intermediate seen elsewhere, an
activation on the product) are left alone."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, chain, conv2d, mul_add, optimize_and_compare
from bnfold.passes import fuse_hardswish

PASS = "fuse_hardswish"
SHAPE = [1, 5, 7, 6]
GONE = {"HARD_SWISH": 1, "ADD": 0, "RELU6": 0, "MUL": 0, "DIV": 0}


def _hardswish(n: Net, x: str, form: str, *, three=3.0, six=6.0, other: str | None = None, act="NONE") -> str:
    """x -> the decomposition `form` -> 'y'; `other` multiplies instead of x (a gate, not a swish)."""
    c3 = n.const("three", [], values=[three])
    scale = (
        n.const("six", [], values=[six]) if "div" in form else n.const("sixth", [], values=[float(np.float32(1 / six))])
    )
    plus3 = [c3, x] if form.endswith("_const_first") else [x, c3]
    if "relu6_op" in form:
        r = n.op("RELU6", [n.op("ADD", plus3, "plus3", SHAPE)], "r", SHAPE)
    else:
        r = n.op("ADD", plus3, "r", SHAPE, fused_activation_function="RELU6")
    m = other or x
    if form.startswith("gate"):  # (relu6(x + 3) / 6) · x
        h = n.op("DIV", [r, scale], "h", SHAPE) if "div" in form else n.op("MUL", [scale, r], "h", SHAPE)
        return n.op("MUL", [m, h], "y", SHAPE, fused_activation_function=act)
    p = n.op("MUL", [r, m], "p", SHAPE)  # (relu6(x + 3) · x) / 6
    return n.op("DIV" if "div" in form else "MUL", [p, scale], "y", SHAPE, fused_activation_function=act)


def _net(form: str, **kw) -> Net:
    n = Net()
    n.outputs = [_hardswish(n, n.input("x", SHAPE), form, **kw)]
    return n


FORMS = ["product_div", "product_mul", "product_div_relu6_op", "gate_div", "gate_mul", "product_div_const_first"]


@pytest.mark.parametrize("form", FORMS)
def test_every_form_becomes_one_hard_swish(form):
    model, report = optimize_and_compare(_net(form).recipe(), [PASS], GONE)
    [op] = model.graphs[0].ops
    assert op.inputs[0].name == "x" and op.outputs[0].name == "y"
    [fold] = report.folds
    assert fold["pass"] == PASS and len(fold["removed"]) == (4 if "relu6_op" in form else 3)


def test_after_a_batch_norm_everything_folds():
    """TICO's conv -> BN -> hardswish: the hard swish goes first, then the BN folds into the conv
    (its output has two readers in the decomposition, which would stop the fold)."""
    n, y = conv2d(channels=6, in_shape=(1, 5, 7, 3))
    n.outputs = [_hardswish(n, chain(n, y, mul_add()), "product_div")]
    model, _ = optimize_and_compare(n.recipe(), None, {"CONV_2D": 1, **GONE})
    assert [op.kind for op in model.graphs[0].ops] == ["CONV_2D", "HARD_SWISH"]


def test_values_agree_with_the_kernel_far_from_zero():
    """LiteRT's HARD_SWISH against the decomposition on large inputs (|x| ~ 100): the difference
    is float rounding, within the check's rtol/atol 1e-5 of the largest output."""
    from bnfold.recipe.chef import build
    from bnfold.values import litert

    original, fused = build(_net("product_div").recipe()), build(_net("product_div").recipe())
    fuse_hardswish.run(fused.graphs[0])
    x = np.random.default_rng(1).normal(0, 100, SHAPE).astype(np.float32)
    for resolver in ("plain", "default"):
        [want], [have] = litert.run(original, [x], resolver=resolver), litert.run(fused, [x], resolver=resolver)
        assert np.max(np.abs(have - want)) <= 1e-5 * np.max(np.abs(want))


@pytest.mark.parametrize(
    "case, kw",
    [
        ("add_2_9", {"three": 2.9}),
        ("scale_5", {"six": 5.0}),
        ("relu_not_relu6", {}),
        ("gate_of_another_tensor", {}),  # z · relu6(x + 3) / 6: a hard-sigmoid gate (squeeze-excite), no builtin
    ],
)
def test_near_misses_are_left_alone(case, kw):
    n = Net()
    x = n.input("x", SHAPE)
    other = n.input("z", SHAPE) if case == "gate_of_another_tensor" else None
    n.outputs = [_hardswish(n, x, "gate_div" if other else "product_div", other=other, **kw)]
    if case == "relu_not_relu6":
        n.operations[0]["options"]["fused_activation_function"] = "RELU"
    model, report = optimize_and_compare(n.recipe(), [PASS], {"HARD_SWISH": 0, "ADD": 1, "MUL": 1, "DIV": 1})
    assert not report.folds


def test_an_activation_on_the_product_is_refused_with_a_reason():
    n = _net("product_div", act="RELU")
    model, _ = optimize_and_compare(n.recipe(), [PASS], {"HARD_SWISH": 0, "ADD": 1, "MUL": 1, "DIV": 1})
    result = fuse_hardswish.run(model.graphs[0])
    assert not result.changed and "has a fused RELU" in result.skips[0]["reason"]


@pytest.mark.parametrize("seen", ["r", "p"])
def test_an_intermediate_that_is_a_graph_output_stays(seen):
    n = _net("product_div")
    n.outputs.append(seen)
    model, report = optimize_and_compare(n.recipe(), [PASS], {"HARD_SWISH": 0, "ADD": 1, "MUL": 1, "DIV": 1})
    assert not report.folds
