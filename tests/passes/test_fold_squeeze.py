"""fold_squeeze: a SQUEEZE of a constant becomes the constant without its unit axes; one of a
computed value stays."""

from __future__ import annotations

import numpy as np

from bn_models import Net, assert_said, optimize_and_compare

PASS = "fold_squeeze"


def test_squeeze_of_a_constant_is_computed():
    n = Net()
    n.input("x", [5, 1, 3])
    c = n.const("c", [1, 5, 1, 3])
    s = n.op("SQUEEZE", [c], "s", [5, 1, 3], squeeze_dims=[0])
    n.outputs = [n.op("MUL", ["x", s], "y", [5, 1, 3], fused_activation_function="NONE")]
    model, report = optimize_and_compare(n.recipe(), [PASS], {"SQUEEZE": 0, "MUL": 1})
    np.testing.assert_array_equal(model.graphs[0].tensor("s").data, n.model().graphs[0].tensor("c").data[0])
    assert [fold["constants"] for fold in report.folds] == [["s"]]


def test_squeeze_of_every_unit_axis_and_of_a_computed_value():
    n = Net()
    n.input("x", [1, 4, 1])
    c = n.op("SQUEEZE", [n.const("c", [1, 4, 1])], "c4", [4], squeeze_dims=[])
    n.outputs = [n.op("SQUEEZE", ["x"], "x4", [4], squeeze_dims=[]), c]
    n.outputs = [n.op("ADD", ["x4", c], "y", [4], fused_activation_function="NONE")]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"SQUEEZE": 1, "ADD": 1})
    assert [fold["constants"] for fold in report.folds] == [["c4"]] and report.not_folded == []


def test_a_squeeze_of_a_constant_the_outside_sees_stays_and_says_why():
    n = Net()
    n.input("x", [4])
    s = n.op("SQUEEZE", [n.const("c", [1, 4])], "s", [4], squeeze_dims=[0])
    n.outputs = [s, n.op("ADD", ["x", s], "y", [4], fused_activation_function="NONE")]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"SQUEEZE": 1})
    assert_said(report, PASS, "'s' is seen from outside the graph")
