"""fuse_add_to_fullyconnected_bias: an ADD of a per-feature constant before FULLY_CONNECTED goes
into its bias as W·s (made when the layer has none); activations, per-element constants and a
broadcasting ADD stay, with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, optimize_and_compare

PASS = "fuse_add_to_fullyconnected_bias"


def add_fc(*, s_shape=(6,), act="NONE", bias=True, x_shape=(3, 6)) -> Net:
    n = Net()
    n.input("x", list(x_shape))
    s = n.const("s", list(s_shape))
    a = n.op("ADD", ["x", s], "a", [3, 6], fused_activation_function=act)
    inputs = [a, n.const("w", [4, 6])] + ([n.const("b", [4])] if bias else [])
    n.outputs = [n.op("FULLY_CONNECTED", inputs, "y", [3, 4])]
    return n


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("s_shape", [(6,), (1,)])
def test_shift_goes_into_the_bias(bias, s_shape):
    net = add_fc(bias=bias, s_shape=s_shape)
    model, report = optimize_and_compare(net.recipe(), [PASS], {"ADD": 0, "FULLY_CONNECTED": 1})
    fc = model.graphs[0].ops[0]
    g = net.model().graphs[0]
    w, s = g.tensor("w").data.astype(np.float64), np.broadcast_to(g.tensor("s").data, (6,))
    expected = w @ s + (g.tensor("b").data if bias else 0)
    np.testing.assert_allclose(fc.inputs[2].data, expected, rtol=1e-6)
    assert fc.inputs[0].name == "x" and len(report.folds) == 1


@pytest.mark.parametrize(
    "case, why",
    [
        (dict(act="RELU"), "fused activation"),
        (dict(s_shape=(3, 6)), "one value or one per input feature"),
        (dict(x_shape=(1, 6)), "broadcasts its input"),
    ],
)
def test_other_forms_stay_and_say_why(case, why):
    _, report = optimize_and_compare(add_fc(**case).recipe(), [PASS], {"ADD": 1, "FULLY_CONNECTED": 1})
    assert report.folds == [] and why in report.not_folded[0]["reason"]
