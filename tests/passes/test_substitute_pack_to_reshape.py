"""substitute_pack_to_reshape: a PACK of one tensor becomes a RESHAPE inserting its unit axis; a
PACK of two stays."""

from __future__ import annotations

import pytest

from bn_models import Net, optimize_and_compare

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
    optimize_and_compare(pack_net(2, 1).recipe(), [PASS], {"PACK": 1, "RESHAPE": 0})
