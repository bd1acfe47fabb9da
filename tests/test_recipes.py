"""Every recipe (recipes/*.toml) through `bnfold recipe test`'s own code path: build it in its
format, store input.h5/expected.h5 from the unoptimized model, optimize with its [expect] passes,
check the operator-count rules, and compare the optimized model's outputs with expected.h5 within
the recipe's tolerance (LiteRT when it can run the model, else the reference interpreter). New
recipes are picked up by the glob."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.errors import CannotVerify
from bnfold.io.reader import read_model
from bnfold.io.writer import save_model
from bnfold.recipe import ci as recipe_ci
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.values import interpreter
from bnfold.values.backend import Backends
from bnfold.values.diff import random_inputs
from conftest import RECIPES

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
