"""The command line: commands, one-cmds configuration, flags generated from the registry, exit codes."""

from __future__ import annotations

import json
import shutil

import pytest

from bnfold.cli import run
from bnfold.engine import registry
from bnfold.io.reader import read_model
from conftest import DATA, build_recipe, object_tree, tree_diff


def test_passes_lists_every_registered_pass(capsys):
    assert run(["passes"]) == 0
    out = capsys.readouterr().out
    for spec in registry.PASSES:
        assert spec.name in out
    assert "fuse_batchnorm_with_conv" in out and "[exact, default, O1]" in out
    assert "fuse_batchnorm_with_fc" in out and "[exact, default]" in out  # bnfold's own: not in ONE's O1


def test_passes_marks_every_one_option_implemented_or_not(capsys):
    from bnfold import one

    assert run(["passes"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line and "  [" in line}
    for name in one.PASS_OPTIONS - set(registry.PARAMETERS):
        implemented = name in registry.BY_NAME
        tag = rows[name].split("[", 1)[1].split("]", 1)[0]
        assert ("not in bnfold" not in tag) == (implemented or name in one.REFUSED), rows[name]
        assert (tag == "refused") == (name in one.REFUSED), rows[name]
        assert tag.endswith(", O1") == (name in one.O1), rows[name]
        assert tag.endswith(", ONE, -O1") == (name in one.O1_DECODER_ADDITIONS), rows[name]  # bnfold's -O1
        assert implemented <= (tag.endswith((", ONE", ", O1", ", -O1"))), rows[name]
    assert "[refused]" in rows["compress_weights_huffman"] and rows["fold_cast"].startswith("fold_cast ")
    assert rows["fuse_batchnorm_with_fc"].split("[", 1)[1].startswith("exact, default]")  # bnfold's own


def test_every_registered_pass_has_a_flag(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    for spec in registry.PASSES:
        assert run(["optimize", str(src), str(tmp_path / "o.tflite"), f"--{spec.name}", "-q"]) == 0


def test_optimize_default_set_folds_and_prints_table(tmp_path, capsys):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    out = tmp_path / "out.tflite"
    report = tmp_path / "r.json"
    assert run(["optimize", str(src), str(out), "--report", str(report)]) == 0
    text = capsys.readouterr().out
    assert "operator" in text and "before" in text and "after" in text
    assert "fuse_batchnorm_with_conv: 1 folded, 0 skipped" in text
    assert read_model(str(out)).op_counts() == {"CONV_2D": 1}
    data = json.loads(report.read_text())
    assert data["folds"][0]["pass"] == "fuse_batchnorm_with_conv"


def test_empty_pass_list_is_a_lossless_rewrite(tmp_path):
    src = DATA / "resnet_v2_mini.tflite"
    out = tmp_path / "same.tflite"
    assert run(["optimize", str(src), str(out), "--passes", "", "-q"]) == 0
    assert tree_diff(object_tree(src), object_tree(out)) == []


def test_one_cmds_config(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    out = tmp_path / "cfg.opt.tflite"
    cfg = tmp_path / "one.cfg"
    cfg.write_text(
        f"[onecc]\none-optimize=True\n[one-optimize]\ninput_path={src}\noutput_path={out}\n"
        "fuse_batchnorm_with_conv=True\nfuse_activation_function=False\n"
    )
    assert run(["optimize", "--config", str(cfg), "-q"]) == 0
    assert read_model(str(out)).op_counts() == {"CONV_2D": 1}


def test_config_with_unknown_pass_is_a_usage_error(tmp_path, capsys):
    cfg = tmp_path / "one.cfg"
    cfg.write_text("[one-optimize]\ninput_path=a.tflite\noutput_path=b.tflite\nfuse_everything=True\n")
    assert run(["optimize", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fuse_everything" in err[0]


def test_only_the_named_passes_run(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    out = tmp_path / "o.tflite"
    assert run(["optimize", str(src), str(out), "--fuse_activation_function", "-q"]) == 0
    assert read_model(str(out)).op_counts() == {"CONV_2D": 1, "MUL": 1, "ADD": 1}


@pytest.mark.parametrize(
    "args, code, words",
    [
        (["optimize", "missing.tflite", "o.tflite"], 2, "no such file"),
        (["optimize", "{src}", "o.tflite", "--passes", "nope"], 2, "unknown pass or option 'nope'"),
        (["optimize", "{src}", "o.onnx"], 2, "extension"),
        (["optimize", "{src}", "{tmp}/missing/o.tflite"], 2, "does not exist"),
        (["optimize", "{src}", "{src}"], 2, "--in-place"),
        (["frobnicate"], 2, "frobnicate"),
        (["optimize"], 2, "need IN and OUT"),
    ],
)
def test_errors_are_one_line_with_exit_code(args, code, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "in.tflite"
    shutil.copy(DATA / "bn_conv_valid.tflite", src)
    before = src.read_bytes()
    argv = [a.format(src=src, tmp=tmp_path) for a in args]
    assert run(argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bnfold: error:") and words in err[0]
    assert src.read_bytes() == before
    assert not list(tmp_path.glob(".bnfold-*")) and not (tmp_path / "o.tflite").exists()


def test_in_place_overwrites_only_when_asked(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    assert run(["optimize", str(src), "--in-place", "-q"]) == 0
    assert read_model(str(src)).op_counts() == {"CONV_2D": 1}


def test_inspect_counts_and_operators(capsys):
    assert run(["inspect", str(DATA / "resnet_v2_mini.tflite"), "--operators"]) == 0
    out = capsys.readouterr().out
    assert "CONV_2D                  22" in out and "MUL                      6" in out
    assert "FULLY_CONNECTED" in out and "[RELU]" in out


def test_convert_both_ways(tmp_path, capsys):
    circle = tmp_path / "m.circle"
    back = tmp_path / "m.tflite"
    assert run(["convert", str(DATA / "bn_conv_valid.tflite"), str(circle)]) == 0
    assert read_model(str(circle)).format.name == "circle"
    assert run(["convert", str(circle), str(back)]) == 0
    assert tree_diff(object_tree(DATA / "bn_conv_valid.tflite"), object_tree(back)) == []


def test_module_entry_point(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "bnfold", "passes"], capture_output=True, text=True)
    assert result.returncode == 0 and "fuse_batchnorm_with_conv" in result.stdout
