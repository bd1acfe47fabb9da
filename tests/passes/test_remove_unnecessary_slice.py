"""remove_unnecessary_slice: a SLICE of the whole input (size -1 too) goes, a model output keeping
its name; one that cuts anything stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_unnecessary_slice"
SHAPE = [3, 7, 5]


def slice_net(begin, size, out_shape, *, slice_is_output=False) -> Net:
    """x -> EXP -> h -> SLICE(begin, size) -> s [-> TANH -> y]."""
    n = Net()
    n.input("x", SHAPE)
    h = n.op("EXP", ["x"], "h", SHAPE)
    s = n.op("SLICE", [h, n.ints("begin", begin), n.ints("size", size)], "s", out_shape)
    n.outputs = [s] if slice_is_output else [n.op("TANH", [s], "y", out_shape)]
    return n


@pytest.mark.parametrize("size", [[3, 7, 5], [-1, 7, -1], [-1, -1, -1]])
def test_slice_of_everything_goes(size):
    _, report = optimize_and_compare(slice_net([0, 0, 0], size, SHAPE).recipe(), [PASS], {"SLICE": 0, "EXP": 1})
    assert len(report.folds) == 1


def test_slice_that_is_a_model_output_keeps_its_name():
    model, _ = optimize_and_compare(
        slice_net([0, 0, 0], [3, 7, 5], SHAPE, slice_is_output=True).recipe(), [PASS], {"SLICE": 0}
    )
    graph = model.graphs[0]
    assert [t.name for t in graph.outputs] == ["s"] and graph.outputs[0].producer.kind == "EXP"


@pytest.mark.parametrize("begin, size, out", [([0, 1, 0], [3, 6, 5], [3, 6, 5]), ([1, 0, 0], [2, -1, 5], [2, 7, 5])])
def test_slice_that_cuts_stays(begin, size, out):
    _, report = optimize_and_compare(slice_net(begin, size, out).recipe(), [PASS], {"SLICE": 1})
    assert_said(report, PASS, None)  # no candidate


def test_slice_of_everything_from_a_graph_input_into_a_graph_output_stays_and_says_why():
    n = Net()
    n.input("x", SHAPE)
    n.outputs = [n.op("SLICE", ["x", n.ints("begin", [0, 0, 0]), n.ints("size", [-1, -1, -1])], "s", SHAPE)]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"SLICE": 1})
    assert_said(report, PASS, "'s' is a model output, and 'x' is a graph input, a constant or read elsewhere")
