"""onert (ONE's runtime, pip `onert`) as a backend of `check`, `run`, `optimize --check` and
`recipe test`: it runs Circle models first under "auto", both models of a comparison always in
it, and where it is not installed `--backend onert` is a usage error."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold import api
from bnfold.cli import run
from bnfold.io.formats import TFLITE
from bnfold.io.reader import read_model
from bnfold.io.writer import serialize
from bnfold.recipe.chef import build
from bnfold.values import onert
from bnfold.values.backend import Backends
from bnfold.values.h5io import read_h5
from conftest import DATA, RECIPES, build_recipe
from decoder_models import rms_net

needs_onert = pytest.mark.skipif(onert.missing() is not None, reason=str(onert.missing()))
CIRCLE = DATA / "torch_resblock_nchw.circle"  # TICO's export: NCHW, conv + batch norm + residual

HARD_SWISH_RECIPE = """
input = ["x"]
output = ["y"]
[[operand]]
name = "x"
shape = [1, 4, 4, 3]
[[operand]]
name = "y"
shape = [1, 4, 4, 3]
[[operation]]
type = "HARD_SWISH"
inputs = ["x"]
outputs = ["y"]
"""


@needs_onert
def test_onert_runs_ticos_export_as_torch_computed_it(tmp_path):
    x = np.load(DATA / "torch_resblock_nchw.input.npy")
    (out,) = onert.Session(read_model(str(CIRCLE)))([x])
    np.testing.assert_allclose(out, np.load(DATA / "torch_resblock_nchw.ref.npy"), rtol=0, atol=1e-5)


@needs_onert
def test_auto_runs_a_circle_comparison_in_onert_and_a_tflite_one_in_litert():
    circle = read_model(str(CIRCLE))
    assert Backends([circle, circle]).description == "onert (cpu backend)"
    tflite = read_model(str(DATA / "bn_conv_valid.tflite"))
    assert Backends([tflite, tflite]).description.startswith("litert")


@needs_onert
def test_a_tflite_model_optimized_into_circle_is_checked_in_onert(tmp_path, capsys):
    """-O1 writing a TFLite RMS norm as Circle makes an RMS_NORM, which LiteRT cannot run: auto
    compares the two in onert (which loads the TFLite original too), not in bnfold's interpreter."""
    source = tmp_path / "rms.tflite"
    with open(source, "wb") as f:
        serialize(build(rms_net().recipe(), TFLITE), f, TFLITE)
    out = tmp_path / "o.circle"
    assert run(["optimize", str(source), str(out), "-O1", "--check", "2"]) == 0
    printed = capsys.readouterr().out
    assert "RMS_NORM" in printed and "check: 2 sample(s) on onert (cpu backend)" in printed, printed
    assert Backends([read_model(str(source)), read_model(str(out))]).description == "onert (cpu backend)"


@needs_onert
def test_check_and_optimize_check_say_onert_ran(tmp_path, capsys):
    out = tmp_path / "o.circle"
    assert run(["optimize", str(CIRCLE), str(out), "--check", "2", "--backend", "onert"]) == 0
    assert "check: 2 sample(s) on onert (cpu backend)" in capsys.readouterr().out
    assert run(["check", str(CIRCLE), str(out), "--samples", "2"]) == 0
    printed = capsys.readouterr().out
    assert "backend onert (cpu backend), 2 sample(s)" in printed
    scaled = float(printed.splitlines()[1].split()[3])
    assert 0 < scaled < 1e-5  # the folds changed the float rounding, nothing more


@needs_onert
def test_run_in_onert_writes_the_models_values(tmp_path):
    ran = api.run(CIRCLE, samples=1, write_input=tmp_path / "in.h5", output=tmp_path / "out.h5", backend="onert")
    assert ran.backend == "onert (cpu backend)"
    ((_, x),) = read_h5(str(tmp_path / "in.h5"))
    ((_, y),) = read_h5(str(tmp_path / "out.h5"))
    (expected,) = onert.Session(read_model(str(CIRCLE)))([x])
    np.testing.assert_array_equal(y, expected)


@needs_onert
def test_a_model_onert_cannot_load_is_run_elsewhere_and_never_compared_across_runtimes(tmp_path, capsys):
    recipe = tmp_path / "HardSwish.toml"
    recipe.write_text(HARD_SWISH_RECIPE)
    path = build_recipe("HardSwish", tmp_path, ".circle", directory=tmp_path)
    model = read_model(str(path))
    with pytest.raises(Exception, match="onert cannot load the model: Unsupported operation: HARD_SWISH"):
        onert.Session(model)
    both = Backends([read_model(str(CIRCLE)), model])  # onert loads one of the two: neither runs there
    assert both.kind == "litert"
    assert run(["check", str(path), str(path), "--backend", "onert"]) == 4
    assert "onert cannot load the model: Unsupported operation: HARD_SWISH" in capsys.readouterr().err


@needs_onert
def test_recipe_test_in_onert(tmp_path, capsys):
    recipe = tmp_path / "Net_DwConv_BN_000.toml"
    recipe.write_text('format = "circle"\n' + (RECIPES / "Net_DwConv_BN_000.toml").read_text())
    assert run(["recipe", "test", str(recipe), "--backend", "onert"]) == 0
    assert "onert (cpu backend)" in capsys.readouterr().out


def test_without_onert_the_backend_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setattr(onert, "missing", lambda: "onert is not installed (ImportError: test)")
    assert run(["check", str(CIRCLE), str(CIRCLE), "--backend", "onert"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--backend onert: onert is not installed" in err
    assert Backends([read_model(str(CIRCLE))]).kind == "litert"  # auto goes on without it


def test_backend_without_check_is_a_usage_error(tmp_path, capsys):
    assert run(["optimize", str(CIRCLE), str(tmp_path / "o.circle"), "--backend", "litert"]) == 2
    assert "go with --check N" in capsys.readouterr().err
