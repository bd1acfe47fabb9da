"""resolve_customop_splitv: a CUSTOM SplitV becomes SPLIT_V (INT64 constants given as INT32 copies);
pieces agree (original in the reference interpreter's TensorFlow kernel, result in LiteRT); sizes
that are not a constant, or do not fit int32, stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said
from custom_ops import resolve_and_compare

PASS = "resolve_customop_splitv"


def splitv_net(sizes, axis, *, dtype="INT32", const_sizes=True, shape=(2, 9, 3)) -> Net:
    n = Net()
    n.input("x", list(shape))
    if const_sizes:
        s = n.tensor("sizes", [len(sizes)], dtype, {"kind": "explicit", "values": sizes})
    else:
        n.inputs.append(n.tensor("sizes", [len(sizes)], dtype))
        s = "sizes"
    a = n.tensor("axis", [], dtype, {"kind": "explicit", "values": [axis]})
    dim = axis % len(shape)
    rest = shape[dim] - sum(v for v in sizes if v != -1)
    outs = []
    for i, size in enumerate(sizes):
        outs.append(
            n.tensor(f"y{i}", [(rest if size == -1 else size) if d == dim else shape[d] for d in range(len(shape))])
        )
    n.operations.append(
        {
            "type": "CUSTOM",
            "custom_code": "SplitV",
            "inputs": ["x", s, a],
            "outputs": outs,
            "custom_options": {"num_split": len(sizes)},
        }
    )
    n.outputs = outs
    return n


@pytest.mark.parametrize("dtype", ["INT32", "INT64"])
@pytest.mark.parametrize("sizes, axis", [([2, 3, 4], 1), ([2, -1], -1), ([1, 1], 0)])
def test_splitv_becomes_split_v(sizes, axis, dtype):
    model, _ = resolve_and_compare(
        splitv_net(sizes, axis, dtype=dtype).recipe(), [PASS], {"SPLIT_V": 1, "CUSTOM(SplitV)": 0}
    )
    (op,) = model.graphs[0].ops
    assert op.options.numSplits == len(sizes) and [t.dtype for t in op.inputs[1:]] == ["INT32", "INT32"]
    assert np.array_equal(op.inputs[1].data, sizes) and [t.name for t in op.outputs] == [
        f"y{i}" for i in range(len(sizes))
    ]


def test_sizes_computed_at_run_time_stay_and_say_why():
    from bnfold import api

    model = splitv_net([2, 3, 4], 1, const_sizes=False).model()
    report = api.apply_passes(model, [PASS])
    assert not report.folds and model.op_counts()["CUSTOM(SplitV)"] == 1
    assert_said(report, PASS, "the sizes or the axis are no constant integers")


def test_no_split_v_is_made_for_onert():
    """onert 0.1.0 computes SPLIT_V wrong (zeros or garbage: the table's probe, SPLIT is right), so for
    onert the CUSTOM SplitV stays with the reason (seed 50661 of the O1 fuzzer); for LiteRT it goes."""
    from bnfold import api
    from bnfold.io.formats import CIRCLE
    from bnfold.recipe.chef import build

    model = build(splitv_net([2, 3, 4], 1).recipe(), CIRCLE)
    report = api.apply_passes(model, [PASS], "onert")
    assert not report.folds and model.op_counts() == {"CUSTOM(SplitV)": 1}
    [refused] = report.to_dict()["target"]["refused"]
    assert refused["pass"] == PASS and refused["reason"] == "onert does not run SPLIT_V"
    for_litert = build(splitv_net([2, 3, 4], 1).recipe(), CIRCLE)
    assert api.apply_passes(for_litert, [PASS], "litert").folds and for_litert.op_counts() == {"SPLIT_V": 1}
