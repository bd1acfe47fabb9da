"""replace_non_const_fc_with_batch_matmul: in a Circle model, a FULLY_CONNECTED with computed
weights becomes BATCH_MATMUL(adj_y) with a RESHAPE only where the shapes differ, the bias as one
ADD carrying the activation (or the activation as its own op); LiteRT values agree. Constant
weights, an activation LiteRT cannot apply as a range, and a TFLite model (LiteRT runs computed
FC weights itself, faster for one row) stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, build_copy, inputs_for, optimize_and_compare
from bnfold import api
from bnfold.io.atomic import save_model
from bnfold.io.formats import CIRCLE
from bnfold.io.reader import read_model
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from bnfold.values import litert

PASS = "replace_non_const_fc_with_batch_matmul"
U = 3


def fc_net(x_shape, *, bias="const", act="NONE", keep_num_dims=False, const_weights=False) -> Net:
    n = Net()
    n.input("x", x_shape)
    k = x_shape[-1]
    w = n.const("w", [U, k]) if const_weights else n.input("w", [U, k])
    b = "" if bias == "none" else n.const("b", [U], values=[0.0] * U if bias == "zero" else None)
    rows = 1
    for d in x_shape[:-1]:
        rows *= d
    out = [*x_shape[:-1], U] if keep_num_dims else [rows, U]
    n.outputs = [
        n.op("FULLY_CONNECTED", ["x", w, b], "y", out, fused_activation_function=act, keep_num_dims=keep_num_dims)
    ]
    return n


@pytest.mark.parametrize(
    "x_shape, case, counts",
    [
        ([2, 5], dict(), {"BATCH_MATMUL": 1, "ADD": 1, "RESHAPE": 0}),
        ([2, 5], dict(bias="zero", act="RELU6"), {"BATCH_MATMUL": 1, "ADD": 0, "RELU6": 1}),
        ([2, 5], dict(bias="none"), {"BATCH_MATMUL": 1, "ADD": 0, "RESHAPE": 0}),
        ([2, 4, 5], dict(act="RELU"), {"BATCH_MATMUL": 1, "ADD": 1, "RESHAPE": 1}),
    ],
)
def test_fc_with_computed_weights_becomes_batch_matmul(x_shape, case, counts):
    model, report = circle_optimize_and_compare(fc_net(x_shape, **case).recipe(), {"FULLY_CONNECTED": 0, **counts})
    assert model.graphs[0].outputs[0].name == "y" and len(report.folds) == 1
    bmm = next(op for op in model.graphs[0].ops if op.kind == "BATCH_MATMUL")
    assert [t.name for t in bmm.inputs] == ["x", "w"] and bmm.options.adjointRhs and not bmm.options.adjointLhs


def test_a_graph_with_a_keep_num_dims_fc_is_left_as_it_is_for_onert():
    """onert 0.1.0 ignores keep_num_dims (the runtime table: it runs it computing another shape), so what
    it computes on such a graph is its own accident, which rewriting one FC of it changed (O1 fuzzer seed
    41907: one of two added FCs made a BATCH_MATMUL, onert could no longer broadcast them): no pass runs."""
    recipe = fc_net([2, 4, 5], keep_num_dims=True, bias="none").recipe()
    model = build(recipe, CIRCLE)
    report = api.apply_passes(model, [PASS])
    assert model.op_counts() == {"FULLY_CONNECTED": 1} and not report.folds
    [refused] = report.to_dict()["target"]["refused"]
    assert "onert runs FULLY_CONNECTED (keep num dims) computing something else (output 'y')" in refused["reason"]


def circle_optimize_and_compare(recipe: dict, counts: dict):
    """The pass on the recipe built as Circle; counts, and LiteRT's outputs of both (written, read
    back, converted in memory) within 1e-5."""
    original, model = build(recipe, CIRCLE), build(recipe, CIRCLE)
    report = api.apply_passes(model, [PASS])
    assert {k: model.op_counts().get(k, 0) for k in counts} == counts
    xs = inputs_for(original)
    np.testing.assert_allclose(litert.run(build_copy(model), xs)[0], litert.run(original, xs)[0], rtol=1e-5, atol=1e-5)
    return model, report


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(const_weights=True), None),  # constant weights: no candidate
        (dict(act="TANH"), "its fused TANH is no activation op the rewrite could make"),
    ],
)
def test_other_layers_stay(case, reason):
    model = build(fc_net([2, 5], **case).recipe(), CIRCLE)
    report = api.apply_passes(model, [PASS])
    assert not report.folds and model.op_counts()["FULLY_CONNECTED"] == 1
    assert_said(report, PASS, reason)


def test_tflite_model_keeps_its_fully_connected():
    optimize_and_compare(fc_net([1, 5]).recipe(), [PASS], {"FULLY_CONNECTED": 1, "BATCH_MATMUL": 0})


def test_circle_model_gets_circles_option_names(tmp_path):
    recipe = fc_net([2, 4, 5], act="RELU").recipe()
    original, model = build(recipe, CIRCLE), build(recipe, CIRCLE)
    api.apply_passes(model, [PASS])
    save_model(model, str(tmp_path / "m.circle"), CIRCLE)
    back = read_model(str(tmp_path / "m.circle"))
    bmm = next(op for op in back.graphs[0].ops if op.kind == "BATCH_MATMUL")
    assert bmm.options.adjointRhs and not bmm.options.adjointLhs
    xs = inputs_for(original)
    np.testing.assert_allclose(interpreter.run(back, xs)[0], interpreter.run(original, xs)[0], rtol=1e-5, atol=1e-5)


def test_an_activation_the_target_cannot_run_on_its_own_keeps_the_fc():
    """Without a bias the activation becomes its own op; onert 0.1.0 runs no standalone
    RELU_N1_TO_1 (it ran the FC with the fused one): the FC stays, and the report says why. With a
    bias the activation rides on the ADD, which onert runs. (Found by the O1 fuzzer: seed 20072.)"""
    model = build(fc_net([2, 5], bias="none", act="RELU_N1_TO_1").recipe(), CIRCLE)
    report = api.apply_passes(model, [PASS], target="onert")
    assert not report.folds and model.op_counts()["FULLY_CONNECTED"] == 1
    assert "onert does not run RELU_N1_TO_1" in report.unsupported[0]["reason"]
    model, report = circle_optimize_and_compare(fc_net([2, 5], act="RELU_N1_TO_1").recipe(), {"ADD": 1})
    assert len(report.folds) == 1
