"""fuse_transpose_with_mean: a TRANSPOSE before a MEAN is absorbed into its axes where they then
cancel (tests/passes/test_remove_redundant_transpose.py holds the reduction cases); one before an
elementwise op, outside its kinds, stays, and the report says why."""

from __future__ import annotations

import numpy as np
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


def _transposed_mean() -> dict:
    """x [1, 4, 5, 3] -> TRANSPOSE(0, 3, 1, 2) -> MEAN(axes 1, 2, no keep_dims) -> y [1, 5]: absorbed,
    the MEAN reduces x's axes 1 and 3, W stays in place."""
    n = Net()
    x = n.input("x", [1, 4, 5, 3])
    t = n.op("TRANSPOSE", [x, n.ints("p", [0, 3, 1, 2])], "t", [1, 3, 4, 5])
    n.outputs = [n.op("MEAN", [t, n.ints("a", [1, 2])], "y", [1, 5], keep_dims=False)]
    return n.recipe()


def test_a_mean_onert_cannot_prepare_is_not_made_for_onert():
    """onert 0.1.0 prepares a rank-4 MEAN without keep_dims over axes 1 and 2 but not over 1 and 3 (the
    table's "form rank_4_dropping_1_3", ShapeValidator): the original runs in onert, the remapped MEAN
    would not, so for onert the TRANSPOSE stays with that reason; for LiteRT it folds, same values."""
    from bnfold import api
    from bnfold.io.formats import CIRCLE
    from bnfold.recipe.chef import build
    from bnfold.values import litert, onert

    model = build(_transposed_mean(), CIRCLE)
    report = api.apply_passes(model, [PASS], "onert")
    assert not report.folds and model.op_counts()["TRANSPOSE"] == 1
    assert "onert does not run MEAN (rank 4 dropping 1 3)" in {t["reason"] for t in report.transposes}
    xs = [np.random.default_rng(0).normal(0, 2, (1, 4, 5, 3)).astype(np.float32)]
    if not onert.missing():
        np.testing.assert_allclose(onert.Session(model)(xs)[0], litert.run(model, xs)[0], rtol=1e-5, atol=1e-6)
    for_litert = build(_transposed_mean(), CIRCLE)
    assert api.apply_passes(for_litert, [PASS], "litert").folds
    np.testing.assert_allclose(litert.run(for_litert, xs)[0], litert.run(model, xs)[0], rtol=1e-5, atol=1e-6)
