"""common_subexpression_elimination: ops of one kind and options reading the same inputs (or equal
constants) are computed once; different options, different constants or a model output keep both."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "common_subexpression_elimination"
SHAPE = [3, 7, 5]


def twin_net(*, second_act="NONE", second_values=None, second_is_output=False) -> Net:
    """x -> EXP -> h; h -> MUL(c1) -> a; h -> MUL(c2) -> b; a + b -> y (c1, c2 equal by value)."""
    n = Net()
    n.input("x", SHAPE)
    h = n.op("EXP", ["x"], "h", SHAPE)
    c1 = n.const("c1", [5], values=[0.5, -1.0, 2.0, 3.0, -0.25])
    c2 = n.const("c2", [5], values=second_values or [0.5, -1.0, 2.0, 3.0, -0.25])
    a = n.op("MUL", [h, c1], "a", SHAPE)
    b = n.op("MUL", [h, c2], "b", SHAPE, fused_activation_function=second_act)
    n.outputs = [n.op("ADD", [a, b], "y", SHAPE)]
    if second_is_output:
        n.outputs.append(b)
    return n


def test_twin_ops_are_computed_once():
    model, report = optimize_and_compare(twin_net().recipe(), [PASS], {"MUL": 1, "ADD": 1, "EXP": 1})
    add = next(op for op in model.graphs[0].ops if op.kind == "ADD")
    assert [t.name for t in add.inputs] == ["a", "a"] and report.folds[0]["outputs"] == ["b"]


def test_a_chain_of_twins_collapses_in_one_run():
    n = Net()
    n.input("x", SHAPE)
    a1 = n.op("EXP", ["x"], "a1", SHAPE)
    b1 = n.op("EXP", ["x"], "b1", SHAPE)
    a2 = n.op("TANH", [a1], "a2", SHAPE)
    b2 = n.op("TANH", [b1], "b2", SHAPE)
    n.outputs = [n.op("SUB", [a2, b2], "y", SHAPE)]
    optimize_and_compare(n.recipe(), [PASS], {"EXP": 1, "TANH": 1, "SUB": 1})


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(second_act="RELU"), None),  # another computation: no twin, nothing to say
        (dict(second_values=[0.5, -1.0, 2.0, 3.0, 0.25]), None),
        (dict(second_is_output=True), "'b' is a model output: it keeps its own op"),
    ],
)
def test_ops_that_differ_or_are_seen_stay(case, reason):
    _, report = optimize_and_compare(twin_net(**case).recipe(), [PASS], {"MUL": 2})
    assert_said(report, PASS, reason)


def _twin_of_a_graph_output() -> dict:
    """x -> ABS -> a (a graph output nothing reads); x -> ABS -> b -> TANH -> t (b its twin)."""
    n = Net()
    x = n.input("x", SHAPE)
    a = n.op("ABS", [x], "a", SHAPE)
    b = n.op("ABS", [x], "b", SHAPE)
    n.outputs = [a, n.op("TANH", [b], "t", SHAPE)]
    return n.recipe()


def test_a_twin_is_kept_for_onert_where_a_graph_output_would_gain_a_reader():
    """Taking b out would make the TANH read the graph output a, which onert 0.1.0 may overwrite
    (engine/targets.py, unkept_output): kept for onert with that reason, and onert computes the original;
    for LiteRT the twin goes, with the same values."""
    import numpy as np

    from bnfold import api
    from bnfold.io.formats import CIRCLE
    from bnfold.recipe.chef import build
    from bnfold.values import litert, onert

    model = build(_twin_of_a_graph_output(), CIRCLE)
    report = api.apply_passes(model, [PASS], "onert")
    assert not report.folds and model.op_counts()["ABS"] == 2
    [refused] = report.to_dict()["target"]["refused"]
    assert refused["pass"] == PASS and refused["at"]["output"] == "b"
    assert refused["reason"] == "onert may overwrite a graph output another op reads ('a', read by TANH)"
    xs = [np.random.default_rng(0).normal(0, 2, SHAPE).astype(np.float32)]
    expected = litert.run(model, xs)
    if not onert.missing():
        for got, want in zip(onert.Session(model)(xs), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
    for_litert = build(_twin_of_a_graph_output(), CIRCLE)
    assert api.apply_passes(for_litert, [PASS], "litert").folds and for_litert.op_counts()["ABS"] == 1
    for got, want in zip(litert.run(for_litert, xs), expected, strict=True):
        np.testing.assert_array_equal(got, want)
