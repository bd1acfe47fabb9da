"""substitute_transpose_to_reshape: a TRANSPOSE that moves only unit axes becomes a RESHAPE (same
buffer, same values); one that reorders axes longer than 1 stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "substitute_transpose_to_reshape"


def transpose_net(shape, perm, *, perm_is_input=False) -> Net:
    """x -> ADD(c) -> TRANSPOSE(perm) -> y (the ADD so the transpose reads no graph input)."""
    n = Net()
    n.input("x", shape)
    h = n.op("ADD", ["x", n.const("c", shape[-1:])], "h", shape)
    if perm_is_input:
        p = n.input("perm", [len(perm)])
        n.operands[-1]["dtype"] = "INT32"
    else:
        p = n.ints("perm", perm)
    n.op("TRANSPOSE", [h, p], "y", [shape[i] for i in perm])
    n.outputs = ["y"]
    return n


@pytest.mark.parametrize(
    "shape, perm",
    [
        ([6, 1, 5, 1], [1, 0, 3, 2]),  # unit axes anywhere
        ([2, 13, 11, 1], [0, 3, 1, 2]),  # NHWC -> NCHW of a one-channel tensor
        ([2, 1, 13, 11], [0, 2, 3, 1]),  # and back
        ([1, 1, 7], [2, 0, 1]),
    ],
)
def test_unit_axis_transpose_becomes_reshape(shape, perm):
    model, report = optimize_and_compare(transpose_net(shape, perm).recipe(), [PASS], {"TRANSPOSE": 0, "RESHAPE": 1})
    graph = model.graphs[0]
    (reshape,) = [op for op in graph.ops if op.kind == "RESHAPE"]
    assert reshape.outputs[0] is graph.outputs[0] and graph.outputs[0].name == "y"  # the output keeps its name
    assert list(reshape.input(1).data) == [shape[i] for i in perm]
    assert [f["permutation"] for f in report.folds] == [perm]


@pytest.mark.parametrize(
    "shape, perm",
    [
        ([6, 5, 1, 1], [2, 1, 3, 0]),  # 5 before 6: the elements move (ONE's negative case, other sizes)
        ([2, 13, 11, 3], [0, 3, 1, 2]),  # a real NHWC -> NCHW
    ],
)
def test_transpose_that_moves_elements_stays(shape, perm):
    model, report = optimize_and_compare(transpose_net(shape, perm).recipe(), [PASS], {"TRANSPOSE": 1, "RESHAPE": 0})
    assert report.folds == []
    assert_said(report, PASS, None)  # a transpose moving elements is no candidate


def test_permutation_that_is_not_a_constant_stays():
    net = transpose_net([6, 1, 5, 1], [1, 0, 3, 2], perm_is_input=True)
    optimize_and_compare(net.recipe(), [PASS], {"TRANSPOSE": 1, "RESHAPE": 0}, numerics=False)


def test_transpose_stays_where_the_reshape_would_share_a_needed_buffer_and_says_why():
    """As substitute_pack_to_reshape's case: LiteRT runs the MUL in place over a and the DIV in
    place over t; made a RESHAPE, t would share m's buffer, which the ADD still reads."""
    n = Net()
    n.input("x", [1, 7, 5])
    a = n.op("TANH", ["x"], "a", [1, 7, 5])
    m = n.op("MUL", [a, n.const("k", [1])], "m", [1, 7, 5])
    t = n.op("TRANSPOSE", [m, n.ints("perm", [1, 0, 2])], "t", [7, 1, 5])
    d = n.op("DIV", [t, n.const("divisor", [1], low=0.5, high=2.0)], "d", [7, 1, 5])
    n.outputs = [n.op("TANH", [d], "y", [7, 1, 5]), n.op("ADD", [m, n.const("shift", [5])], "z", [1, 7, 5])]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 1, "RESHAPE": 0})
    assert_said(report, PASS, "in place over a buffer another reader still needs")
