"""fold_dequantize: a DEQUANTIZE of an int8 (per-channel) or float16 constant becomes the float32
constant the runtime would compute; one of a computed value stays."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "fold_dequantize"
Q = list(range(-10, 11, 1))[:15]


def dequantize_net(source: str, *, dequantize_is_output=False) -> Net:
    """w (INT8 per-row scales, or FLOAT16) [3,5] -> DEQUANTIZE -> wf -> MUL(x) -> y."""
    n = Net()
    n.input("x", [3, 5])
    if source == "int8":
        n.tensor("w", [3, 5], "INT8", {"kind": "explicit", "values": Q})
        n.operands[-1]["quant"] = {"scale": [0.5, 0.25, 0.125], "zero_point": [1, -2, 3], "quantized_dimension": 0}
    else:
        n.tensor("w", [3, 5], "FLOAT16", {"kind": "explicit", "values": [v / 7 for v in Q]})
    wf = n.op("DEQUANTIZE", ["w"], "wf", [3, 5])
    n.outputs = [n.op("MUL", ["x", wf], "y", [3, 5])]
    if dequantize_is_output:
        n.outputs.append(wf)
    return n


@pytest.mark.parametrize("source", ["int8", "float16"])
def test_dequantize_of_a_constant_is_computed(source):
    model, report = optimize_and_compare(dequantize_net(source).recipe(), [PASS], {"DEQUANTIZE": 0, "MUL": 1})
    wf = model.graphs[0].tensor("wf")
    q = np.array(Q, dtype=np.float32).reshape(3, 5)
    if source == "int8":
        want = (q - np.array([[1], [-2], [3]])) * np.array([[0.5], [0.25], [0.125]], dtype=np.float32)
    else:
        want = (q / 7).astype(np.float16).astype(np.float32)
    assert wf.dtype == "FLOAT32" and not wf.is_quantized
    np.testing.assert_array_equal(wf.data, want)
    assert len(report.folds) == 1


def test_dequantize_of_a_computed_value_stays():
    n = Net()
    n.input("x", [3, 5])
    q = n.op("QUANTIZE", ["x"], "q", [3, 5])
    n.operands[-1].update(dtype="INT8", quant={"scale": [0.1], "zero_point": [0]})
    n.outputs = [n.op("DEQUANTIZE", [q], "y", [3, 5])]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"DEQUANTIZE": 1, "QUANTIZE": 1})
    assert_said(report, PASS, None)  # no constant: no candidate


def test_dequantize_that_is_a_model_output_stays_and_says_why():
    _, report = optimize_and_compare(
        dequantize_net("int8", dequantize_is_output=True).recipe(), [PASS], {"DEQUANTIZE": 1}
    )
    assert_said(report, PASS, "'wf' is seen from outside the graph (a model output stays computed)")
