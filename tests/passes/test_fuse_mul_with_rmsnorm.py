"""fuse_mul_with_rmsnorm: a MUL by a per-channel or scalar constant after an RMS_NORM joins its γ (ONE's
case γ = 1, and any constant γ), equal in onert; a fused activation, a constant varying along
another axis, a γ that is not constant and a norm read elsewhere keep the MUL, the first ones saying
why."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net
from decoder_models import assert_equal_in_runtime, optimized, reasons

PASS = "fuse_mul_with_rmsnorm"
SHAPE = [2, 3, 14]


def net(gamma_values=None, weight_shape=(14,), act="NONE", gamma_input=False, observed=False) -> Net:
    n = Net(seed=9)
    x = n.input("x", SHAPE)
    g = (
        n.input("g", [14])
        if gamma_input
        else n.const("gamma", [len(gamma_values or [1.0])], values=gamma_values or [1.0])
    )
    normed = n.op("RMS_NORM", [x, g], "normed", SHAPE, epsilon=1e-6)
    out = list(np.broadcast_shapes(tuple(SHAPE), tuple(weight_shape)))
    w = n.const("w", list(weight_shape), low=-1.5, high=1.5)
    y = n.op("MUL", [normed, w], "y", out, fused_activation_function=act)
    n.outputs = [y, normed] if observed else [y]
    return n


@pytest.mark.parametrize("gamma", [None, [0.5 + 0.1 * i for i in range(14)], [2.0]])
@pytest.mark.parametrize("weight_shape", [(14,), (1, 1, 14), (1,)])
def test_the_mul_joins_gamma_equal_in_onert(gamma, weight_shape):
    original, model, report = optimized(net(gamma, weight_shape), [PASS])
    assert model.op_counts() == {"RMS_NORM": 1}
    (norm,) = model.graphs[0].ops
    assert norm.outputs[0].name == "y" and norm.options.epsilon == pytest.approx(1e-6)
    assert len(report["folds"]) == 1
    assert_equal_in_runtime(original, model)


@pytest.mark.parametrize(
    "change, why",
    [
        (dict(act="RELU"), "its fused RELU has no place in RMS_NORM"),
        (dict(weight_shape=(2, 1, 1, 14)), "not float32, or the constant broadcasts the output to another shape"),
        (dict(weight_shape=(3, 14)), "the constant is not one value per element of the last axis"),
        (dict(gamma_input=True), "the RMS_NORM's γ is not a constant of one value per element of the last axis"),
    ],
)
def test_what_keeps_the_mul_is_reported(change, why):
    _, model, report = optimized(net(**change), [PASS])
    assert model.op_counts() == {"RMS_NORM": 1, "MUL": 1}
    assert reasons(report) == [f"the MUL stays after the RMS_NORM: {why}"]


def test_a_norm_read_elsewhere_keeps_the_mul():
    _, model, report = optimized(net(observed=True), [PASS])
    assert model.op_counts() == {"RMS_NORM": 1, "MUL": 1} and not report["folds"]
