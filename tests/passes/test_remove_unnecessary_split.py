"""remove_unnecessary_split: a SPLIT or SPLIT_V into one part goes; a split into two stays."""

from __future__ import annotations

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_unnecessary_split"
SHAPE = [3, 8, 5]


def split_net(kind: str, parts: int) -> Net:
    """x -> EXP -> h -> SPLIT/SPLIT_V(axis 1) -> parts -> TANH each."""
    n = Net()
    n.input("x", SHAPE)
    h = n.op("EXP", ["x"], "h", SHAPE)
    size = 8 // parts
    outs = [f"p{i}" for i in range(parts)]
    shapes = [[3, 8 - size * (parts - 1), 5] if i == parts - 1 else [3, size, 5] for i in range(parts)]
    for name, shape in zip(outs, shapes):
        n.tensor(name, shape)
    axis = n.ints("axis", [1])
    if kind == "SPLIT":
        inputs, options = [axis, h], {"num_splits": parts}
    else:
        inputs, options = [h, n.ints("sizes", [s[1] for s in shapes]), axis], {"num_splits": parts}
    n.operations.append({"type": kind, "inputs": inputs, "outputs": outs, "options": options})
    n.outputs = [n.op("TANH", [p], f"y{i}", s) for i, (p, s) in enumerate(zip(outs, shapes))]
    return n


def test_split_into_one_part_goes():
    for kind in ("SPLIT", "SPLIT_V"):
        optimize_and_compare(split_net(kind, 1).recipe(), [PASS], {kind: 0, "EXP": 1, "TANH": 1})


def test_split_into_two_parts_stays():
    for kind in ("SPLIT", "SPLIT_V"):
        _, report = optimize_and_compare(split_net(kind, 2).recipe(), [PASS], {kind: 1, "TANH": 2})
        assert_said(report, PASS, None)  # no candidate


def test_split_into_one_part_from_a_graph_input_into_a_graph_output_stays_and_says_why():
    n = Net()
    n.input("x", SHAPE)
    n.tensor("p0", SHAPE)
    inputs, options = [n.ints("axis", [1]), "x"], {"num_splits": 1}
    n.operations.append({"type": "SPLIT", "inputs": inputs, "outputs": ["p0"], "options": options})
    n.outputs = ["p0"]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"SPLIT": 1})
    assert_said(report, PASS, "'p0' is a model output, and 'x' is a graph input, a constant or read elsewhere")
