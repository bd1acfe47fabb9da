"""Every recipe (recipes/*.toml) through `bnfold recipe test`'s own code path: build it in its
format, store input.h5/expected.h5 from the unoptimized model, optimize with its [expect] passes,
check the operator-count rules, and compare the optimized model's outputs with expected.h5 within
the recipe's tolerance (LiteRT when it can run the model, else the reference interpreter). New
recipes are picked up by the glob."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.errors import CannotVerify
from bnfold.io.atomic import save_model
from bnfold.io.reader import read_model
from bnfold.recipe import ci as recipe_ci
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.reference import interpreter
from bnfold.values.backend import Backends
from bnfold.values.diff import random_inputs
from conftest import RECIPES, TEST_RECIPES

RECIPE_NAMES = sorted(p.stem for p in RECIPES.glob("*.toml"))


def written_recipe(name: str, tmp_path):
    """The recipe built in its own format, written to a file and read back."""
    recipe = load_recipe(RECIPES / f"{name}.toml")
    fmt = recipe_format(recipe)
    path = tmp_path / f"{name}{fmt.extension}"
    save_model(build(recipe, fmt, where=name), str(path), fmt)
    return recipe, path


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_recipe(name, tmp_path):
    outcome = recipe_ci.run_recipe_test(RECIPES / f"{name}.toml", tmp_path)
    assert outcome.passed, outcome.line() + ("" if outcome.result is None else "\n" + outcome.result.table())
    assert outcome.result.samples == recipe_ci.SAMPLES
    assert sorted(p.name for p in tmp_path.glob("*.h5")) == sorted(
        f"{name}.{kind}.{i}.h5" for kind in ("input", "expected") for i in range(recipe_ci.SAMPLES)
    )


def _litert_outputs(model, inputs):
    """LiteRT's outputs, or None when it cannot load or run the model."""
    try:
        return Backends([model], "litert")(inputs)[0]
    except CannotVerify:
        return None


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_reference_interpreter_agrees_with_litert_on_recipe(name, tmp_path):
    _, path = written_recipe(name, tmp_path)
    model = read_model(str(path))
    inputs = random_inputs(model.graphs[0], 1, seed=2)[0]
    got = interpreter.run(model, inputs)
    assert all(np.isfinite(g).all() for g in got if g.dtype.kind == "f")
    want = _litert_outputs(model, inputs)
    if want is None:  # Circle-only operators, BOOL REDUCE_MAX: the reference interpreter is the only backend
        assert interpreter.unsupported_kinds(model) == []
        return
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


SEEDS = range(21)
NEVER_VERIFIED = {"Shipped_000"}  # a custom operator and DENSIFY: nothing here runs it (exit 4, never a pass)


def test_every_recipe_passes_at_every_seed(tmp_path):
    """An exact fold never fails a check at any seed (issue 36): every recipe, seeds 0..20, one
    sample each, built and optimized once. Weak_Outputs_000 failed at seed 1 (and 6) before a
    difference at a weak output was judged by the rewrites under it (values/verify.py)."""
    failed = []
    for path in sorted(RECIPES.glob("*.toml")) + sorted(TEST_RECIPES.glob("*.toml")):
        for seed, outcome in zip(SEEDS, recipe_ci.run_recipe_seeds(path, tmp_path, list(SEEDS), samples=1)):
            if outcome.unverified and path.stem in NEVER_VERIFIED:
                continue
            if not outcome.passed:
                failed.append(f"seed {seed}: {outcome.line()}")
    assert not failed, "\n".join(failed)


def test_weak_outputs_fails_at_seed_1_by_the_whole_check_and_passes_by_rewrite(tmp_path):
    (outcome,) = recipe_ci.run_recipe_seeds(TEST_RECIPES / "Weak_Outputs_000.toml", tmp_path, [1], samples=1)
    (probability,) = [o for o in outcome.result.outputs if o.name == "probability"]
    assert outcome.passed and probability.settled and probability.scaled > 2e-5  # over rtol + atol of max 1
    assert "settled by rewrite" in outcome.line()
