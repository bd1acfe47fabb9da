"""fold_mul: a MUL of two float32 constants becomes their product (broadcast as the kernel does); an
integer MUL, a MUL reading a computed value and one whose result is a model output stay."""

from __future__ import annotations

import numpy as np

from bn_models import Net, optimize_and_compare

PASS = "fold_mul"


def mul_net(*, dtype="FLOAT32", is_output=False) -> Net:
    """w (const [4, 3]) * s (const [3]) -> ws -> FULLY_CONNECTED(x, ws) -> y."""
    n = Net()
    n.input("x", [2, 3])
    if dtype == "FLOAT32":
        w, s = n.const("w", [4, 3]), n.const("s", [3], values=[0.5, -2.0, 3.0])
    else:
        w = n.tensor("w", [4, 3], dtype, {"kind": "explicit", "values": list(range(12))})
        s = n.tensor("s", [3], dtype, {"kind": "explicit", "values": [1, -2, 3]})
    n.tensor("ws", [4, 3], dtype)
    ws = n.op("MUL", [w, s], "ws", [4, 3], fused_activation_function="NONE")
    if is_output or dtype != "FLOAT32":
        n.outputs = [ws]
    else:
        n.outputs = [n.op("FULLY_CONNECTED", ["x", ws], "y", [2, 4])]
    return n


def test_product_of_constants_is_computed():
    net = mul_net()
    model, report = optimize_and_compare(net.recipe(), [PASS], {"MUL": 0, "FULLY_CONNECTED": 1})
    ws = model.graphs[0].tensor("ws")
    original = net.model().graphs[0]
    expected = original.tensor("w").data * original.tensor("s").data
    np.testing.assert_array_equal(ws.data, expected.astype(np.float32))
    assert [fold["constants"] for fold in report.folds] == [["ws"]]


def test_integer_mul_stays_and_says_why():
    _, report = optimize_and_compare(mul_net(dtype="INT32").recipe(), [PASS], {"MUL": 1}, numerics=False)
    assert report.folds == [] and "float32 only" in report.not_folded[0]["reason"]


def test_product_that_is_a_model_output_stays():
    _, report = optimize_and_compare(mul_net(is_output=True).recipe(), [PASS], {"MUL": 1}, numerics=False)
    assert "seen from outside" in report.not_folded[0]["reason"]


def test_mul_of_a_computed_value_stays():
    n = Net()
    n.input("x", [4, 3])
    n.outputs = [n.op("MUL", ["x", n.const("s", [3])], "y", [4, 3], fused_activation_function="NONE")]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"MUL": 1})
    assert report.folds == [] and report.not_folded == []
