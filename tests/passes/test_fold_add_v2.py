"""fold_add_v2: TensorFlow's AddV2 kept as a custom operator, of two integer constants, becomes
their sum; one of float constants or of a computed value stays (no runtime runs the custom op, so
values are checked on the folded model)."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, optimize_and_compare, runnable
from bnfold.values import litert

PASS = "fold_add_v2"


def add_v2_net(dtype="INT32", *, from_input=False) -> Net:
    """a [2,3] + b [3] by CUSTOM(AddV2) -> s, the indices of a GATHER of x [4,5] along axis 1 -> y:
    the index arithmetic a converter leaves."""
    n = Net()
    n.input("x", [4, 5])
    a = n.tensor("a", [2, 3], dtype, {"kind": "explicit", "values": [0, 1, 2, 1, 0, -1]})
    b = n.input("b", [3]) if from_input else n.tensor("b", [3], dtype, {"kind": "explicit", "values": [1, 2, 1]})
    if from_input:
        n.operands[-1]["dtype"] = dtype
    s = n.tensor("s", [2, 3], dtype)
    n.operations.append({"type": "CUSTOM", "custom_code": "AddV2", "inputs": [a, b], "outputs": [s]})
    n.outputs = [n.op("GATHER", ["x", s], "y", [4, 2, 3], axis=1)]
    return n


@pytest.mark.parametrize("dtype", ["INT32", "INT64"])
def test_add_v2_of_integer_constants_is_computed(dtype):
    model, _ = optimize_and_compare(add_v2_net(dtype).recipe(), [PASS], {"CUSTOM(AddV2)": 0}, numerics=False)
    s = model.graphs[0].tensor("s")
    np.testing.assert_array_equal(s.data, [[1, 3, 3], [2, 2, 0]])
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    (y,) = litert.run(runnable(model), [x])
    np.testing.assert_array_equal(y, np.take(x, [[1, 3, 3], [2, 2, 0]], axis=1))


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(dtype="FLOAT32"), "AddV2 is folded for two INT32 or two INT64 constants only"),
        (dict(from_input=True), None),
    ],
)
def test_add_v2_of_floats_or_of_a_computed_value_stays(case, reason):
    _, report = optimize_and_compare(add_v2_net(**case).recipe(), [PASS], {"CUSTOM(AddV2)": 1}, numerics=False)
    assert report.folds == []
    assert_said(report, PASS, reason)  # a computed value is no candidate: nothing to say
