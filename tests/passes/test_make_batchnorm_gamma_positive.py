"""make_batchnorm_gamma_positive: lossy, opt-in; negative MUL scales before ADD(RELU) become 1e-10,
and the CLI measures and reports the output error whenever it changed the model."""

from __future__ import annotations

import json

import numpy as np

from bn_models import Net, assert_said, optimize_and_compare
from bnfold import api
from bnfold.cli import run
from bnfold.engine import registry
from bnfold.io.reader import read_model
from conftest import build_recipe

PASS = "make_batchnorm_gamma_positive"


def test_registered_lossy_and_not_default():
    spec = registry.BY_NAME[PASS]
    assert not spec.exact and not spec.default and PASS not in registry.default_passes()
    names = [p.name for p in registry.PASSES]
    assert names.index(PASS) < names.index("fuse_preactivation_batchnorm")


def test_negative_scales_become_tiny_positive_only_before_relu(tmp_path):
    path = build_recipe("Net_Preactivation_BN_001", tmp_path)
    model = read_model(str(path))
    report = api.apply_passes(model, [PASS])
    g = model.graphs[0]
    [fold] = [f for f in report.folds if f["pass"] == PASS]
    assert fold["output"] == "ac" and fold["negative_channels"] == [3, 7]
    gamma = next(op for op in g.ops if op.kind == "MUL" and op.outputs[0].name == "gcx").inputs[1].data.reshape(-1)
    original = read_model(str(path)).graphs[0].tensor("gc").data.reshape(-1)
    np.testing.assert_array_equal(gamma[[3, 7]], np.float32(1e-10))
    keep = [i for i in range(10) if i not in (3, 7)]
    np.testing.assert_array_equal(gamma[keep], original[keep])  # zeros and positives untouched


def test_cli_measures_and_reports_the_error(tmp_path, capsys):
    path = build_recipe("Net_Preactivation_BN_001", tmp_path)
    out, rep = tmp_path / "o.tflite", tmp_path / "r.json"
    assert (
        run(["optimize", str(path), str(out), "--report", str(rep), f"--{PASS}", "--fuse_preactivation_batchnorm"]) == 0
    )
    text = capsys.readouterr().out
    assert f"warning: {PASS} changed the model (LOSSY): max abs err" in text
    [note] = json.loads(rep.read_text())["notes"]
    assert note["measured"] and note["samples"] == 3 and note["max_abs"] > 1e-4 and note["max_rel"] > 0
    assert read_model(str(out)).op_counts()["MUL"] == 1  # BN_c now folds; BN_a (scale 0, SAME) still stays


def test_no_note_when_nothing_lossy_happened(tmp_path, capsys):
    path = build_recipe("Net_Preactivation_BN_000", tmp_path)
    rep = tmp_path / "r.json"
    assert run(["optimize", str(path), str(tmp_path / "o.tflite"), "--report", str(rep), f"--{PASS}"]) == 0
    assert "LOSSY" not in capsys.readouterr().out
    assert json.loads(rep.read_text())["notes"] == []


def test_batch_norm_whose_product_is_read_elsewhere_keeps_its_negative_scales_and_says_why():
    """x -> MUL(γ, one negative) -> g -> ADD(β, RELU) -> y, g a model output too: the chain cannot
    fold, so its scales stay as they are, and the report says why."""
    n = Net()
    n.input("x", [1, 4, 4, 3])
    g = n.op("MUL", ["x", n.const("gamma", [3], values=[1.5, -0.5, 2.0])], "g", [1, 4, 4, 3])
    y = n.op("ADD", [g, n.const("beta", [3])], "y", [1, 4, 4, 3], fused_activation_function="RELU")
    n.outputs = [y, g]
    model, report = optimize_and_compare(n.recipe(), [PASS], {"MUL": 1, "ADD": 1})
    assert report.folds == [] and model.graphs[0].tensor("gamma").data.tolist() == [1.5, -0.5, 2.0]
    assert_said(report, PASS, "negative scales kept: 'g' is a model output, so it must stay computed")
