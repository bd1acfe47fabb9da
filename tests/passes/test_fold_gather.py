"""fold_gather: a GATHER of a constant at constant indices becomes the gathered constant (the
Shape -> Gather index arithmetic of exported models); an index out of range or a computed operand
leaves it (the former with the reason in the report)."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, optimize_and_compare

PASS = "fold_gather"
PARAMS = np.arange(4 * 6, dtype=np.float32).reshape(4, 6) / 4


def gather_net(indices, *, axis=1, params_from_input=False) -> Net:
    """p [4,6] -> GATHER(i, axis) -> g -> ADD(x) -> y."""
    n = Net()
    shape = [4, len(indices)] if axis == 1 else [len(indices), 6]
    n.input("x", shape)
    p = n.input("p", [4, 6]) if params_from_input else n.const("p", [4, 6], values=PARAMS.reshape(-1).tolist())
    g = n.op("GATHER", [p, n.ints("i", indices)], "g", shape, axis=axis)
    n.outputs = [n.op("ADD", ["x", g], "y", shape)]
    return n


@pytest.mark.parametrize("axis, indices", [(1, [5, 0, 2]), (0, [3, 3, 1, 0, 2])])
def test_gather_of_constants_is_computed(axis, indices):
    model, _ = optimize_and_compare(gather_net(indices, axis=axis).recipe(), [PASS], {"GATHER": 0, "ADD": 1})
    np.testing.assert_array_equal(model.graphs[0].tensor("g").data, np.take(PARAMS, indices, axis=axis))


def test_gather_out_of_range_stays_and_says_why():
    _, report = optimize_and_compare(gather_net([1, 6, 0]).recipe(), [PASS], {"GATHER": 1}, numerics=False)
    assert "cannot be computed" in report.not_folded[0]["reason"]
    entry = report.to_dict()["not_folded"][0]  # the JSON report carries it
    assert entry["pass"] == PASS and entry["at"]["kind"] == "GATHER" and entry["at"]["output"] == "g"


def test_gather_of_a_computed_table_stays():
    optimize_and_compare(gather_net([5, 0, 2], params_from_input=True).recipe(), [PASS], {"GATHER": 1})
