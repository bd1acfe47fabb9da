"""fuse_rmsnorm: every form PyTorch exporters write an RMS norm in (square by MUL, POW or SQUARE; root by
RSQRT, SQRT, POW ±0.5; the γ MUL after it on either side, or none) becomes one RMS_NORM that onert
computes equal to the written-out form (scaled error <= 1e-5); each condition that keeps the
written-out form is tried once, and where the pattern was recognized the report says why."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import apply_for_no_target, inputs_for
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from decoder_models import CIRCLE, TFLITE, assert_equal_in_runtime, optimized, reasons, rms_net

PASS = "fuse_rmsnorm"


@pytest.mark.parametrize("square", ["MUL", "POW", "SQUARE"])
@pytest.mark.parametrize("root", ["RSQRT", "SQRT", "POW-0.5", "POW0.5"])
@pytest.mark.parametrize("gamma", ["after", "before", None])
def test_every_written_form_becomes_one_rms_norm_equal_in_onert(square, root, gamma):
    original, model, report = optimized(rms_net(square=square, root=root, gamma=gamma), [PASS])
    assert model.op_counts() == {"RMS_NORM": 1}
    (fold,) = report["folds"]
    assert fold["epsilon"] == pytest.approx(1e-6) and fold["form"].endswith("·γ") == (gamma is not None)
    (norm,) = model.graphs[0].ops
    assert norm.inputs[1].data.size == (24 if gamma else 1) and norm.outputs[0].name == ("y" if gamma else "normed")
    assert_equal_in_runtime(original, model)


@pytest.mark.parametrize("shape", [(1, 7, 3, 10), (2, 5, 16)])
def test_rank_3_and_4_run_in_onert(shape):
    original, model, _ = optimized(rms_net(shape), [PASS])
    assert model.op_counts() == {"RMS_NORM": 1}
    assert_equal_in_runtime(original, model)


def test_rank_2_is_refused_for_onert_which_cannot_prepare_it():
    _, model, report = optimized(rms_net((6, 24)), [PASS])
    assert "RMS_NORM" not in model.op_counts()
    assert reasons(report) == ["onert does not run RMS_NORM (rank 2)"]


def test_rank_2_algebra_for_no_target():
    original, model = build(rms_net((6, 24)).recipe(), CIRCLE), build(rms_net((6, 24)).recipe(), CIRCLE)
    apply_for_no_target(model, PASS)
    assert model.op_counts() == {"RMS_NORM": 1}
    xs = inputs_for(original)
    np.testing.assert_allclose(interpreter.run(model, xs)[0], interpreter.run(original, xs)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "target, why",
    [("litert", "litert does not run RMS_NORM"), ("any", "the input has no RMS_NORM")],
)
def test_a_target_without_rms_norm_keeps_the_written_form(target, why):
    _, model, report = optimized(rms_net(), [PASS], target=target)
    assert "RMS_NORM" not in model.op_counts() and model.op_counts()["MEAN"] == 1
    (reason,) = reasons(report)
    assert reason.startswith(why)


def test_tflite_has_no_rms_norm():
    _, model, report = optimized(rms_net(), [PASS], fmt=TFLITE)
    assert model.op_counts()["MEAN"] == 1
    assert reasons(report) == ["the RMS norm stays: the output format tflite has no RMS_NORM (Circle only)"]


def test_a_fused_activation_on_the_normalizing_op_keeps_it():
    _, model, report = optimized(rms_net(gamma=None, norm_act="RELU"), [PASS])
    assert model.op_counts()["MEAN"] == 1
    assert reasons(report) == ["the RMS norm stays: an op of it carries a fused activation"]


def test_rank_5_is_not_taken():
    _, model, report = optimized(rms_net((1, 2, 3, 2, 8)), [PASS])
    assert model.op_counts()["MEAN"] == 1
    assert reasons(report) == ["the RMS norm stays: x has rank 5, not 2 to 4"]


def test_a_gamma_that_varies_along_another_axis_stays_a_mul_after_the_norm():
    original, model, report = optimized(rms_net(gamma_shape=[5, 24]), [PASS])
    assert model.op_counts() == {"RMS_NORM": 1, "MUL": 1}
    assert model.graphs[0].ops[0].inputs[1].data.tolist() == [1.0]
    assert_equal_in_runtime(original, model)


@pytest.mark.parametrize(
    "change",
    [
        dict(axis=1),  # the mean over another axis: not an RMS norm
        dict(keep_dims=False, gamma=None),
        dict(extra_output="mean"),  # an intermediate the outside sees
    ],
    ids=["other-axis", "no-keep-dims", "observed-mean"],
)
def test_other_functions_stay_silently(change):
    _, model, report = optimized(rms_net(**change), [PASS])
    said = reasons(report)
    if "extra_output" in change:  # for onert the graph, a graph output read by an ADD, is not rewritten at all
        assert said == [
            "left as it is (the runtime computes it right only by the luck of a plan a rewrite may change): "
            "onert may overwrite a graph output another op reads ('mean', read by ADD)"
        ]
        said = []
    assert "RMS_NORM" not in model.op_counts() and not report["folds"] and not said


def test_a_square_of_two_tensors_is_not_taken():
    net = rms_net(gamma=None)
    net.operations[0]["inputs"] = ["x", net.input("z", [1, 5, 24])]
    _, model, report = optimized(net, [PASS])
    assert "RMS_NORM" not in model.op_counts() and not report["folds"]


def test_a_layer_norm_is_an_rms_norm_of_the_centred_values():
    """GPT-2's and BERT's LayerNorm as TICO writes it: c = x - mean(x), then c · rsqrt(mean(c²) + ε) · γ + β:
    the RMS norm of c is taken (exact: the same function of c), the centring and β stay."""
    net = rms_net((2, 5, 24))
    net.inputs = ["x0"]
    net.operands.insert(0, {"name": "x0", "shape": [2, 5, 24], "dtype": "FLOAT32"})
    net.operands = [o for o in net.operands if o["name"] != "x"] + [
        {"name": "x", "shape": [2, 5, 24], "dtype": "FLOAT32"}
    ]
    axis = net.tensor("centre_axis", [1], "INT32", {"kind": "explicit", "values": [-1]})
    net.tensor("x0_mean", [2, 5, 1])
    net.operations[:0] = [
        {"type": "MEAN", "inputs": ["x0", axis], "outputs": ["x0_mean"], "options": {"keep_dims": True}},
        {"type": "SUB", "inputs": ["x0", "x0_mean"], "outputs": ["x"], "options": {}},
    ]
    original, model, _ = optimized(net, [PASS])
    assert model.op_counts() == {"MEAN": 1, "SUB": 1, "RMS_NORM": 1}
    assert_equal_in_runtime(original, model)
