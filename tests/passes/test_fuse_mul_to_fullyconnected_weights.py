"""fuse_mul_to_fullyconnected_weights: a MUL by a per-feature constant before FULLY_CONNECTED goes
into its weights (values within float rounding); activations, per-element constants, a
broadcasting MUL and shared weights behave."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, optimize_and_compare

PASS = "fuse_mul_to_fullyconnected_weights"


def mul_fc(*, s_shape=(6,), act="NONE", shared=False, x_shape=(3, 6), mul_read_elsewhere=False) -> Net:
    n = Net()
    n.input("x", list(x_shape))
    s = n.const("s", list(s_shape), low=0.5, high=2.0)
    m = n.op("MUL", ["x", s], "m", [3, 6], fused_activation_function=act)
    w, b = n.const("w", [4, 6]), n.const("b", [4])
    n.outputs = [n.op("FULLY_CONNECTED", [m, w, b], "y", [3, 4])]
    if shared:
        n.outputs.append(n.op("FULLY_CONNECTED", ["x", w, b], "y2", [3, 4]))
    if mul_read_elsewhere:
        n.outputs.append(n.op("TANH", [m], "t", [3, 6]))
    return n


@pytest.mark.parametrize("s_shape", [(6,), (1,)])
def test_scale_goes_into_the_weights(s_shape):
    net = mul_fc(s_shape=s_shape)
    model, report = optimize_and_compare(net.recipe(), [PASS], {"MUL": 0, "FULLY_CONNECTED": 1})
    fc = model.graphs[0].ops[0]
    original = net.model().graphs[0]
    expected = original.tensor("w").data * original.tensor("s").data.reshape(1, -1)
    np.testing.assert_allclose(fc.inputs[1].data, expected, rtol=1e-7)
    assert fc.inputs[0].name == "x" and len(report.folds) == 1


def test_shared_weights_and_a_mul_read_elsewhere_are_kept_for_the_others():
    net = mul_fc(shared=True, mul_read_elsewhere=True)
    model, _ = optimize_and_compare(net.recipe(), [PASS], {"MUL": 1, "FULLY_CONNECTED": 2})
    np.testing.assert_array_equal(model.graphs[0].tensor("w").data, net.model().graphs[0].tensor("w").data)


@pytest.mark.parametrize(
    "case, why",
    [
        (dict(act="RELU"), "fused activation"),
        (dict(s_shape=(3, 6)), "one value or one per input feature"),
        (dict(x_shape=(1, 6)), "broadcasts its input"),
    ],
)
def test_other_forms_stay_and_say_why(case, why):
    _, report = optimize_and_compare(mul_fc(**case).recipe(), [PASS], {"MUL": 1, "FULLY_CONNECTED": 1})
    assert report.folds == [] and why in report.not_folded[0]["reason"]
