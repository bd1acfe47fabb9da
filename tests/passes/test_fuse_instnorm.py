"""fuse_instnorm: instance normalization written out (ONE's Version_1, _5 and _2) becomes one Circle
INSTANCE_NORM whose values (reference interpreter) match the written-out form run in LiteRT; other
axes, a TFLite model, an intermediate read elsewhere and ε after the square root stay. Neither
runtime of the target table runs INSTANCE_NORM, so the algebra is tested made for no target, and an
onert (or litert) target keeps the written-out form, saying why in the report."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from bn_models import ATOL, RTOL, apply_for_no_target, assert_said, inputs_for
from bnfold import api
from bnfold.io.formats import CIRCLE, TFLITE
from bnfold.recipe.chef import build, load_recipe
from bnfold.reference import interpreter
from bnfold.values import litert
from conftest import RECIPES

PASS = "fuse_instnorm"


def recipe(name: str) -> dict:
    return load_recipe(RECIPES / f"{name}.toml")


def fused(spec: dict, fmt=CIRCLE):
    original, model = build(spec, fmt), build(spec, fmt)
    return original, model, apply_for_no_target(model, PASS)


@pytest.mark.parametrize(
    "name, gamma", [("Net_InstanceNorm_001", True), ("Net_InstanceNorm_005", False), ("Net_InstanceNorm_003", True)]
)
def test_written_out_instance_norm_becomes_one(name, gamma):
    original, model, report = fused(recipe(name))
    (op,) = model.graphs[0].ops
    assert op.kind == "INSTANCE_NORM" and op.outputs[0].name == "ofm" and op.inputs[0].name == "ifm"
    assert op.options.epsilon == pytest.approx(report.folds[0]["epsilon"]) and op.options.epsilon in (
        pytest.approx(1e-3),
        pytest.approx(1e-5),
    )
    if not gamma:
        assert np.array_equal(op.inputs[1].data, np.ones(3, np.float32))
    xs = inputs_for(original)
    want = litert.run(build(recipe(name), TFLITE), xs)  # the written-out form in LiteRT
    np.testing.assert_allclose(interpreter.run(model, xs)[0], want[0], rtol=RTOL, atol=ATOL)


def _mutated(change) -> dict:
    spec = copy.deepcopy(recipe("Net_InstanceNorm_001"))
    change(spec)
    return spec


def _operand(spec, name):
    return next(o for o in spec["operand"] if o["name"] == name)


def _axes_h_only(spec):
    _operand(spec, "axes").update(shape=[1], filler={"kind": "explicit", "values": [1]})
    for name in ("mean", "variance", "var_eps", "rsqrt", "mul_gamma", "scaled_mean", "sub"):
        _operand(spec, name)["shape"] = [1, 1, 6, 3]


def _mean_seen(spec):
    spec["output"] = ["ofm", "mean"]


def _eps_after_sqrt(spec):  # Version_3's ε: 1 / (√v + ε) is not INSTANCE_NORM's 1 / √(v + ε)
    ops = spec["operation"]
    add = next(op for op in ops if op["outputs"] == ["var_eps"])
    add["inputs"] = ["sqrt", "epsilon"]
    ops.insert(ops.index(add), {"type": "SQRT", "inputs": ["variance"], "outputs": ["sqrt"]})
    next(op for op in ops if op["type"] == "RSQRT").update(type="DIV", inputs=["one", "var_eps"])
    spec["operand"] += [
        {"name": "sqrt", "shape": [1, 1, 1, 3]},
        {"name": "one", "shape": [], "filler": {"kind": "explicit", "values": [1.0]}},
    ]


@pytest.mark.parametrize(
    "change, reason",
    [
        (_axes_h_only, None),  # another reduction: no candidate
        (_mean_seen, "the mean 'mean' is read by more than the instance norm's ops (or is a model output)"),
        (_eps_after_sqrt, None),  # another function
    ],
)
def test_other_forms_stay(change, reason):
    _, model, report = fused(_mutated(change))
    assert not report.folds and "INSTANCE_NORM" not in model.op_counts()
    assert_said(report, PASS, reason)


def test_tflite_model_gets_no_instance_norm():
    _, model, report = fused(recipe("Net_InstanceNorm_001"), TFLITE)
    assert not report.folds and model.op_counts()["MEAN"] == 2
    assert_said(report, PASS, "the output format tflite has no INSTANCE_NORM (Circle only)")


@pytest.mark.parametrize("target", [None, "onert", "litert", "any"])
def test_no_target_gets_an_instance_norm_and_the_report_says_why(target):
    """A Circle model's default target is onert, whose cpu backend fails to prepare INSTANCE_NORM
    (ir/runtimes.py); LiteRT has none; `any` allows only what the input had."""
    model = build(recipe("Net_InstanceNorm_001"), CIRCLE)
    report = api.apply_passes(model, [PASS], target=target).to_dict()
    assert not report["folds"] and model.op_counts()["MEAN"] == 2 and "INSTANCE_NORM" not in model.op_counts()
    (refused,) = report["target"]["refused"]
    made_for = target or "onert"
    assert report["target"]["name"] == made_for and refused["pass"] == PASS and refused["at"]["kind"] == "ADD"
    why = "the input has no INSTANCE_NORM" if made_for == "any" else f"{made_for} does not run INSTANCE_NORM"
    assert refused["reason"].startswith(why)
