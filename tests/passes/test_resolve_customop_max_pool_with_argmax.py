"""resolve_customop_max_pool_with_argmax: a CUSTOM MaxPoolWithArgmax becomes MAX_POOL_2D and a per-tap
comparison chain whose indices equal TensorFlow's (the reference interpreter's TF kernel: the
first maximum of a window in row-major order, the batch term on request), ties included; other
windows and padding kinds stay."""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers

from bn_models import Net
from bnfold import api
from custom_ops import resolve_and_compare

PASS = "resolve_customop_max_pool_with_argmax"


def argmax_net(x_shape, out_hw, ksize, strides, padding, *, dtype="INT64", batch=False, relu=True) -> Net:
    n = Net()
    n.input("x", x_shape)
    x = n.op("RELU", ["x"], "r", x_shape) if relu else "x"  # zeros tie: the first tap must win
    out = [x_shape[0], *out_hw, x_shape[3]]
    n.tensor("m", out)
    n.tensor("idx", out, dtype)
    options = {
        "ksize": [1, *ksize, 1],
        "strides": [1, *strides, 1],
        "padding": padding,
        "include_batch_in_index": batch,
    }
    n.operations.append(
        {
            "type": "CUSTOM",
            "custom_code": "MaxPoolWithArgmax",
            "inputs": [x],
            "outputs": ["m", "idx"],
            "custom_options": options,
        }
    )
    n.outputs = ["m", "idx"]
    return n


@pytest.mark.parametrize(
    "x_shape, out_hw, ksize, strides, padding, selects",
    [
        ([1, 6, 4, 3], [3, 2], [2, 2], [2, 2], "VALID", 3),
        ([2, 5, 4, 2], [3, 4], [3, 2], [2, 1], "SAME", 5),
        ([1, 5, 5, 2], [2, 2], [3, 3], [2, 2], "VALID", 8),  # overlapping windows
        ([1, 4, 3, 2], [4, 3], [1, 1], [1, 1], "VALID", 0),
    ],
)
@pytest.mark.parametrize("dtype, batch", [("INT64", False), ("INT32", True)])
def test_max_pool_with_argmax_becomes_builtins(x_shape, out_hw, ksize, strides, padding, selects, dtype, batch):
    recipe = argmax_net(x_shape, out_hw, ksize, strides, padding, dtype=dtype, batch=batch).recipe()
    model, report = resolve_and_compare(
        recipe, [PASS], {"MAX_POOL_2D": 1, "SELECT_V2": selects, "CUSTOM(MaxPoolWithArgmax)": 0}
    )
    assert report.folds[0]["resolved"] == "MaxPoolWithArgmax"
    assert [t.name for t in model.graphs[0].outputs] == ["m", "idx"] and model.graphs[0].outputs[1].dtype == dtype


def test_reference_kernel_picks_the_first_maximum():
    from bnfold.reference import interpreter

    model = argmax_net([1, 2, 2, 1], [1, 1], [2, 2], [2, 2], "VALID", relu=False).model()
    _, idx = interpreter.run(model, [np.array([[[[1.0], [3.0]], [[3.0], [2.0]]]], np.float32)])
    assert idx.ravel().tolist() == [1]


@pytest.mark.parametrize(
    "options",
    [
        {"ksize": [2, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"},  # a window over the batch
        {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "EXPLICIT"},
        {"ksize": [1, 2, 2], "strides": [1, 2, 2, 1], "padding": "VALID"},
    ],
)
def test_other_windows_stay(options):
    model = argmax_net([2, 4, 4, 1], [2, 2], [2, 2], [2, 2], "VALID").model()
    model.graphs[0].ops[1].record.customOptions = list(flexbuffers.Dumps(options))
    report = api.apply_passes(model, [PASS])
    assert not report.folds and model.op_counts()["CUSTOM(MaxPoolWithArgmax)"] == 1
