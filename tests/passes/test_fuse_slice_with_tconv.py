"""fuse_slice_with_tconv: a SLICE of a TRANSPOSE_CONV's output becomes its padding, output size and
filter rows where VALID or SAME crops at the same place for a transposed convolution of the
input's size; LiteRT values agree exactly. Offsets no padding kind gives, a batch slice and a
TRANSPOSE_CONV read elsewhere stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "fuse_slice_with_tconv"
X = [1, 4, 3, 2]


def tconv_slice_net(out, padding, begin, size, *, bias=True, kernel=(3, 3), other=False) -> Net:
    n = Net()
    n.input("x", X)
    inputs = [n.ints("out_shape", out), n.const("w", [out[3], *kernel, X[3]]), "x"]
    if bias:
        inputs.append(n.const("b", [out[3]]))
    t = n.op("TRANSPOSE_CONV", inputs, "t", out, version=3, padding=padding, stride_w=2, stride_h=2)
    shape = [d - b if s == -1 else s for d, b, s in zip(out, begin, size)]
    n.outputs = [n.op("SLICE", [t, n.ints("begin", begin), n.ints("size", size)], "y", shape)]
    if other:
        n.outputs.append(n.op("RELU", [t], "r", out))
    return n


@pytest.mark.parametrize(
    "out, padding, begin, size, new_padding",
    [
        ([1, 9, 7, 5], "VALID", [0, 1, 1, 1], [1, 7, 5, 3], "SAME"),  # crop one pixel each side: SAME
        ([1, 8, 6, 5], "SAME", [0, 0, 0, 2], [-1, -1, -1, 2], "SAME"),  # channels only
        ([1, 9, 7, 5], "VALID", [0, 0, 0, 0], [1, 9, 7, 4], "VALID"),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_slice_becomes_part_of_the_transpose_conv(out, padding, begin, size, new_padding, bias):
    model, report = optimize_and_compare(
        tconv_slice_net(out, padding, begin, size, bias=bias).recipe(), [PASS], {"TRANSPOSE_CONV": 1, "SLICE": 0}
    )
    (tconv,) = model.graphs[0].ops
    original = tconv_slice_net(out, padding, begin, size, bias=bias).model().graphs[0]
    assert report.folds[0]["padding"] == new_padding and tconv.outputs[0].name == "y"
    assert np.array_equal(
        tconv.inputs[1].data, original.tensor("w").data[begin[3] : begin[3] + tconv.outputs[0].shape[3]]
    )


@pytest.mark.parametrize(
    "case, reason",
    [
        (
            dict(out=[1, 9, 7, 5], padding="VALID", begin=[0, 1, 0, 0], size=[1, 8, 7, 5]),
            "no padding of the TRANSPOSE_CONV crops its output at [1, 0] to [8, 7] (height, width)",
        ),
        (
            dict(out=[1, 9, 7, 5], padding="VALID", begin=[0, 2, 2, 0], size=[1, 5, 3, 5]),
            "no padding of the TRANSPOSE_CONV crops its output at [2, 2] to [5, 3] (height, width)",
        ),
        (
            dict(out=[1, 9, 7, 5], padding="VALID", begin=[0, 1, 1, 1], size=[1, 7, 5, 3], other=True),
            "has another reader than the SLICE, so it must stay computed",
        ),
    ],
)
def test_other_slices_stay_and_say_why(case, reason):
    _, report = optimize_and_compare(tconv_slice_net(**case).recipe(), [PASS], {"TRANSPOSE_CONV": 1, "SLICE": 1})
    assert_said(report, PASS, reason)
