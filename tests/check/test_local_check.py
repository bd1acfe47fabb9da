"""The per-rewrite check (--check-mode local): regions found by output names, checked on their
own in the reference interpreter; models no backend runs are checked rewrite by rewrite (exit 0)
or, when a check cannot be carried out, exit 4; a perturbed folded weight fails both modes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnfold import api
from bnfold.cli import run
from bnfold.errors import CannotVerify, CheckFailed
from bnfold.io.atomic import save_model
from bnfold.recipe.chef import build
from bnfold.values.diff import verify
from bnfold.values.local import check_rewrites, find_regions
from conftest import DATA, RECIPES, build_recipe


def with_custom_op(tmp_path):
    """CONV -> MUL -> ADD (a batch norm to fold) -> CUSTOM(NoSuchOp): nothing runs the whole model."""
    recipe = {
        "input": ["x"],
        "output": ["y"],
        "operand": [
            {"name": "x", "shape": [1, 6, 6, 3]},
            {"name": "w", "shape": [4, 3, 3, 3], "filler": {"kind": "gaussian"}},
            {"name": "b", "shape": [4], "filler": {"kind": "gaussian"}},
            {"name": "c", "shape": [1, 6, 6, 4]},
            {"name": "g", "shape": [4], "filler": {"kind": "uniform", "low": 0.5, "high": 2.0}},
            {"name": "m", "shape": [1, 6, 6, 4]},
            {"name": "beta", "shape": [4], "filler": {"kind": "gaussian"}},
            {"name": "n", "shape": [1, 6, 6, 4]},
            {"name": "y", "shape": [1, 6, 6, 4]},
        ],
        "operation": [
            {
                "type": "CONV_2D",
                "inputs": ["x", "w", "b"],
                "outputs": ["c"],
                "options": {"padding": "SAME", "stride_h": 1, "stride_w": 1},
            },
            {"type": "MUL", "inputs": ["c", "g"], "outputs": ["m"]},
            {"type": "ADD", "inputs": ["m", "beta"], "outputs": ["n"]},
            {"type": "CUSTOM", "custom_code": "NoSuchOp", "inputs": ["n"], "outputs": ["y"]},
        ],
    }
    path = tmp_path / "custom.tflite"
    model = build(recipe)
    save_model(model, str(path), model.format)
    return str(path)


def test_model_no_backend_runs_is_checked_rewrite_by_rewrite(tmp_path, capsys):
    src = with_custom_op(tmp_path)
    assert run(["check", src, src]) == 4  # could not verify: not "differs"
    assert "CUSTOM(NoSuchOp)" in capsys.readouterr().err
    out, report = tmp_path / "o.tflite", tmp_path / "r.json"
    assert run(["optimize", src, str(out), "--check", "2", "--check-mode", "whole"]) == 4
    assert not out.exists()
    assert run(["optimize", src, str(out), "--check", "2", "--report", str(report)]) == 0
    text = capsys.readouterr().out
    assert "per rewrite" in text and "1 rewrite(s) within" in text
    note = json.loads(report.read_text())["check"]
    assert note["mode"] == "local" and note["passed"] and "NoSuchOp" in note["why"]
    [rewrite] = note["rewrites"]
    assert (
        rewrite["rewrite"] == "CONV_2D MUL ADD -> CONV_2D"
        and rewrite["inputs"] == ["x"]
        and rewrite["outputs"] == ["n"]
    )
    assert rewrite["folds"] == ["fuse_batchnorm_with_conv at 'c'"] and rewrite["scaled_err"] < 1e-6


def test_regions_are_the_changed_ops_by_output_name(tmp_path):
    a = api.load(str(DATA / "resnet_v2_mini.tflite"))
    b = api.load(str(DATA / "resnet_v2_mini.tflite"))
    assert find_regions(a.graphs[0], b.graphs[0]) == []  # nothing changed, nothing to check
    api.apply_passes(b)
    regions = find_regions(a.graphs[0], b.graphs[0])
    assert regions and all(r.inputs and r.outputs for r in regions)
    result = check_rewrites(a, b, samples=2)
    assert result.passed and result.worst.scaled < 1e-6


def perturbed(model):
    """The folded model with its first convolution's largest weight changed by one part in a thousand."""
    conv = next(op for op in model.graphs[0].ops if op.kind == "CONV_2D")
    w = conv.inputs[1].data.copy()
    w.flat[np.argmax(np.abs(w))] *= np.float32(1.001)
    conv.inputs[1].data = w
    return model


@pytest.mark.parametrize("source", ["Net_Conv_Add_Mul_000", "resnet_v2_mini.tflite"])
def test_a_folded_weight_off_by_one_part_in_a_thousand_fails_whole_and_local(source, tmp_path):
    path = str(DATA / source) if source.endswith(".tflite") else str(build_recipe(source, tmp_path))
    good = api.load(path)
    api.apply_passes(good)
    assert verify(api.load(path), good, 2).passed and check_rewrites(api.load(path), good, samples=2).passed
    bad = perturbed(good)
    with pytest.raises(CheckFailed):
        verify(api.load(path), bad, 2)
    local = check_rewrites(api.load(path), bad, samples=2)
    assert not local.passed and max(r.scaled for r in local.regions) > 1e-5


# recipes whose rewrites the reference interpreter cannot run (their whole check runs in LiteRT)
NOT_LOCAL = {"Net_Quantized_Mul_Add_000": "quantized DEPTHWISE_CONV_2D"}


def test_what_the_local_check_cannot_run_is_still_refused(tmp_path):
    """The exclusions above are real: the local check refuses those recipes' rewrites."""
    from bnfold.reference.kernels import UnsupportedOperator

    for name, what in NOT_LOCAL.items():
        path = str(build_recipe(name, tmp_path))
        model = api.load(path)
        from bnfold.recipe.chef import load_recipe
        from bnfold.recipe.rules import expectation

        report = api.apply_passes(model, expectation(load_recipe(RECIPES / f"{name}.toml")).passes)
        with pytest.raises(UnsupportedOperator, match=what):
            check_rewrites(api.load(path), model, samples=1, folds=report.folds)


@pytest.mark.parametrize("name", sorted(p.stem for p in RECIPES.glob("*.toml") if p.stem not in NOT_LOCAL))
def test_every_recipes_rewrites_pass_the_local_check(name, tmp_path):
    """Kept names whose values change (a scale folded into the layers before a CONCATENATION, a
    pre-activation batch norm moved backward) grow their regions until the outputs agree."""
    from bnfold.recipe.chef import load_recipe
    from bnfold.recipe.rules import expectation
    from bnfold.values.diff import Tolerance

    path = str(build_recipe(name, tmp_path))
    model = api.load(path)
    expect = expectation(load_recipe(RECIPES / f"{name}.toml"))
    report = api.apply_passes(model, expect.passes)
    original = api.load_reference(path, report)  # with the interface change the passes made, if any
    result = check_rewrites(
        original, model, samples=2, tolerance=Tolerance(expect.rtol, expect.atol), folds=report.folds
    )
    assert result.passed, result.table()
    tied = [f for r in result.regions for f in r.folds]
    assert len(tied) == len(report.folds)  # every fold belongs to exactly one checked rewrite


def test_library_check_options_and_report(tmp_path):
    import bnfold

    src = with_custom_op(tmp_path)
    with pytest.raises(CannotVerify):
        bnfold.optimize(src, check=2, check_mode="whole")
    result = bnfold.optimize(src, check=2)
    check = result.report["check"]
    assert check["mode"] == "local" and check["passed"] and check["rtol"] == 1e-5 and len(check["rewrites"]) == 1
