"""forward_transpose_op: a TRANSPOSE moves forward through elementwise ops where it then cancels
(tests/passes/test_remove_redundant_transpose.py holds the operator cases); one before an op
outside its kinds stays, and the report says why."""

from __future__ import annotations

from test_remove_redundant_transpose import T, back, head, net_mean_keep, net_unary

from bn_models import Net, assert_said, optimize_and_compare

PASS = "forward_transpose_op"


def test_transposes_around_an_elementwise_op_cancel():
    n = Net()
    net_unary(n)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 0, "ABS": 1})
    assert report.folds


def test_transpose_before_a_reduction_stays_and_says_why():
    n = Net()
    net_mean_keep(n)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 2})
    assert_said(report, PASS, "reader MEAN")


def test_transpose_before_a_softmax_stays_and_says_why():
    n = Net()
    back(n, n.op("SOFTMAX", [head(n)], "softmax", T, beta=1.0), T)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 2})
    assert_said(report, PASS, "reader SOFTMAX")
