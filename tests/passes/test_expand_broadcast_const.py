"""expand_broadcast_const: a float32 constant of ADD/MUL/DIV broadcast along the last axis only is
written out in full (values bit for bit); other broadcasts and integer constants stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "expand_broadcast_const"
SHAPE = [1, 4, 5, 3]


def binary(kind="MUL", c_shape=(1, 4, 5, 1), const_first=False, dtype="FLOAT32") -> Net:
    n = Net()
    n.input("x", SHAPE)
    c = n.const("c", list(c_shape), low=0.5, high=2.0, dtype=dtype)
    n.outputs = [n.op(kind, [c, "x"] if const_first else ["x", c], "y", SHAPE, fused_activation_function="NONE")]
    return n


@pytest.mark.parametrize("kind", ["ADD", "MUL", "DIV"])
@pytest.mark.parametrize("const_first", [False, True])
def test_depth_broadcast_constant_is_written_out(kind, const_first):
    net = binary(kind, const_first=const_first)
    model, report = optimize_and_compare(net.recipe(), [PASS], {kind: 1})
    op = model.graphs[0].ops[0]
    expanded = op.inputs[0 if const_first else 1]
    c = net.model().graphs[0].tensor("c").data
    assert expanded.shape == tuple(SHAPE) and np.array_equal(expanded.data, np.broadcast_to(c, SHAPE))
    assert report.folds[0]["shape"] == SHAPE


@pytest.mark.parametrize("c_shape", [(1, 1, 5, 1), (3,), (1, 4, 5, 3)])
def test_other_broadcasts_stay(c_shape):
    _, report = optimize_and_compare(binary(c_shape=c_shape).recipe(), [PASS], {"MUL": 1})
    assert report.folds == []


def test_an_integer_depth_broadcast_stays_and_says_why():
    net = binary("ADD", dtype="INT32")
    recipe = net.recipe()
    for operand in recipe["operand"]:
        if operand["name"] in ("x", "y"):
            operand["dtype"] = "INT32"
    _, report = optimize_and_compare(recipe, [PASS], {"ADD": 1})
    assert report.folds == []
    assert_said(report, PASS, "'c' is INT32: only float32 constants are written out")


@pytest.mark.parametrize("c_shape", [(1, 1, 5, 1), (3,)])
def test_other_broadcasts_are_no_candidate_and_say_nothing(c_shape):
    _, report = optimize_and_compare(binary(c_shape=c_shape).recipe(), [PASS], {"MUL": 1})
    assert_said(report, PASS, None)
