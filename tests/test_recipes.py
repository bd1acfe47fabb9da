"""Every recipe (recipes/*.toml): build it in its format, optimize it with its [expect] passes,
check the operator-count rules, and value-diff the optimized model against the original within
the recipe's tolerance on normal(0, 2) inputs (LiteRT when it can run the model, else the
reference interpreter). New recipes are picked up by the glob."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold import api
from bnfold.check import interpreter, litert
from bnfold.check.backend import runners
from bnfold.check.diff import check_models, random_inputs
from bnfold.errors import ModelError
from bnfold.io.reader import read_model
from bnfold.io.writer import save_model
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.recipe.rules import broken_rules, expectation

from conftest import RECIPES

RECIPE_NAMES = sorted(p.stem for p in RECIPES.glob("*.toml"))
SAMPLES = 2


def written_recipe(name: str, tmp_path):
    """The recipe built in its own format, written to a file and read back."""
    recipe = load_recipe(RECIPES / f"{name}.toml")
    fmt = recipe_format(recipe)
    path = tmp_path / f"{name}{fmt.extension}"
    save_model(build(recipe, fmt, where=name), str(path), fmt)
    return recipe, path


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_recipe(name, tmp_path):
    recipe, path = written_recipe(name, tmp_path)
    expect = expectation(recipe)
    model = read_model(str(path))
    api.optimize(model, expect.passes)
    assert broken_rules(model, expect.rules) == []
    optimized = tmp_path / f"opt{path.suffix}"
    save_model(model, str(optimized), model.format)
    result = check_models(read_model(str(path)), read_model(str(optimized)), samples=SAMPLES, seed=1,
                          rtol=expect.rtol, atol=expect.atol)
    assert result.passed, f"{result.backend}: {result.failure_message()}\n{result.table()}"


def _litert_runs(model) -> bool:
    try:
        runners([model], "litert")
        return True
    except ModelError:
        return False


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_reference_interpreter_agrees_with_litert_on_recipe(name, tmp_path):
    _, path = written_recipe(name, tmp_path)
    model = read_model(str(path))
    inputs = random_inputs(model.graphs[0], 1, seed=2)[0]
    got = interpreter.run(model, inputs)
    assert all(np.isfinite(g).all() for g in got if g.dtype.kind == "f")
    if not _litert_runs(model):  # Circle-only operators: the reference interpreter is the only backend
        assert interpreter.unsupported_kinds(model) == []
        return
    want = litert.run(model, inputs)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
