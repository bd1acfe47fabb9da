"""remove_fakequant (lossy, as ONE's): FAKE_QUANT goes; inside its range the output moves by at most
half a step, which LiteRT shows; the fold says it is lossy and the step it removed; the pass is
never in the default set and a run that used it has its error measured."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bn_models import Net, build_copy, inputs_for
from bnfold import api
from bnfold.cli import run
from bnfold.engine import registry
from bnfold.recipe.chef import build
from bnfold.values import litert
from conftest import build_recipe

PASS = "remove_fakequant"


def fake_quant_net(output_is_fake_quant=False) -> Net:
    """x [2, 9, 4] -> TANH -> FAKE_QUANT([-1, 1], 8 bits) -> f -> [EXP ->] y."""
    n = Net()
    n.input("x", [2, 9, 4])
    h = n.op("TANH", ["x"], "h", [2, 9, 4])
    f = n.op("FAKE_QUANT", [h], "f", [2, 9, 4], min=-1.0, max=1.0, num_bits=8, narrow_range=False)
    if not output_is_fake_quant:
        n.outputs = [n.op("EXP", [f], "y", [2, 9, 4])]
    return n


def test_fake_quant_goes_and_its_error_is_half_a_step():
    recipe = fake_quant_net(output_is_fake_quant=True).recipe()
    original, model = build(recipe), build(recipe)
    report = api.apply_passes(model, [PASS])
    assert model.op_counts().get("FAKE_QUANT", 0) == 0
    [fold] = report.folds
    assert fold["lossy"] is True and abs(fold["step"] - 2 / 255) < 1e-9
    assert [t.name for t in model.graphs[0].outputs] == ["f"]
    xs = inputs_for(original)
    want, have = litert.run(original, xs)[0], litert.run(build_copy(model), xs)[0]
    assert 0 < np.abs(want - have).max() <= 1 / 255 + 1e-6


def test_lossy_and_opt_in():
    spec = registry.BY_NAME[PASS]
    assert not spec.exact and not spec.default


def test_cli_measures_and_reports_the_error(tmp_path, capsys):
    path = build_recipe("Net_Conv_FakeQuant_000", tmp_path)
    out, rep = tmp_path / "o.tflite", tmp_path / "r.json"
    assert run(["optimize", str(path), str(out), "--report", str(rep), f"--{PASS}"]) == 0
    assert f"warning: {PASS} changed the model (LOSSY): max abs err" in capsys.readouterr().out
    [note] = json.loads(rep.read_text())["notes"]
    assert note["measured"] and 0 < note["max_abs"] <= 128 / 255 / 2 + 1e-5


@pytest.mark.parametrize("low,high,bits", [(-1.0, 1.0, 8), (-0.3, 2.7, 4), (0.1, 5.0, 8), (-6.0, -0.5, 7)])
def test_the_reference_interpreter_computes_fake_quant_as_litert(low, high, bits):
    """So the per-rewrite check (values/local.py) runs models holding FAKE_QUANT."""
    from bnfold.reference.interpreter import Interpreter

    recipe = fake_quant_net(output_is_fake_quant=True).recipe()
    [op] = [o for o in recipe["operation"] if o["type"] == "FAKE_QUANT"]
    op["options"] = dict(min=low, max=high, num_bits=bits, narrow_range=False)
    model = build(recipe)
    xs = [np.random.default_rng(0).normal(0, 3, (2, 9, 4)).astype(np.float32)]
    np.testing.assert_array_equal(Interpreter(model).run(xs)[0], litert.run(model, xs)[0])
