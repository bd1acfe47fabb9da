"""remove_unnecessary_reshape: a RESHAPE to its own input's shape goes; a graph output keeps its
name (the producer writes it), and a RESHAPE that changes the shape stays."""

from __future__ import annotations

import pytest

from bn_models import Net, optimize_and_compare

PASS = "remove_unnecessary_reshape"
SHAPE = [3, 7, 5]


def reshape_net(new_shape, *, then_relu=True, on_input=False) -> Net:
    """x -> ADD(c) -> h -> RESHAPE(new_shape) -> t [-> RELU -> y]."""
    n = Net()
    n.input("x", SHAPE)
    h = "x" if on_input else n.op("ADD", ["x", n.const("c", [5])], "h", SHAPE)
    t = n.op("RESHAPE", [h, n.ints("new_shape", new_shape)], "t", new_shape, new_shape=new_shape)
    n.outputs = [n.op("RELU", [t], "y", new_shape) if then_relu else t]
    return n


def test_reshape_to_the_same_shape_goes():
    model, report = optimize_and_compare(reshape_net(SHAPE).recipe(), [PASS], {"RESHAPE": 0, "RELU": 1, "ADD": 1})
    assert len(report.folds) == 1


def test_graph_output_keeps_its_name():
    model, _ = optimize_and_compare(reshape_net(SHAPE, then_relu=False).recipe(), [PASS], {"RESHAPE": 0, "ADD": 1})
    graph = model.graphs[0]
    assert [t.name for t in graph.outputs] == ["t"] and graph.outputs[0].producer.kind == "ADD"


def test_reshape_from_graph_input_to_graph_output_stays():
    # both names are seen from outside: there is no op to write the output instead
    optimize_and_compare(reshape_net(SHAPE, then_relu=False, on_input=True).recipe(), [PASS], {"RESHAPE": 1})


@pytest.mark.parametrize("new_shape", [[3, 35], [7, 3, 5], [1, 3, 7, 5]])
def test_reshape_that_changes_the_shape_stays(new_shape):
    optimize_and_compare(reshape_net(new_shape).recipe(), [PASS], {"RESHAPE": 1})
