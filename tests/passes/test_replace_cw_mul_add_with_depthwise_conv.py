"""replace_cw_mul_add_with_depthwise_conv: a channel-wise chain no layer absorbs becomes one 1x1
DEPTHWISE_CONV_2D whose weights are the chain's scale and whose bias is its shift."""

import numpy as np
import pytest

from bn_models import FORMS, Net, chain, channel_shapes, conv2d, mul_add, optimize_and_compare

PASS = "replace_cw_mul_add_with_depthwise_conv"
REPLACED = {"DEPTHWISE_CONV_2D": 1, "MUL": 0, "ADD": 0, "SUB": 0, "DIV": 0}


def standalone(steps, shape=(1, 4, 5, 6)):
    n = Net()
    n.input("ifm", shape)
    chain(n, n.op("RELU", ["ifm"], "relu", shape), steps)  # a producer no fold can take the chain into
    return n.recipe()


@pytest.mark.parametrize("cshape", channel_shapes(4, 6), ids=str)
def test_replaces_mul_add_of_every_constant_shape(cshape):
    recipe = standalone([(k, cshape, first, act) for k, _, first, act in mul_add(act="RELU6")])
    model, report = optimize_and_compare(recipe, [PASS], REPLACED)
    dw = next(op for op in model.graphs[0].ops if op.kind == "DEPTHWISE_CONV_2D")
    (fold,) = report.folds
    assert dw.input(1).shape == (1, 1, 1, 6) and dw.input(2).shape == (6,)
    np.testing.assert_array_equal(dw.input(1).data.reshape(-1), np.float32(fold["scale"]))
    np.testing.assert_array_equal(dw.input(2).data, np.float32(fold["shift"]))
    assert dw.fused_activation == "RELU6" and dw.options.depthMultiplier == 1


@pytest.mark.parametrize("form", [f for f, steps in FORMS.items() if len(steps) > 1])
def test_replaces_every_chain_form_of_two_or_more_ops(form):
    optimize_and_compare(standalone(FORMS[form]), [PASS], {**REPLACED, "RELU": 1})


def test_a_single_op_is_left_alone():
    _, report = optimize_and_compare(
        standalone([("MUL", None, False, "NONE")]), [PASS], {"MUL": 1, "DEPTHWISE_CONV_2D": 0}
    )
    assert not report.folds and report.counts()[PASS] == (0, 0)
    assert [(s["at"]["kind"], s["pass"]) for s in report.skips] == [("MUL", None)]  # the candidate left, no pass spoke


def test_a_chain_after_a_conv_that_absorbs_it_is_refused():
    n, y = conv2d()
    chain(n, y, mul_add())
    _, report = optimize_and_compare(n.recipe(), [PASS], {"CONV_2D": 1, "MUL": 1, "ADD": 1, "DEPTHWISE_CONV_2D": 0})
    assert any("folds into the CONV_2D" in s["reason"] for s in report.skips), report.skips


def test_a_chain_after_a_conv_with_an_activation_is_replaced():
    n, y = conv2d(act="RELU")
    chain(n, y, mul_add())
    optimize_and_compare(n.recipe(), [PASS], {"CONV_2D": 1, **REPLACED})


def test_data_that_is_not_4d_is_refused():
    _, report = optimize_and_compare(
        standalone(mul_add(), shape=(3, 6)), [PASS], {"MUL": 1, "ADD": 1, "DEPTHWISE_CONV_2D": 0}
    )
    assert any("needs 4-D NHWC" in s["reason"] for s in report.skips), report.skips
