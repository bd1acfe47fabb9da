"""dynamic_batch_to_single_batch: a rank-4 input of dynamic batch becomes batch 1 and the shapes
dynamic only through it static (values unchanged in LiteRT); a rank-3 input stays dynamic with
ONE's limit as the reason, and an op without a shape rule keeps its outputs dynamic, said."""

from __future__ import annotations

import tomllib
from pathlib import Path

from bn_models import Net, assert_values_agree
from bnfold import api
from bnfold.recipe.chef import build

PASS = "dynamic_batch_to_single_batch"
RECIPE = Path(__file__).parents[2] / "recipes" / "Net_DynamicBatch_Conv_000.toml"


def test_dynamic_batch_becomes_one_and_every_shape_static():
    recipe = tomllib.loads(RECIPE.read_text())
    model = build(recipe)
    assert model.graphs[0].tensor("ifm").signature == (-1, 6, 5, 3)
    report = api.apply_passes(model, [PASS])
    graph = model.graphs[0]
    assert all(-1 not in t.signature for t in graph.tensors)
    assert report.folds[0]["inputs"] == ["ifm"] and report.folds[0]["static"] == 2
    assert_values_agree(build(recipe), model)


def test_rank_3_input_stays_dynamic_and_says_why():
    n = Net()
    n.input("x", [1, 4, 3])
    n.outputs = [n.op("RELU", ["x"], "y", [1, 4, 3])]
    model = build(n.recipe())
    for name in ("x", "y"):
        model.graphs[0].tensor(name).shape_signature = (-1, 4, 3)
    report = api.apply_passes(model, [PASS])
    assert report.folds == [] and "not of rank 4" in report.not_folded[0]["reason"]
    assert model.graphs[0].tensor("x").signature == (-1, 4, 3)


def test_an_op_without_a_shape_rule_keeps_its_outputs_dynamic():
    n = Net()
    n.input("x", [1, 2, 3, 4])
    n.input("w", [1, 2, 4, 5])
    n.outputs = [n.op("BATCH_MATMUL", ["x", "w"], "y", [1, 2, 3, 5])]
    model = build(n.recipe())
    graph = model.graphs[0]
    for name, sig in (("x", (-1, 2, 3, 4)), ("y", (-1, 2, 3, 5))):
        graph.tensor(name).shape_signature = sig
    report = api.apply_passes(model, [PASS])
    assert graph.tensor("x").signature == (1, 2, 3, 4) and graph.tensor("y").signature == (-1, 2, 3, 5)
    assert "no shape rule for BATCH_MATMUL" in report.not_folded[0]["reason"]


def test_the_converters_dynamic_batch_becomes_one_exactly():
    """A real export: the TFLite converter's conv net with its batch left dynamic (tests/data/zoo)."""
    import numpy as np

    from bnfold.io.reader import read_model
    from bnfold.values import litert
    from conftest import DATA

    zoo = DATA / "zoo"
    model = read_model(str(zoo / "tfkeras_dynamic_batch_conv.tflite"))
    assert sum(-1 in t.signature for t in model.graphs[0].tensors) == 5
    report = api.apply_passes(model, [PASS])
    assert all(-1 not in t.signature for t in model.graphs[0].tensors) and report.folds[0]["static"] == 4
    x, ref = np.load(zoo / "tfkeras_dynamic_batch_conv.input.npy"), np.load(zoo / "tfkeras_dynamic_batch_conv.ref.npy")
    np.testing.assert_array_equal(
        litert.run(model, [x])[0], litert.run(read_model(str(zoo / "tfkeras_dynamic_batch_conv.tflite")), [x])[0]
    )
    np.testing.assert_allclose(litert.run(model, [x])[0], ref, rtol=1e-6, atol=1e-6)
