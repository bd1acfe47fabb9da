"""substitute_splitv_to_split: a SPLIT_V into equal parts becomes a SPLIT (the same outputs); one into
unequal parts stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "substitute_splitv_to_split"


def splitv_net(sizes, axis=1) -> Net:
    shape = [3, 12, 5]
    n = Net()
    n.input("x", shape)
    h = n.op("EXP", ["x"], "h", shape)
    outs = []
    for i, size in enumerate(sizes):
        part = list(shape)
        part[axis] = size
        outs.append(n.tensor(f"p{i}", part))
    inputs = [h, n.ints("sizes", sizes), n.ints("axis", [axis - 3 if axis == 2 else axis])]
    n.operations.append({"type": "SPLIT_V", "inputs": inputs, "outputs": outs, "options": {"num_splits": len(sizes)}})
    n.outputs = [n.op("TANH", [p], f"y{i}", n.shapes[p]) for i, p in enumerate(outs)]
    return n


@pytest.mark.parametrize("sizes", [[4, 4, 4], [6, 6], [12]])
def test_equal_parts_become_a_split(sizes):
    model, _ = optimize_and_compare(splitv_net(sizes).recipe(), [PASS], {"SPLIT_V": 0, "SPLIT": 1})
    split = next(op for op in model.graphs[0].ops if op.kind == "SPLIT")
    assert [t.name for t in split.outputs] == [f"p{i}" for i in range(len(sizes))]


def test_equal_parts_along_a_negative_axis_become_a_split():
    optimize_and_compare(splitv_net([1, 1, 1, 1, 1], axis=2).recipe(), [PASS], {"SPLIT_V": 0, "SPLIT": 1})


def test_unequal_parts_stay():
    _, report = optimize_and_compare(splitv_net([4, 8]).recipe(), [PASS], {"SPLIT_V": 1, "SPLIT": 0})
    assert_said(report, PASS, None)  # unequal parts are no candidate


def test_equal_parts_of_a_type_split_version_1_does_not_take_stay_and_say_why():
    n = Net()
    n.input("x", [3, 12])
    n.operands[-1]["dtype"] = "INT64"
    outs = [n.tensor(f"p{i}", [3, 6], "INT64") for i in range(2)]
    inputs = ["x", n.ints("sizes", [6, 6]), n.ints("axis", [1])]
    n.operations.append({"type": "SPLIT_V", "inputs": inputs, "outputs": outs, "options": {"num_splits": 2}})
    n.outputs = outs
    _, report = optimize_and_compare(n.recipe(), [PASS], {"SPLIT_V": 1, "SPLIT": 0})
    assert_said(report, PASS, "'x' is INT64: the SPLIT made (version 1) takes FLOAT32 or INT32 only")
