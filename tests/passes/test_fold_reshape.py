"""fold_reshape: a RESHAPE of a constant becomes the constant in its new shape; one of a computed
value or that is a model output stays (the latter with a reason)."""

from __future__ import annotations

import numpy as np

from bn_models import Net, optimize_and_compare

PASS = "fold_reshape"


def reshape_net(*, is_output=False) -> Net:
    """c (const [6, 4]) -> RESHAPE([2, 3, 4]) -> r -> ADD(x) -> y."""
    n = Net()
    n.input("x", [2, 3, 4])
    c = n.const("c", [6, 4])
    r = n.op("RESHAPE", [c, n.ints("shape", [2, 3, 4])], "r", [2, 3, 4], new_shape=[2, 3, 4])
    n.outputs = [r] if is_output else [n.op("ADD", ["x", r], "y", [2, 3, 4], fused_activation_function="NONE")]
    return n


def test_reshape_of_a_constant_is_the_constant_reshaped():
    net = reshape_net()
    model, report = optimize_and_compare(net.recipe(), [PASS], {"RESHAPE": 0, "ADD": 1})
    r = model.graphs[0].tensor("r")
    np.testing.assert_array_equal(r.data, net.model().graphs[0].tensor("c").data.reshape(2, 3, 4))
    assert [fold["constants"] for fold in report.folds] == [["r"]]


def test_reshape_that_is_a_model_output_stays():
    _, report = optimize_and_compare(reshape_net(is_output=True).recipe(), [PASS], {"RESHAPE": 1}, numerics=False)
    assert "seen from outside" in report.not_folded[0]["reason"]


def test_reshape_of_a_computed_value_stays():
    n = Net()
    n.input("x", [6, 4])
    n.outputs = [n.op("RESHAPE", ["x", n.ints("shape", [24])], "y", [24], new_shape=[24])]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"RESHAPE": 1})
    assert report.folds == [] and report.not_folded == []
