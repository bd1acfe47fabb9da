"""remove_unnecessary_concat: a one-input CONCATENATION goes, its readers read its input (values
equal in LiteRT); with an activation, as a graph output, or with two inputs it stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_unnecessary_concat"
SHAPE = [1, 4, 5, 6]


def _net(*, act="NONE", inputs=1, output_too=False) -> Net:
    """x -> RELU -> r -> CONCATENATION([r] * inputs) -> c -> TANH -> y."""
    n = Net()
    r = n.op("RELU", [n.input("x", SHAPE)], "r", SHAPE)
    c = n.op("CONCATENATION", [r] * inputs, "c", SHAPE[:3] + [SHAPE[3] * inputs], axis=3, fused_activation_function=act)
    n.outputs = [n.op("TANH", [c], "y", SHAPE[:3] + [SHAPE[3] * inputs])] + (["c"] if output_too else [])
    return n


def test_a_one_input_concatenation_goes():
    model, report = optimize_and_compare(_net().recipe(), [PASS], {"CONCATENATION": 0, "RELU": 1, "TANH": 1})
    assert model.graphs[0].ops[1].inputs[0].name == "r" and report.folds[0]["pass"] == PASS


@pytest.mark.parametrize(
    "case, kw, reason",
    [
        ("activation", {"act": "RELU6"}, "fused RELU6"),
        ("graph_output", {"output_too": True}, "graph output"),
    ],
)
def test_it_stays_with_a_reason(case, kw, reason):
    # LiteRT refuses to load a CONCATENATION with a fused activation: that case is not run
    model, report = optimize_and_compare(
        _net(**kw).recipe(), [PASS], {"CONCATENATION": 1}, numerics=case != "activation"
    )
    assert not report.folds
    assert_said(report, PASS, reason)


def test_two_inputs_are_a_real_concatenation():
    model, report = optimize_and_compare(_net(inputs=2).recipe(), [PASS], {"CONCATENATION": 1})
    assert not report.folds
    assert_said(report, PASS, None)
