"""resolve_customop_batchmatmul: a CUSTOM BatchMatMulV2 becomes BATCH_MATMUL with its adj_x/adj_y read
from the flexbuffer options by name; products agree (original in the reference interpreter's
TensorFlow kernel, result in LiteRT); non-boolean options and other types stay."""

from __future__ import annotations

import numpy as np
import pytest

import bnfold
from bn_models import Net, assert_said, inputs_for
from bnfold import api
from bnfold.io.atomic import save_model
from bnfold.io.formats import CIRCLE
from bnfold.io.reader import read_model
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from bnfold.values import litert
from custom_ops import resolve_and_compare

PASS = "resolve_customop_batchmatmul"


def bmm_net(adj_x, adj_y, *, options=None, const_rhs=False) -> Net:
    n = Net()
    batch, m, k, u = 2, 3, 4, 5
    n.input("x", [batch, k, m] if adj_x else [batch, m, k])
    y_shape = [u, k] if adj_y else [k, u]  # a rank-2 right operand broadcast over the batch
    y = n.const("w", y_shape) if const_rhs else n.input("w", y_shape)
    n.tensor("z", [batch, m, u])
    opts = {"adj_x": adj_x, "adj_y": adj_y, "T": 1} if options is None else options
    n.operations.append(
        {"type": "CUSTOM", "custom_code": "BatchMatMulV2", "inputs": ["x", y], "outputs": ["z"], "custom_options": opts}
    )
    n.outputs = ["z"]
    return n


@pytest.mark.parametrize("adj_x, adj_y", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("const_rhs", [False, True])
def test_batchmatmulv2_becomes_batch_matmul(adj_x, adj_y, const_rhs):
    model, report = resolve_and_compare(
        bmm_net(adj_x, adj_y, const_rhs=const_rhs).recipe(), [PASS], {"BATCH_MATMUL": 1, "CUSTOM(BatchMatMulV2)": 0}
    )
    (op,) = model.graphs[0].ops
    assert (op.options.adjX, op.options.adjY) == (adj_x, adj_y)
    assert (report.folds[0]["adj_x"], report.folds[0]["adj_y"]) == (adj_x, adj_y)


def test_options_left_out_are_false():
    model, _ = resolve_and_compare(bmm_net(False, False, options={}).recipe(), [PASS], {"BATCH_MATMUL": 1})
    assert not model.graphs[0].ops[0].options.adjX


def test_adjoint_that_is_no_boolean_stays():
    # a flag this pass cannot read as true or false: the op keeps TensorFlow's reading of it
    model = bmm_net(False, False, options={"adj_x": "no", "adj_y": False}).model()
    report = api.apply_passes(model, [PASS])
    assert not report.folds and model.op_counts() == {"CUSTOM(BatchMatMulV2)": 1}
    assert_said(report, PASS, "adj_x or adj_y is no boolean (['no', False]): TensorFlow's reading of it is kept")


@pytest.mark.parametrize("adj_x, adj_y", [(True, False), (False, True)])
def test_circle_model_gets_circles_option_names(adj_x, adj_y, tmp_path):
    # Circle's BatchMatMulOptions calls the flags adjoint_lhs / adjoint_rhs: written and read back,
    # the product must still use them
    recipe = bmm_net(adj_x, adj_y).recipe()
    original, model = build(recipe, CIRCLE), build(recipe, CIRCLE)
    api.apply_passes(model, [PASS])
    save_model(model, str(tmp_path / "m.circle"), CIRCLE)
    back = read_model(str(tmp_path / "m.circle"))
    (op,) = back.graphs[0].ops
    assert (op.kind, op.options.adjointLhs, op.options.adjointRhs) == ("BATCH_MATMUL", adj_x, adj_y)
    xs = inputs_for(original)
    np.testing.assert_allclose(interpreter.run(back, xs)[0], interpreter.run(original, xs)[0], rtol=1e-5, atol=1e-5)


def test_circle_batch_matmul_converts_to_tflite_with_its_adjoints(tmp_path):
    # Circle's adjoint_lhs/_rhs are TFLite's adj_x/adj_y: `bnfold convert` (and every LiteRT check of a
    # Circle model) carries them over; LiteRT computes what the Circle model's reference run does
    recipe = bmm_net(True, True).recipe()
    model = build(recipe, CIRCLE)
    api.apply_passes(model, [PASS])
    save_model(model, str(tmp_path / "m.circle"), CIRCLE)
    assert bnfold.convert(str(tmp_path / "m.circle"), str(tmp_path / "m.tflite")) is not None
    tflite = read_model(str(tmp_path / "m.tflite"))
    (op,) = tflite.graphs[0].ops
    assert op.options.adjX and op.options.adjY
    xs = inputs_for(model)
    np.testing.assert_allclose(
        litert.run(tflite, xs)[0], interpreter.run(build(recipe, CIRCLE), xs)[0], rtol=1e-5, atol=1e-5
    )
