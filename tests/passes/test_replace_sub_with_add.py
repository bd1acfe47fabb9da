"""replace_sub_with_add: x - c becomes x + (-c), bit for bit, with the fused activation kept; a SUB
by a computed value, an integer SUB and a c other ops read (which stays as it was) behave."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, build_copy, inputs_for, optimize_and_compare, runnable
from bnfold import api
from bnfold.recipe.chef import build
from bnfold.values import litert

PASS = "replace_sub_with_add"
SHAPE = [2, 5, 3]


def sub_net(*, act="NONE", c_elsewhere=False) -> Net:
    n = Net()
    n.input("x", SHAPE)
    c = n.const("c", [3], values=[0.25, -1.5, 2.0])
    n.outputs = [n.op("SUB", ["x", c], "y", SHAPE, fused_activation_function=act)]
    if c_elsewhere:
        n.outputs.append(n.op("MUL", ["x", c], "z", SHAPE, fused_activation_function="NONE"))
    return n


@pytest.mark.parametrize("act", ["NONE", "RELU6"])
def test_sub_of_a_constant_becomes_an_add_bit_for_bit(act):
    recipe = sub_net(act=act).recipe()
    model, report = optimize_and_compare(recipe, [PASS], {"SUB": 0, "ADD": 1})
    add = next(op for op in model.graphs[0].ops if op.kind == "ADD")
    assert add.fused_activation == act and add.inputs[1].data.tolist() == [-0.25, 1.5, -2.0]
    xs = inputs_for(build(recipe))
    want = litert.run(runnable(build(recipe)), xs)
    have = litert.run(runnable(build_copy(model)), xs)
    assert all(np.array_equal(a, b) for a, b in zip(want, have))  # not only within a tolerance
    assert len(report.folds) == 1


def test_a_constant_read_elsewhere_is_not_changed():
    model, _ = optimize_and_compare(sub_net(c_elsewhere=True).recipe(), [PASS], {"SUB": 0, "ADD": 1, "MUL": 1})
    assert model.graphs[0].tensor("c").data.tolist() == [0.25, -1.5, 2.0]


def test_sub_of_computed_values_and_of_a_constant_minuend_stay():
    n = Net()
    n.input("x", SHAPE)
    n.input("w", SHAPE)
    d = n.op("SUB", ["x", "w"], "d", SHAPE, fused_activation_function="NONE")
    n.outputs = [n.op("SUB", [n.const("c", [3]), d], "y", SHAPE, fused_activation_function="NONE")]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"SUB": 2, "ADD": 0})
    assert report.folds == []


def test_for_a_target_without_add_the_sub_stays_and_says_why():
    model = build(sub_net().recipe())
    report = api.apply_passes(model, [PASS], "any")
    assert model.op_counts()["SUB"] == 1
    assert_said(report, PASS, "the input has no ADD, and the target is any")
