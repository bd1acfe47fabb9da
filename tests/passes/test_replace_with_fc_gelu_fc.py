"""replace_with_fc_gelu_fc: FC1, FC2 = FC1/√2, erf, +1, times FC1, FC3 becomes FC1 -> GELU -> FC3
with doubled weights, values within float rounding of the original (run by the reference
interpreter's erf); FC2 not FC1/√2, a missing bias on one side, activations and shared
intermediates stay."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bn_models import Net, assert_said
from bnfold import api
from custom_ops import resolve_and_compare

PASS = "replace_with_fc_gelu_fc"
N, K, H, U = 3, 6, 5, 4
SCALE = np.float32(math.sqrt(0.5))


def fc_gelu_fc_net(*, factor=SCALE, bias2=True, act1="NONE", act3="RELU", expose=None) -> Net:
    rng = np.random.default_rng(7)
    w1, b1 = rng.normal(0, 0.8, (H, K)).astype(np.float32), rng.normal(0, 0.5, H).astype(np.float32)
    n = Net()
    n.input("x", [N, K])
    fc1 = n.op(
        "FULLY_CONNECTED",
        ["x", n.const("w1", [H, K], values=w1.ravel().tolist()), n.const("b1", [H], values=b1.ravel().tolist())],
        "f",
        [N, H],
        fused_activation_function=act1,
    )
    w2 = (w1 * np.float32(factor)).astype(np.float32)
    b2 = n.const("b2", [H], values=(b1 * np.float32(factor)).astype(np.float32).ravel().tolist()) if bias2 else ""
    fc2 = n.op("FULLY_CONNECTED", ["x", n.const("w2", [H, K], values=w2.ravel().tolist()), b2], "f2", [N, H])
    n.tensor("e", [N, H])
    n.operations.append({"type": "CUSTOM", "custom_code": "Erf", "inputs": [fc2], "outputs": ["e"]})
    a = n.op("ADD", ["e", n.const("one", [], values=[1.0])], "a", [N, H])
    m = n.op("MUL", [a, fc1], "m", [N, H])
    y = n.op(
        "FULLY_CONNECTED", [m, n.const("w3", [U, H]), n.const("b3", [U])], "y", [N, U], fused_activation_function=act3
    )
    n.outputs = [y] + ([expose] if expose else [])
    return n


def test_folded_gelu_becomes_fc_gelu_fc():
    model, report = resolve_and_compare(fc_gelu_fc_net().recipe(), [PASS], {"FULLY_CONNECTED": 2, "GELU": 1, "MUL": 0})
    fc1, gelu, fc3 = model.graphs[0].ops
    original = fc_gelu_fc_net().model().graphs[0]
    assert (fc1.outputs[0].name, gelu.inputs[0].name, fc3.inputs[0] is gelu.outputs[0]) == ("f/front", "f/front", True)
    assert np.array_equal(fc3.inputs[1].data, 2 * original.tensor("w3").data) and fc3.fused_activation == "RELU"
    assert report.folds[0]["activation"] == "GELU"


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(factor=0.7), None),  # no 1/√2 copy of the first layer: no candidate
        (dict(bias2=False), None),
        (dict(act1="RELU"), None),  # FC1's options are not FC2's: no copy, no candidate
        (dict(expose="a"), "'a' is a model output, so it must stay computed"),
        (dict(expose="m"), "'m' is a model output, so it must stay computed"),
    ],
)
def test_other_forms_stay(case, reason):
    model = fc_gelu_fc_net(**case).model()
    report = api.apply_passes(model, [PASS])
    assert not report.folds and model.op_counts()["FULLY_CONNECTED"] == 3 and "GELU" not in model.op_counts()
    assert_said(report, PASS, reason)
