"""substitute_expand_dims_to_reshape: EXPAND_DIMS by a constant axis (negative too) becomes a
RESHAPE to its output shape; one by a computed axis or with a dynamic shape stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare
from bnfold import api
from bnfold.recipe.chef import build

PASS = "substitute_expand_dims_to_reshape"


def expand(axis=1, out=(3, 1, 5)) -> Net:
    n = Net()
    n.input("x", [3, 5])
    n.outputs = [n.op("EXPAND_DIMS", ["x", n.ints("axis", [axis])], "y", list(out))]
    return n


@pytest.mark.parametrize("axis, out", [(1, (3, 1, 5)), (-1, (3, 5, 1)), (0, (1, 3, 5))])
def test_expand_dims_becomes_a_reshape(axis, out):
    model, report = optimize_and_compare(expand(axis, out).recipe(), [PASS], {"EXPAND_DIMS": 0, "RESHAPE": 1})
    assert model.graphs[0].ops[0].outputs[0].shape == out and report.folds[0]["shape"] == list(out)


def test_a_dynamic_shape_stays():
    model = build(expand().recipe())
    graph = model.graphs[0]
    graph.tensor("x").shape_signature, graph.tensor("y").shape_signature = (-1, 5), (-1, 1, 5)
    report = api.apply_passes(model, [PASS])
    assert report.folds == [] and [op.kind for op in graph.ops] == ["EXPAND_DIMS"]


def test_for_a_target_without_reshape_it_stays_and_says_why():
    model = build(expand().recipe())
    report = api.apply_passes(model, [PASS], "any")
    assert [op.kind for op in model.graphs[0].ops] == ["EXPAND_DIMS"]
    assert_said(report, PASS, "the input has no RESHAPE, and the target is any")
