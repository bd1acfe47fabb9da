"""convert_lhs_const_mm_to_fc: for onert, BATCH_MATMUL(C const, x) becomes FULLY_CONNECTED(C, xᵀ)
(a TRANSPOSE made unless adj_y; Cᵀ a new constant under adj_x), equal in LiteRT and loadable in
onert, which refuses the constant-left BATCH_MATMUL; for litert it stays, and batched or quantized
operands stay with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, build_copy, inputs_for
from bnfold import api
from bnfold.errors import ModelError
from bnfold.io.formats import CIRCLE
from bnfold.recipe.chef import build
from bnfold.values import litert, onert

PASS = "convert_lhs_const_mm_to_fc"
M, K, N = 3, 4, 5


def mm_net(*, adj_x=False, adj_y=False, batch=False) -> dict:
    """y = op(C) · op(x): C a constant [M, K] ([K, M] under adj_x), x [K, N] ([N, K] under adj_y)."""
    n = Net()
    x_shape = [N, K] if adj_y else [K, N]
    x = n.input("x", [2, *x_shape] if batch else x_shape)
    c = n.const("c", [K, M] if adj_x else [M, K])
    out = [2, M, N] if batch else [M, N]
    n.outputs = [n.op("BATCH_MATMUL", [c, x], "y", out, adjoint_lhs=adj_x, adjoint_rhs=adj_y)]
    return n.recipe()


@pytest.mark.parametrize(("adj_x", "adj_y"), [(False, False), (True, False), (False, True), (True, True)])
def test_constant_left_matmul_becomes_a_fully_connected_onert_runs(adj_x, adj_y):
    recipe = mm_net(adj_x=adj_x, adj_y=adj_y)
    original, model = build(recipe, CIRCLE), build(recipe, CIRCLE)
    report = api.apply_passes(model, [PASS], "onert")
    assert dict(model.op_counts()) == ({"FULLY_CONNECTED": 1} if adj_y else {"FULLY_CONNECTED": 1, "TRANSPOSE": 1})
    assert [f["pass"] for f in report.folds] == [PASS]
    xs = inputs_for(original)
    (want,) = litert.run(original, xs)
    (have,) = litert.run(build_copy(model), xs)
    np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)
    if onert.missing() is None:
        with pytest.raises(ModelError, match="onert cannot load the model"):
            onert.Session(original)
        (in_onert,) = onert.Session(build_copy(model))(xs)
        np.testing.assert_allclose(in_onert, want, rtol=1e-5, atol=1e-5)


def test_the_constant_keeps_its_buffer_under_adj_x():
    model = build(mm_net(adj_x=True), CIRCLE)
    c = model.graphs[0].ops[0].inputs[0]
    before = c.const_data.copy()
    api.apply_passes(model, [PASS], "onert")
    assert np.array_equal(c.const_data, before)
    (fc,) = [op for op in model.graphs[0].ops if op.kind == "FULLY_CONNECTED"]
    assert np.array_equal(fc.inputs[0].const_data, before.T)


def test_litert_keeps_the_matmul():
    model = build(mm_net(), CIRCLE)
    report = api.apply_passes(model, [PASS], "litert")
    assert dict(model.op_counts()) == {"BATCH_MATMUL": 1} and not report.folds and not report.not_folded


def test_batched_right_operand_stays_with_the_reason():
    model = build(mm_net(batch=True), CIRCLE)
    report = api.apply_passes(model, [PASS], "onert")
    assert dict(model.op_counts()) == {"BATCH_MATMUL": 1}
    (said,) = [n["reason"] for n in report.not_folded if n["pass"] == PASS]
    assert "not two matrices of static shapes" in said


def test_a_computed_left_operand_is_no_candidate():
    n = Net()
    a, b = n.input("a", [M, K]), n.input("b", [K, N])
    n.outputs = [n.op("BATCH_MATMUL", [a, b], "y", [M, N], adjoint_lhs=False, adjoint_rhs=False)]
    model = build(n.recipe(), CIRCLE)
    report = api.apply_passes(model, [PASS], "onert")
    assert dict(model.op_counts()) == {"BATCH_MATMUL": 1} and not report.not_folded
