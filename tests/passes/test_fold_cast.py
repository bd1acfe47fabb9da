"""fold_cast: a CAST of a constant becomes the cast constant; a CAST of a computed value, or whose
result is a model output, stays (the latter with a reason in the report)."""

from __future__ import annotations

import numpy as np

from bn_models import Net, optimize_and_compare

PASS = "fold_cast"


def cast_net(*, cast_is_output=False) -> Net:
    """c (INT32 [3,5]) -> CAST -> f (FLOAT32) -> ADD(x) -> y."""
    n = Net()
    n.input("x", [3, 5])
    c = n.tensor("c", [3, 5], "INT32", {"kind": "explicit", "values": list(range(-7, 8))})
    f = n.op("CAST", [c], "f", [3, 5])
    n.outputs = [f] if cast_is_output else [n.op("ADD", ["x", f], "y", [3, 5])]
    return n


def test_cast_of_a_constant_is_computed():
    model, report = optimize_and_compare(cast_net().recipe(), [PASS], {"CAST": 0, "ADD": 1})
    f = model.graphs[0].tensor("f")
    assert f.is_const and f.dtype == "FLOAT32"
    np.testing.assert_array_equal(f.data, np.arange(-7, 8, dtype=np.float32).reshape(3, 5))
    assert [fold["constants"] for fold in report.folds] == [["f"]]


def test_cast_that_is_a_model_output_stays_and_says_why():
    _, report = optimize_and_compare(cast_net(cast_is_output=True).recipe(), [PASS], {"CAST": 1})
    assert report.folds == [] and "seen from outside" in report.not_folded[0]["reason"]


def test_cast_of_a_computed_value_stays():
    n = Net()
    n.input("x", [3, 5])
    n.tensor("i", [3, 5], "INT32")
    n.outputs = [n.op("CAST", ["x"], "i", [3, 5])]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"CAST": 1}, numerics=False)
    assert report.folds == [] and report.not_folded == []
