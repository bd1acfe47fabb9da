"""resolve_customop_matmul: a CUSTOM MatMul becomes FULLY_CONNECTED (weights: the right operand
transposed, a constant once, a computed one by a TRANSPOSE op; transpose_a by a TRANSPOSE of the
left); products agree (original in the reference interpreter's TensorFlow kernel, result in
LiteRT); a batched (rank-3) operand stays."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said
from custom_ops import resolve_and_compare

PASS = "resolve_customop_matmul"
M, K, U = 3, 4, 5


def matmul_net(transpose_a, transpose_b, *, const_rhs, batch=None) -> Net:
    n = Net()
    a_shape = [K, M] if transpose_a else [M, K]
    n.input("a", ([batch] if batch else []) + a_shape)
    b_shape = [U, K] if transpose_b else [K, U]
    b = n.const("b", b_shape) if const_rhs else n.input("b", b_shape)
    n.tensor("y", ([batch] if batch else []) + [M, U])
    opts = {"transpose_a": transpose_a, "transpose_b": transpose_b, "T": 1}
    n.operations.append(
        {"type": "CUSTOM", "custom_code": "MatMul", "inputs": ["a", b], "outputs": ["y"], "custom_options": opts}
    )
    n.outputs = ["y"]
    return n


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("const_rhs", [False, True])
def test_matmul_becomes_fully_connected(transpose_a, transpose_b, const_rhs):
    transposes = int(transpose_a) + int(not transpose_b and not const_rhs)
    model, _ = resolve_and_compare(
        matmul_net(transpose_a, transpose_b, const_rhs=const_rhs).recipe(),
        [PASS],
        {"FULLY_CONNECTED": 1, "TRANSPOSE": transposes, "CUSTOM(MatMul)": 0},
    )
    fc = next(op for op in model.graphs[0].ops if op.kind == "FULLY_CONNECTED")
    assert fc.inputs[1].shape == (U, K) and fc.input(2) is None and fc.outputs[0].name == "y"
    if const_rhs and not transpose_b:
        original = matmul_net(transpose_a, transpose_b, const_rhs=True).model().graphs[0].tensor("b").data
        assert np.array_equal(fc.inputs[1].data, original.T)


def test_batched_operand_stays_and_says_why():
    _, report = resolve_and_compare(
        matmul_net(False, False, const_rhs=True, batch=2).recipe(), [PASS], {"FULLY_CONNECTED": 0, "CUSTOM(MatMul)": 1}
    )
    assert_said(report, PASS, "is no matrix of static shape (FULLY_CONNECTED's operands)")
