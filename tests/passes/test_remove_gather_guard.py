"""remove_gather_guard: GATHER(p, FLOOR_MOD(ADD(i, N), N)) on axis 0 reads i (lossy in general:
exact for i >= 0, which the recipe's ARG_MAX indices are); other constants, axes and an ADD with
an activation stay."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare
from bnfold.engine import registry

PASS = "remove_gather_guard"


def guarded(*, n_add=11, n_mod=11, axis=0) -> Net:
    n = Net()
    n.input("params", [11, 5] if axis == 0 else [5, 11])
    n.input("scores", [3, 4, 6])
    i = n.tensor("i", [3, 4], "INT32")
    n.op("ARG_MAX", ["scores", n.ints("axis", [2])], i, [3, 4], output_type=2)
    a = n.tensor("a", [3, 4], "INT32")
    n.op("ADD", [i, n.tensor("na", [], "INT32", {"kind": "explicit", "values": [n_add]})], a, [3, 4])
    m = n.tensor("m", [3, 4], "INT32")
    n.op("FLOOR_MOD", [a, n.tensor("nm", [], "INT32", {"kind": "explicit", "values": [n_mod]})], m, [3, 4])
    n.outputs = [n.op("GATHER", ["params", m], "y", [3, 4, 5] if axis == 0 else [5, 3, 4], axis=axis)]
    return n


def test_guard_goes_and_gather_reads_the_indices():
    model, report = optimize_and_compare(guarded().recipe(), [PASS], {"GATHER": 1, "ADD": 0, "FLOOR_MOD": 0})
    gather = next(op for op in model.graphs[0].ops if op.kind == "GATHER")
    assert gather.inputs[1].name == "i" and report.folds[0]["removed_guard"] == ["a", "m"]
    assert not registry.BY_NAME[PASS].exact  # a negative index would no longer be wrapped


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        (dict(n_add=10), "the guard adds 10 and takes the remainder by 11, not 11"),
        (dict(n_mod=7), "the guard adds 11 and takes the remainder by 7, not 11"),
        (dict(axis=1), "the guarded GATHER is not on axis 0"),
    ],
)
def test_other_guards_stay(case, reason):
    _, report = optimize_and_compare(guarded(**case).recipe(), [PASS], {"GATHER": 1, "ADD": 1, "FLOOR_MOD": 1})
    assert report.folds == []
    assert_said(report, PASS, reason)
