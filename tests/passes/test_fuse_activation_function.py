"""fuse_activation_function: a standalone RELU/RELU6/RELU_N1_TO_1 into its producer's fused
activation (ONE's combination table), with its guards."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import said
from bnfold import api
from bnfold.io.formats import TFLITE
from bnfold.io.reader import read_model
from bnfold.ir.graph import Graph, Options
from bnfold.ir.model import Model
from bnfold.ir.ops import FUSED_ACTIVATIONS as ACTIVATIONS
from bnfold.values import litert

PASS = "fuse_activation_function"


def _conv_then(
    tmp_path, acts, *, conv_act="NONE", extra_reader=False, conv_output_is_graph_output=False, producer="CONV_2D"
):
    """x -> producer(conv_act) -> h -> acts[0] -> ... -> y (all shapes different sizes)."""
    rng = np.random.default_rng(11)
    model = Model(TFLITE, version=3)
    g = model.add_graph(Graph("main"))
    x = g.add_tensor("x", "FLOAT32", [1, 5, 7, 3])
    h = g.add_tensor("h", "FLOAT32", [1, 5, 7, 4] if producer == "CONV_2D" else [1, 5, 7, 3])
    if producer == "CONV_2D":
        g.add_op(
            "CONV_2D",
            [x, g.add_const("w", rng.normal(size=(4, 3, 3, 3))), g.add_const("b", rng.normal(size=4))],
            [h],
            Options(
                "Conv2DOptions",
                padding=0,
                strideW=1,
                strideH=1,
                fusedActivationFunction=ACTIVATIONS.index(conv_act),
                dilationWFactor=1,
                dilationHFactor=1,
            ),
        )
    else:  # an op without a fused activation
        g.add_op(producer, [x], [h], None)
    v = h
    outs = []
    for i, act in enumerate(acts):
        y = g.add_tensor(f"y{i}", "FLOAT32", h.shape)
        g.add_op(act, [v], [y], None)
        v = y
    outs.append(v)
    if extra_reader:
        z = g.add_tensor("z", "FLOAT32", h.shape)
        g.add_op("ABS", [h], [z], None)
        outs.append(z)
    if conv_output_is_graph_output:
        outs.append(h)
    g.inputs, g.outputs = [x], outs
    path = tmp_path / "m.tflite"
    api.save(model, str(path))
    return path


def _run(path, passes=(PASS,)):
    model = read_model(str(path))
    report = api.apply_passes(model, list(passes))
    rng = np.random.default_rng(5)
    original = read_model(str(path))
    for _ in range(2):
        x = rng.normal(0, 2, (1, 5, 7, 3)).astype(np.float32)
        for a, b in zip(litert.run(original, [x]), litert.run(model, [x])):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    return model, report


@pytest.mark.parametrize(
    "before, act, after",
    [
        ("NONE", "RELU", "RELU"),
        ("RELU", "RELU", "RELU"),
        ("RELU6", "RELU", "RELU6"),
        ("NONE", "RELU6", "RELU6"),
        ("RELU", "RELU6", "RELU6"),
        ("RELU6", "RELU6", "RELU6"),
        ("NONE", "RELU_N1_TO_1", "RELU_N1_TO_1"),
        ("RELU_N1_TO_1", "RELU_N1_TO_1", "RELU_N1_TO_1"),
    ],
)
def test_fuses_by_the_combination_table(tmp_path, before, act, after):
    model, report = _run(_conv_then(tmp_path, [act], conv_act=before))
    assert model.op_counts() == {"CONV_2D": 1}
    [conv] = model.graphs[0].ops
    assert conv.fused_activation == after and conv.outputs[0].name == "y0"
    assert [f["after"] for f in report.folds] == [after]


def test_relu_then_relu6_chain_collapses(tmp_path):
    model, _ = _run(_conv_then(tmp_path, ["RELU", "RELU6"]))
    assert model.op_counts() == {"CONV_2D": 1} and model.graphs[0].ops[0].fused_activation == "RELU6"


def _said_by_the_pass(report) -> list[str]:
    """What the pass said about the activations it left: a standalone RELU is no batch-norm
    candidate, so the run's report lists it in not_folded (the skips are batch-norm candidates')."""
    assert not [f for f in report.folds if f["pass"] == PASS]
    return said(report, PASS)


@pytest.mark.parametrize("before, act", [("RELU_N1_TO_1", "RELU"), ("RELU6", "RELU_N1_TO_1"), ("TANH", "RELU")])
def test_no_single_equivalent_is_skipped(tmp_path, before, act):
    if before == "TANH":  # LiteRT ignores a fused TANH on CONV_2D, so compare without running
        model = read_model(str(_conv_then(tmp_path, [act], conv_act=before)))
        report = api.apply_passes(model, [PASS])
    else:
        model, report = _run(_conv_then(tmp_path, [act], conv_act=before))
    assert model.op_counts()[act] == 1 and report.skips == []
    [why] = _said_by_the_pass(report)
    assert "no single equivalent" in why


def test_producer_with_another_reader_is_skipped(tmp_path):
    model, report = _run(_conv_then(tmp_path, ["RELU"], extra_reader=True))
    assert model.op_counts()["RELU"] == 1 and model.graphs[0].ops[0].fused_activation == "NONE"
    assert "other readers" in _said_by_the_pass(report)[0]


def test_producer_output_that_is_a_graph_output_is_skipped(tmp_path):
    model, report = _run(_conv_then(tmp_path, ["RELU"], conv_output_is_graph_output=True))
    assert model.op_counts()["RELU"] == 1
    assert "graph output" in _said_by_the_pass(report)[0]


def test_producer_kind_without_fused_activation_is_no_candidate(tmp_path):
    model, report = _run(_conv_then(tmp_path, ["RELU"], producer="ABS"))
    assert model.op_counts() == {"ABS": 1, "RELU": 1}
    assert _said_by_the_pass(report) == []  # no candidate: an ABS has no fused activation, nothing to say


def test_standalone_tanh_is_not_fused(tmp_path):
    model, report = _run(_conv_then(tmp_path, ["TANH"]))
    assert model.op_counts() == {"CONV_2D": 1, "TANH": 1} and report.folds == []
