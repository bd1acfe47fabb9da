"""remove_unnecessary_slice: a SLICE of the whole input (size -1 too) goes, a model output keeping
its name; one that cuts anything stays."""

from __future__ import annotations

import pytest

from bn_models import Net, optimize_and_compare

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
    optimize_and_compare(slice_net(begin, size, out).recipe(), [PASS], {"SLICE": 1})


def test_whole_slice_of_a_graph_input_to_a_graph_output_stays_with_a_reason():
    """The slice is the identity, but its output is a graph output and its input a graph input:
    nothing else could write the output, so it stays, with the reason in the report."""
    n = Net()
    n.input("x", [3, 7, 5])
    n.outputs = [n.op("SLICE", ["x", n.ints("b", [0, 0, 0]), n.ints("s", [3, -1, 5])], "y", [3, 7, 5])]
    _, report = optimize_and_compare(n.recipe(), ["remove_unnecessary_slice"], {"SLICE": 1})
    (refusal,) = report.not_folded
    assert "'x' has no producer" in refusal["reason"]
