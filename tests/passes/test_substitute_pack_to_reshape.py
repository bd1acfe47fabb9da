"""substitute_pack_to_reshape: a PACK of one tensor becomes a RESHAPE inserting its unit axis; a
PACK of two stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "substitute_pack_to_reshape"


def pack_net(count: int, axis: int) -> Net:
    n = Net()
    n.input("x", [7, 5])
    h = n.op("EXP", ["x"], "h", [7, 5])
    out = [7, 5]
    out.insert(axis, count)
    p = n.op("PACK", [h] * count, "p", out, values_count=count, axis=axis)
    n.outputs = [n.op("TANH", [p], "y", out)]
    return n


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_pack_of_one_becomes_a_reshape(axis):
    model, _ = optimize_and_compare(pack_net(1, axis).recipe(), [PASS], {"PACK": 0, "RESHAPE": 1})
    assert model.graphs[0].tensor("p").shape == tuple([7, 5][:axis] + [1] + [7, 5][axis:])


def test_pack_of_two_stays():
    _, report = optimize_and_compare(pack_net(2, 1).recipe(), [PASS], {"PACK": 1, "RESHAPE": 0})
    assert_said(report, PASS, None)  # a PACK of two is no candidate


def shared_net() -> Net:
    """x -> TANH -> a -> MUL(k) -> m -> PACK -> p -> DIV(k) -> TANH -> y; ADD(m, k) -> z after the
    DIV. LiteRT runs the MUL in place over a (one reader); a PACK has a buffer of its own, so the
    DIV runs in place over p alone. Made a RESHAPE, p would share a's buffer with m, and the DIV
    would overwrite m before the ADD reads it."""
    n = Net()
    n.input("x", [7, 5])
    a = n.op("TANH", ["x"], "a", [7, 5])
    m = n.op("MUL", [a, n.const("k", [1])], "m", [7, 5])
    p = n.op("PACK", [m], "p", [1, 7, 5], values_count=1, axis=0)
    d = n.op("DIV", [p, n.const("divisor", [1], low=0.5, high=2.0)], "d", [1, 7, 5])
    y = n.op("TANH", [d], "y", [1, 7, 5])
    z = n.op("ADD", [m, n.const("shift", [5])], "z", [7, 5])
    n.outputs = [y, z]
    return n


def test_a_pack_stays_where_the_reshape_would_share_a_needed_buffer():
    from bnfold import api
    from layout_fuzzing import prepare, run_case

    content, why = prepare(shared_net().recipe())
    assert content is not None, why
    result = api.optimize(content, [PASS])
    assert [op.kind for op in result.model.graphs[0].ops].count("PACK") == 1
    assert_said(result.report, PASS, "in place over a buffer another reader still needs")
    assert not any("reordered" in note for note in result.report["notes"])
    assert run_case(content, "default").kind == "ok"


def test_without_the_second_reader_the_pack_goes():
    n = shared_net()
    n.outputs = ["y"]
    n.operations = [op for op in n.operations if op["outputs"] != ["z"]]
    optimize_and_compare(n.recipe(), [PASS], {"PACK": 0, "RESHAPE": 1})


def test_pack_of_one_with_two_unknown_dimensions_stays_and_says_why():
    from bnfold import api
    from bnfold.recipe.chef import build

    model = build(pack_net(1, 0).recipe())
    graph = model.graphs[0]
    for name in ("x", "h"):
        graph.tensor(name).shape_signature = (-1, -1)
    for name in ("p", "y"):
        graph.tensor(name).shape_signature = (1, -1, -1)
    report = api.apply_passes(model, [PASS])
    assert model.op_counts()["PACK"] == 1
    assert_said(report, PASS, "a RESHAPE cannot give 'p' its shape [1, -1, -1]: one unknown dimension at most")
