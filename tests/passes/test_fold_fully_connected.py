"""fold_fully_connected: a FULLY_CONNECTED of a constant input and weights (bias or not) becomes
x·Wᵀ + b; one whose weights are computed stays."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "fold_fully_connected"
X = (np.arange(2 * 6, dtype=np.float32).reshape(2, 6) - 5) / 3
W = (np.arange(4 * 6, dtype=np.float32).reshape(4, 6) - 11) / 5
B = np.array([0.5, -1.0, 2.0, 0.25], np.float32)


def fc_net(*, bias=True, weights_from_input=False, fc_is_output=False) -> Net:
    """c [2,6] -> FULLY_CONNECTED(W [4,6], b) -> f [2,4] -> MUL(x) -> y."""
    n = Net()
    n.input("x", [2, 4])
    c = n.const("c", [2, 6], values=X.reshape(-1).tolist())
    w = n.input("w", [4, 6]) if weights_from_input else n.const("w", [4, 6], values=W.reshape(-1).tolist())
    inputs = [c, w, n.const("b", [4], values=B.tolist()) if bias else ""]
    f = n.op("FULLY_CONNECTED", inputs, "f", [2, 4])
    n.outputs = [n.op("MUL", ["x", f], "y", [2, 4])]
    if fc_is_output:
        n.outputs.append(f)
    return n


@pytest.mark.parametrize("bias", [True, False])
def test_fully_connected_of_constants_is_computed(bias):
    model, _ = optimize_and_compare(fc_net(bias=bias).recipe(), [PASS], {"FULLY_CONNECTED": 0, "MUL": 1})
    want = X @ W.T + (B if bias else 0)
    np.testing.assert_allclose(model.graphs[0].tensor("f").data, want, rtol=1e-6)


def test_fully_connected_with_computed_weights_stays():
    optimize_and_compare(fc_net(weights_from_input=True).recipe(), [PASS], {"FULLY_CONNECTED": 1})


def test_fully_connected_that_is_a_model_output_stays_and_says_why():
    _, report = optimize_and_compare(fc_net(fc_is_output=True).recipe(), [PASS], {"FULLY_CONNECTED": 1})
    assert_said(report, PASS, "'f' is seen from outside the graph (a model output stays computed)")
