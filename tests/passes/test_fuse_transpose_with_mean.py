"""fuse_transpose_with_mean: a TRANSPOSE before a MEAN is absorbed into its axes where they then
cancel (tests/passes/test_remove_redundant_transpose.py holds the reduction cases); one before an
elementwise op, outside its kinds, stays, and the report says why."""

from __future__ import annotations

from test_remove_redundant_transpose import net_mean_keep, net_unary

from bn_models import Net, assert_said, optimize_and_compare

PASS = "fuse_transpose_with_mean"


def test_transposes_around_a_mean_cancel():
    n = Net()
    net_mean_keep(n)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 0, "MEAN": 1})
    assert report.folds


def test_transpose_before_an_elementwise_op_stays_and_says_why():
    n = Net()
    net_unary(n)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 2})
    assert_said(report, PASS, "reader ABS")
