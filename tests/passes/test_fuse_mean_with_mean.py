"""fuse_mean_with_mean: two MEANs become one over the union of their axes (the second op's axes
mapped to x's axes through what the first kept), values within float rounding; mixed keep_dims,
an integer mean and a first mean read elsewhere stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, assert_values_agree, optimize_and_compare, without_options
from bnfold import api
from bnfold.recipe.chef import build

PASS = "fuse_mean_with_mean"
SHAPE = [2, 3, 4, 5]


def reduced(shape, axes, keep):
    axes = {a % len(shape) for a in axes}
    return [1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes]


def mean_mean_net(first_axes, second_axes, keep=(True, True), *, other=False) -> Net:
    n = Net()
    n.input("x", SHAPE)
    m_shape = reduced(SHAPE, first_axes, keep[0])
    m = n.op("MEAN", ["x", n.ints("a1", first_axes)], "m", m_shape, keep_dims=keep[0])
    n.outputs = [
        n.op("MEAN", [m, n.ints("a2", second_axes)], "y", reduced(m_shape, second_axes, keep[1]), keep_dims=keep[1])
    ]
    if other:
        n.outputs.append(n.op("TANH", [m], "t", m_shape))
    return n


@pytest.mark.parametrize(
    "first, second, keep, axes",
    [
        ([1], [2], (True, True), [1, 2]),
        ([2], [1], (False, False), [1, 2]),  # the second axis 1 is x's 1 (x's 2 is gone)
        ([1], [1], (False, False), [1, 2]),  # ... here x's 2, not 1 again
        ([0, -1], [1], (False, False), [0, 2, 3]),
        ([3], [-3], (True, True), [1, 3]),
    ],
)
def test_two_means_become_one(first, second, keep, axes):
    model, report = optimize_and_compare(mean_mean_net(first, second, keep).recipe(), [PASS], {"MEAN": 1})
    mean = model.graphs[0].ops[0]
    assert mean.inputs[0].name == "x" and mean.outputs[0].name == "y"
    assert np.array_equal(mean.inputs[1].data, axes) and report.folds[0]["axes"] == axes


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(keep=(True, False)), "one MEAN keeps the reduced axes and the other does not"),
        (dict(keep=(False, True)), "one MEAN keeps the reduced axes and the other does not"),
        (dict(other=True), "'m' has another reader than the MEAN, so it must stay computed"),
    ],
)
def test_other_forms_stay(case, reason):
    _, report = optimize_and_compare(mean_mean_net([1], [1], **case).recipe(), [PASS], {"MEAN": 2})
    assert_said(report, PASS, reason)


def test_means_without_options_tables_fuse():
    """A file may give MEAN no options table (keep_dims off then): the MEAN made gets its kind's
    table, and the values stay (mypy found options.copy() called on None: exit 3)."""
    recipe = mean_mean_net([2], [1], (False, False)).recipe()
    model = without_options(recipe, {"MEAN"})
    report = api.apply_passes(model, [PASS])
    assert len(report.folds) == 1 and model.op_counts()["MEAN"] == 1
    assert report.folds[0]["axes"] == [1, 2]
    assert_values_agree(build(recipe), model)


def test_a_mean_the_target_cannot_run_is_not_made():
    """onert 0.1.0 runs no MEAN of rank 5: two rank-5 means stay two for onert, with the reason
    (found by the O1 fuzzer: seed 30171 exited 3 at the output gate), and fuse for LiteRT."""
    shape = [2, 3, 1, 4, 5]
    n = Net()
    n.input("x", shape)
    m = n.op("MEAN", ["x", n.ints("a1", [1])], "m", [2, 1, 1, 4, 5], keep_dims=True)
    n.outputs = [n.op("MEAN", [m, n.ints("a2", [3])], "y", [2, 1, 1, 1, 5], keep_dims=True)]
    model = build(n.recipe())
    report = api.apply_passes(model, [PASS], target="onert")
    assert not report.folds and model.op_counts()["MEAN"] == 2
    assert "onert does not run MEAN of rank 5" in report.unsupported[0]["reason"]
    optimize_and_compare(n.recipe(), [PASS], {"MEAN": 1})
