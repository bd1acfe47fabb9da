"""remove_unnecessary_transpose: a TRANSPOSE by the identity permutation goes (a graph output keeps
its name: tests/passes/test_remove_redundant_transpose.py); one between a graph input and a graph
output stays, and the report says why."""

from __future__ import annotations

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_unnecessary_transpose"
T = [2, 4, 5, 7]


def identity_net(*, from_input: bool) -> Net:
    """x [-> RELU] -> TRANSPOSE(0,1,2,3) -> out."""
    n = Net()
    n.input("x", T)
    x = "x" if from_input else n.op("RELU", ["x"], "relu", T)
    n.outputs.append(n.op("TRANSPOSE", [x, n.ints("same", [0, 1, 2, 3])], "out", T))
    return n


def test_identity_transpose_goes():
    _, report = optimize_and_compare(identity_net(from_input=False).recipe(), [PASS], {"TRANSPOSE": 0, "RELU": 1})
    assert len(report.folds) == 1
    assert_said(report, PASS, None)


def test_identity_transpose_of_a_graph_input_into_a_graph_output_stays_and_says_why():
    _, report = optimize_and_compare(identity_net(from_input=True).recipe(), [PASS], {"TRANSPOSE": 1})
    assert report.folds == []
    assert_said(report, PASS, "an identity permutation between a graph input and a graph output")
