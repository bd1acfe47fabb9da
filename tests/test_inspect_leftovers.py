"""`bnfold inspect MODEL --leftovers [--report R.json]`: the batch-norm candidates of any model, where
they sit, and (with the report of the optimize run that wrote MODEL) why each stayed."""

from __future__ import annotations

import json

import numpy as np

from bnfold.cli import run
from bnfold.io.atomic import save_model
from bnfold.io.formats import TFLITE
from bnfold.ir.graph import Graph, Options
from bnfold.ir.model import Model
from conftest import DATA, build_recipe

FIXTURE = str(DATA / "conv_relu_bn.tflite")  # Keras Conv2D(RELU) -> BN: the batch norm must stay
MUL = "sequential_8_1/batch_normalization_9_1/batchnorm/mul_1"


def _blocks(out: str) -> list[str]:
    """The listing, one text block per candidate."""
    listing = out.split("batch-norm candidates: ", 1)[1]
    return listing.split("\n  subgraph ")[1:]


def test_candidates_of_a_model_with_where_they_sit(capsys):
    assert run(["inspect", FIXTURE, "--leftovers"]) == 0
    out = capsys.readouterr().out
    assert "batch-norm candidates: 2" in out
    mul, add = _blocks(out)
    assert mul.startswith(f"0 #1 MUL -> {MUL!r}")
    assert "FLOAT32[6], along axis 3 of [1, 8, 8, 6]" in mul
    assert "data from CONV_2D #0; read by ADD #2" in mul and "chain MUL #1 -> ADD #2" in mul
    assert add.startswith("0 #2 ADD -> ") and "data from MUL #1; read by the graph output" in add
    assert "stays:" not in out  # no report, no reasons


def test_with_the_report_of_the_run_each_says_why_it_stayed(tmp_path, capsys):
    out, rep = tmp_path / "o.tflite", tmp_path / "r.json"
    assert run(["optimize", FIXTURE, str(out), "--report", str(rep), "-q"]) == 0
    assert run(["inspect", str(out), "--leftovers", "--report", str(rep)]) == 0
    blocks = _blocks(capsys.readouterr().out)
    assert len(blocks) == 2 == len(json.loads(rep.read_text())["skips"])
    for block in blocks:
        assert (
            "stays: the layer has a fused RELU, which sits between it and the chain [fuse_batchnorm_with_conv]" in block
        )


def test_swish_and_gating_multiplies_are_not_listed(tmp_path, capsys):
    model = Model(TFLITE, version=3)
    g = model.add_graph(Graph("main"))
    x, y, s, z, gate, out = (
        g.add_tensor(name, "FLOAT32", shape)
        for name, shape in (
            ("x", [1, 5, 7, 3]),
            ("y", [1, 5, 7, 4]),
            ("s", [1, 5, 7, 4]),
            ("z", [1, 5, 7, 4]),
            ("gate", [1, 1, 1, 4]),
            ("out", [1, 5, 7, 4]),
        )
    )
    g.inputs += [x, gate]
    g.outputs.append(out)
    g.add_op(
        "CONV_2D",
        [x, g.add_const("w", np.ones((4, 1, 1, 3))), g.add_const("b", np.zeros(4))],
        [y],
        Options(
            "Conv2DOptions",
            padding=0,
            strideW=1,
            strideH=1,
            fusedActivationFunction=0,
            dilationWFactor=1,
            dilationHFactor=1,
        ),
    )
    g.add_op("LOGISTIC", [y], [s], None)
    g.add_op("MUL", [y, s], [z], Options("MulOptions", fusedActivationFunction=0))  # swish
    g.add_op("MUL", [z, gate], [out], Options("MulOptions", fusedActivationFunction=0))  # gating
    path = tmp_path / "swish.tflite"
    save_model(model, str(path), model.format)
    assert run(["inspect", str(path), "--leftovers"]) == 0
    assert "batch-norm candidates: 0" in capsys.readouterr().out


def test_a_report_of_another_model_is_said_to_be_one(tmp_path, capsys):
    rep = tmp_path / "r.json"
    other = build_recipe("Neg_Conv_BN_Activation_000", tmp_path)  # its MUL and ADD stay, named unlike FIXTURE's
    assert run(["optimize", str(other), str(tmp_path / "o.tflite"), "--report", str(rep), "-q"]) == 0
    assert run(["inspect", FIXTURE, "--leftovers", "--report", str(rep)]) == 0
    out = capsys.readouterr().out
    assert out.count("stays: (no entry in the report") == 2
    assert "warning: 2 skip entries of" in out and "name no candidate of this model" in out


def test_bad_report_arguments_are_usage_errors(tmp_path, capsys):
    not_json, not_report = tmp_path / "a.json", tmp_path / "b.json"
    not_json.write_text("{")
    not_report.write_text('{"skips": 3}')
    for args, words in (
        (["--report", str(not_report)], "--report needs --leftovers"),
        (["--leftovers", "--report", str(not_json)], "not a JSON report"),
        (["--leftovers", "--report", str(not_report)], "not a bnfold optimize report"),
        (["--leftovers", "--report", str(tmp_path / "none.json")], "none.json: no such file"),
    ):
        assert run(["inspect", FIXTURE, *args]) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("bnfold: error: ") and words in line


def test_readme_example_is_what_the_commands_print(tmp_path, capsys, monkeypatch):
    readme = (DATA.parent.parent / "README.md").read_text()
    block = readme.split("$ bnfold inspect out.tflite --leftovers --report r.json\n", 1)[1].split("```", 1)[0]
    shown = [line for line in block.splitlines() if line.strip() != "..."]
    monkeypatch.chdir(tmp_path)
    assert run(["optimize", FIXTURE, "out.tflite", "--report", "r.json", "-q"]) == 0
    assert run(["inspect", "out.tflite", "--leftovers", "--report", "r.json"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert shown and all(line in printed for line in shown), [line for line in shown if line not in printed]


def test_every_transpose_left_is_listed_with_why_it_stayed(tmp_path, capsys):
    """A TICO export: what the layout propagation leaves (the input's transpose before the first
    conv, the output's after the last) is listed with its reason."""
    out, rep = tmp_path / "o.circle", tmp_path / "r.json"
    assert (
        run(["optimize", str(DATA / "zoo" / "tico_densenet_concat.circle"), str(out), "--report", str(rep), "-q"]) == 0
    )
    assert run(["inspect", str(out), "--leftovers", "--report", str(rep)]) == 0
    listing = capsys.readouterr().out.split("transposes: ", 1)[1]
    assert listing.startswith("2\n")
    assert "data from a graph input; read by CONV_2D" in listing
    assert "stays: reader CONV_2D #1 cannot take the other layout" in listing
    assert "read by the graph output" in listing and "stays: it reaches graph output" in listing
