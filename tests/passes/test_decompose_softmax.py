"""decompose_softmax: SOFTMAX becomes REDUCE_MAX, SUB, (MUL,) EXP, SUM, DIV, within a few ulp of
LiteRT's kernel (measured here); a beta within 1e-5 of 1 keeps its MUL (ONE would drop it), and a
target that cannot run the ops refuses."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, build_copy, inputs_for, optimize_and_compare, runnable
from bnfold.engine.targets import Target
from bnfold.recipe.chef import build
from bnfold.values import litert

PASS = "decompose_softmax"
SHAPE = [2, 3, 17]


def softmax(beta=1.0) -> Net:
    n = Net()
    n.input("x", SHAPE)
    n.outputs = [n.op("SOFTMAX", ["x"], "y", SHAPE, beta=beta)]
    return n


@pytest.mark.parametrize("beta, muls", [(1.0, 0), (0.5, 1), (1.000001, 1)])
def test_softmax_is_decomposed_within_a_few_ulp(beta, muls):
    recipe = softmax(beta).recipe()
    counts = {"SOFTMAX": 0, "REDUCE_MAX": 1, "SUB": 1, "MUL": muls, "EXP": 1, "SUM": 1, "DIV": 1}
    model, report = optimize_and_compare(recipe, [PASS], counts)
    xs = inputs_for(build(recipe))
    want = litert.run(runnable(build(recipe)), xs)[0]
    have = litert.run(runnable(build_copy(model)), xs)[0]
    ulps = np.abs(have - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 8, ulps.max()
    assert report.folds[0]["beta"] == pytest.approx(beta)


def test_a_target_without_the_ops_refuses():
    model = build(softmax().recipe())
    model.graphs[0].target = Target.of("any", model)  # the input has only SOFTMAX
    from bnfold.passes import decompose_softmax

    result = decompose_softmax.run(model.graphs[0])
    assert not result.folds and "the input has no REDUCE_MAX" in result.unsupported[0]["reason"]


def test_a_softmax_whose_file_shapes_disagree_stays():
    """Found by the fuzzer (a mutated file): the ops made in its place would be refused by the gate."""
    from bnfold import api
    from bnfold.engine.match import SHAPES_DISAGREE

    model = build(softmax().recipe())
    model.graphs[0].tensor("y").shape = (2, 3, 16)
    report = api.apply_passes(model, [PASS])
    assert report.folds == [] and report.not_folded[0]["reason"] == SHAPES_DISAGREE
