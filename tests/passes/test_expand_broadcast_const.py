"""expand_broadcast_const: a float32 constant of ADD/MUL/DIV broadcast along the last axis only is
written out in full (values bit for bit); other broadcasts and integer constants stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, optimize_and_compare

PASS = "expand_broadcast_const"
SHAPE = [1, 4, 5, 3]


def binary(kind="MUL", c_shape=(1, 4, 5, 1), const_first=False) -> Net:
    n = Net()
    n.input("x", SHAPE)
    c = n.const("c", list(c_shape), low=0.5, high=2.0)
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
