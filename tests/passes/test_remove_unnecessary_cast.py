"""remove_unnecessary_cast: a CAST to its input's own type goes; a CAST that converts stays, and a
same-type CAST that is a model output of a graph input stays (nothing else can write it)."""

from __future__ import annotations

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_unnecessary_cast"
SHAPE = [2, 5, 3]


def cast_net(dtype="FLOAT32", *, output=False) -> Net:
    n = Net()
    n.input("x", SHAPE)
    r = n.op("RELU", ["x"], "r", SHAPE)
    n.tensor("c", SHAPE, dtype)
    c = n.op("CAST", ["x" if output else r], "c", SHAPE)
    n.outputs = (
        [c] if output else [n.op("CAST", [c], "y", SHAPE) if dtype != "FLOAT32" else n.op("TANH", [c], "y", SHAPE)]
    )
    return n


def test_a_cast_to_the_same_type_goes():
    model, report = optimize_and_compare(cast_net().recipe(), [PASS], {"CAST": 0, "TANH": 1})
    assert model.graphs[0].ops[-1].inputs[0].name == "r" and report.folds[0]["dtype"] == "FLOAT32"


def test_a_converting_cast_and_a_graph_input_cast_to_an_output_stay():
    optimize_and_compare(cast_net("INT32").recipe(), [PASS], {"CAST": 2})
    _, report = optimize_and_compare(cast_net(output=True).recipe(), [PASS], {"CAST": 1})
    assert report.folds == []
    assert_said(report, PASS, "'c' is a model output, and 'x' is a graph input, a constant or read elsewhere")
