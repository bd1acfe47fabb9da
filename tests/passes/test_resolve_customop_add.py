"""resolve_customop_add: a CUSTOM AddV2 becomes ADD computing the same sums (the original run by the
reference interpreter's TensorFlow kernels, the result by LiteRT); a BroadcastTo feeding it is
skipped only where ADD's own broadcast gives the same shape; other types stay."""

from __future__ import annotations

import math

import pytest

from bn_models import Net, assert_said
from custom_ops import resolve_and_compare

PASS = "resolve_customop_add"


def addv2_net(a_shape, b_shape, out_shape, *, broadcast_to=None, custom_broadcast=False, dtype="FLOAT32") -> Net:
    n = Net()
    n.inputs.append(n.tensor("a", a_shape, dtype))
    b = (
        n.const("b", b_shape, dtype=dtype)
        if dtype == "FLOAT32"
        else n.tensor("b", b_shape, dtype, {"kind": "explicit", "values": list(range(math.prod(b_shape)))})
    )
    if broadcast_to is not None:
        shape = n.ints("bc_shape", broadcast_to)
        if custom_broadcast:
            n.tensor("b_bc", broadcast_to, dtype)
            n.operations.append(
                {"type": "CUSTOM", "custom_code": "BroadcastTo", "inputs": [b, shape], "outputs": ["b_bc"]}
            )
            b = "b_bc"
        else:
            b = n.op("BROADCAST_TO", [b, shape], "b_bc", broadcast_to, version=2)
    n.tensor("y", out_shape, dtype)
    n.operations.append(
        {"type": "CUSTOM", "custom_code": "AddV2", "inputs": ["a", b], "outputs": ["y"], "custom_options": {"T": 1}}
    )
    n.outputs = ["y"]
    return n


@pytest.mark.parametrize("dtype", ["FLOAT32", "INT32"])
def test_addv2_becomes_add(dtype):
    model, report = resolve_and_compare(
        addv2_net([2, 3, 4], [4], [2, 3, 4], dtype=dtype).recipe(), [PASS], {"ADD": 1, "CUSTOM(AddV2)": 0}
    )
    (add,) = model.graphs[0].ops
    assert [t.name for t in add.inputs] == ["a", "b"] and add.outputs[0].name == "y"
    assert report.folds[0]["resolved"] == "AddV2"


@pytest.mark.parametrize("custom_broadcast", [False, True])
def test_broadcast_add_does_itself_is_skipped(custom_broadcast):
    recipe = addv2_net([2, 3, 4], [3, 1], [2, 3, 4], broadcast_to=[2, 3, 4], custom_broadcast=custom_broadcast).recipe()
    kind = "CUSTOM(BroadcastTo)" if custom_broadcast else "BROADCAST_TO"
    model, _ = resolve_and_compare(recipe, [PASS], {"ADD": 1, kind: 0, "CUSTOM(AddV2)": 0})
    assert [t.name for t in model.graphs[0].ops[0].inputs] == ["a", "b"]


def test_broadcast_that_adds_axes_stays():
    # [3, 4] + BroadcastTo([4] -> [2, 3, 4]) is [2, 3, 4]; ADD([3, 4], [4]) would be [3, 4]
    recipe = addv2_net([3, 4], [4], [2, 3, 4], broadcast_to=[2, 3, 4]).recipe()
    model, _ = resolve_and_compare(recipe, [PASS], {"ADD": 1, "BROADCAST_TO": 1, "CUSTOM(AddV2)": 0})
    assert model.graphs[0].outputs[0].shape == (2, 3, 4)


def test_int16_addv2_stays_and_says_why():
    _, report = resolve_and_compare(
        addv2_net([2, 3], [3], [2, 3], dtype="INT16").recipe(), [PASS], {"ADD": 0, "CUSTOM(AddV2)": 1}
    )
    assert_said(report, PASS, "ADD takes two operands and an output of one type: FLOAT32, INT32 or INT64, unquantized")
