"""How much a check proved (values/strength.py, issue 27): saturated, integer and constant outputs
are measured as such, said in the verdict and the report, and `--check-mode auto` checks the
rewrites under them one by one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnfold import cli
from bnfold.values.strength import Spread
from conftest import DATA, TEST_RECIPES, build_recipe

RECIPE = "Weak_Outputs_000"  # outputs: probability (saturated sigmoid), class (ARG_MAX), zero (constant)


def _strength(values, rtol=1e-5, atol=1e-5):
    spread = Spread("out")
    for v in values:
        spread.add(v)
    return spread.strength(rtol, atol)


def test_a_smooth_output_is_a_full_check():
    rng = np.random.default_rng(0)
    s = _strength([rng.normal(size=(4, 8)).astype(np.float32) for _ in range(3)])
    assert (s.level, s.varied, s.distinct) == ("full", 1.0, 1.0)


def test_a_saturated_sigmoid_is_weak():
    rng = np.random.default_rng(0)
    s = _strength([(0.5 + 0.5 * np.tanh(500 * rng.normal(size=(64,)))).astype(np.float32) for _ in range(3)])
    assert s.level == "weak" and s.distinct <= 3 / 64 and "distinct values" in s.why


def test_an_output_that_stays_within_the_tolerance_proves_nothing():
    base = np.linspace(1, 2, 50, dtype=np.float32)
    s = _strength([base, base + 1e-6, base - 1e-6])  # moves, but less than atol + rtol * max|a|
    assert (s.level, s.varied) == ("none", 0.0) and s.distinct == 1.0


def test_integer_outputs_are_weak_and_one_sample_measures_no_spread():
    s = _strength([np.array([3, 1, 2], dtype=np.int32), np.array([0, 1, 2], dtype=np.int32)])
    assert s.level == "weak" and s.varied == pytest.approx(1 / 3) and "integer output" in s.why
    one = _strength([np.arange(10, dtype=np.float32)])
    assert one.level == "full" and one.varied is None


def test_non_finite_values_do_not_break_the_measure():
    a = np.array([np.nan, np.inf, 1.0, 2.0], dtype=np.float32)
    s = _strength([a, a * 3])
    assert s.varied == 0.5 and s.level == "full"


@pytest.fixture(scope="module")
def weak_model(tmp_path_factory):
    return build_recipe(RECIPE, tmp_path_factory.mktemp("weak"), directory=TEST_RECIPES)


def _optimize(capsys, *argv):
    code = cli.run(["optimize", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out


def test_the_report_and_the_verdict_say_which_outputs_the_check_proved_little_about(weak_model, tmp_path, capsys):
    report = tmp_path / "r.json"
    code, out = _optimize(capsys, weak_model, tmp_path / "o.tflite", "--check", "3", "--report", report)
    assert code == 0
    check = json.loads(report.read_text())["check"]
    levels = {o["name"]: o["strength"]["level"] for o in check["outputs"]}
    assert levels == {"probability": "weak", "class": "weak", "zero": "none"}
    assert check["mode"] == "whole"
    # auto: the fold under them checked on its own, on the tensor it produces, which does vary
    weak = check["weak_outputs"]
    assert weak["outputs"] == ["class", "probability", "zero"] and weak["checked"] is True
    (rewrite,) = weak["rewrites"]
    assert rewrite["rewrite"] == "CONV_2D MUL ADD -> CONV_2D" and rewrite["passed"]
    assert rewrite["strength"]["bn"]["level"] == "full"
    line = next(x for x in out.splitlines() if x.startswith("check: weak"))
    assert (
        "'zero:0' proves nothing" in line
        and "'probability:0' barely varies" in line
        and "1 rewrite(s) under them checked one by one" in line
    )


def test_whole_mode_records_the_strength_without_the_per_rewrite_check(weak_model, tmp_path, capsys):
    report = tmp_path / "r.json"
    code, out = _optimize(
        capsys, weak_model, tmp_path / "o.tflite", "--check", "2", "--check-mode", "whole", "--report", report
    )
    assert code == 0
    check = json.loads(report.read_text())["check"]
    assert "weak_outputs" not in check and check["outputs"][2]["strength"]["level"] == "none"
    assert "not checked one by one" in out


def test_a_model_whose_outputs_vary_gets_no_caveat(tmp_path, capsys):
    report = tmp_path / "r.json"
    code, out = _optimize(
        capsys, DATA / "bn_conv_valid.tflite", tmp_path / "o.tflite", "--check", "3", "--report", report
    )
    assert code == 0 and "weak" not in out
    check = json.loads(report.read_text())["check"]
    assert "weak_outputs" not in check and {o["strength"]["level"] for o in check["outputs"]} == {"full"}


def test_check_command_prints_the_caveat_under_its_table(weak_model, capsys):
    assert cli.run(["check", str(weak_model), str(weak_model), "--samples", "3"]) == 0
    out = capsys.readouterr().out
    # named as check's table names them: as in the h5 files it reads and writes (ofm:0)
    assert "weak check: 'probability:0' barely varies" in out and "'zero:0' proves nothing" in out


def test_check_optimize_check_and_recipe_test_draw_the_same_samples_from_a_seed(weak_model, tmp_path, capsys):
    """One seed, one set of samples, whichever command draws them (issue 36): the figures of
    `optimize --check 2 --seed 6`, `check --seed 6 --samples 2` and `recipe test --seed 6
    --samples 2` are the same, to the bit (seed 6 is where the saturated output differs most)."""
    from bnfold import api
    from bnfold.recipe import ci

    out, report = tmp_path / "o.tflite", tmp_path / "r.json"
    code, said = _optimize(capsys, weak_model, out, "--check", "2", "--seed", "6", "--report", report)
    assert code == 0 and "check: 'probability:0' differ beyond it only where a steep or discrete output" in said
    check = json.loads(report.read_text())["check"]
    by_optimize = {o["name"]: o["max_abs"] for o in check["outputs"]}
    assert check["seed"] == 6 and by_optimize["probability"] > 2e-5  # settled by the rewrite under it
    by_check = {o.name: o.max_abs for o in api.check(weak_model, out, samples=2, seed=6).outputs}
    (outcome,) = ci.run_recipe_seeds(TEST_RECIPES / f"{RECIPE}.toml", tmp_path, [6], samples=2)
    by_recipe_test = {o.name: o.max_abs for o in outcome.result.outputs}
    assert by_optimize == by_check == by_recipe_test
    assert run_seed_usage(capsys) == 2


def run_seed_usage(capsys) -> int:
    """--seed without --check would check nothing: a usage error."""
    code = cli.run(["optimize", str(DATA / "bn_conv_valid.tflite"), "/tmp/never-written.tflite", "--seed", "3"])
    assert "--seed go with --check N" in capsys.readouterr().err
    return code


def test_a_wrong_fold_under_a_weak_output_still_fails(weak_model, tmp_path):
    """Only rounding is settled by the rewrites under a weak output: a fold whose bias is off by
    1e-3 fails the per-rewrite check too, so the whole check's failure stands."""
    from bnfold import api
    from bnfold.io.atomic import save_model

    model = api.load(weak_model)
    api.apply_passes(model)
    conv = next(op for op in model.graphs[0].ops if op.kind == "CONV_2D")
    conv.inputs[2].data = conv.inputs[2].data + np.float32(1e-3)
    model.changed = True
    wrong = tmp_path / "wrong.tflite"
    save_model(model, str(wrong), model.format)
    result = api.check(weak_model, wrong, samples=2, seed=6)
    assert not result.passed and not any(o.settled for o in result.outputs)
    assert {o.name for o in result.failing} >= {"probability"}
