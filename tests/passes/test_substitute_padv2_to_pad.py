"""substitute_padv2_to_pad: PyTorch's max-pool padding (PADV2 by -3.4e38 of a RELU output before a
MAX_POOL_2D, also with the NCHW TRANSPOSEs around it) becomes a PAD of zeros; a possibly negative
input, a padding as wide as the window or another reader keeps the PADV2."""

from __future__ import annotations

import pytest

from bn_models import Net, optimize_and_compare

PASS = "substitute_padv2_to_pad"
LOWEST = -3.4028234663852886e38


def pool_net(*, relu=True, pad=1, window=3, transposes=False, other_reader=False, value=LOWEST) -> Net:
    """x [1,6,7,2] -> RELU -> r [-> TRANSPOSE NCHW] -> PADV2 -> p [-> TRANSPOSE NHWC] -> MAX_POOL_2D -> y."""
    n = Net()
    n.input("x", [1, 6, 7, 2])
    r = n.op("RELU" if relu else "TANH", ["x"], "r", [1, 6, 7, 2])
    padded = [1, 6 + 2 * pad, 7 + 2 * pad, 2]
    if transposes:
        r = n.op("TRANSPOSE", [r, n.ints("to_nchw", [0, 3, 1, 2])], "r_nchw", [1, 2, 6, 7])
        rows, shape = [0, 0, 0, 0, pad, pad, pad, pad], [1, 2, padded[1], padded[2]]
    else:
        rows, shape = [0, 0, pad, pad, pad, pad, 0, 0], padded
    n.tensor("paddings", [4, 2], "INT32", {"kind": "explicit", "values": rows})
    p = n.op("PADV2", [r, "paddings", n.const("value", [], values=[value])], "p", shape)
    if transposes:
        p = n.op("TRANSPOSE", [p, n.ints("to_nhwc", [0, 2, 3, 1])], "p_nhwc", padded)
    out = [1, padded[1] - window + 1, padded[2] - window + 1, 2]
    options = dict(padding="VALID", stride_w=1, stride_h=1, filter_width=window, filter_height=window)
    n.outputs = [n.op("MAX_POOL_2D", [p], "y", out, **options)]
    if other_reader:
        n.outputs.append(n.op("EXP", [p], "e", n.shapes[p]))
    return n


@pytest.mark.parametrize("transposes", [False, True])
@pytest.mark.parametrize("value", [LOWEST, 0.0, -1.5])
def test_max_pool_padding_becomes_a_pad(transposes, value):
    recipe = pool_net(transposes=transposes, value=value).recipe()
    optimize_and_compare(recipe, [PASS], {"PADV2": 0, "PAD": 1, "MAX_POOL_2D": 1})


@pytest.mark.parametrize("case", [dict(relu=False), dict(pad=3), dict(other_reader=True), dict(value=0.5)])
def test_padv2_that_a_zero_could_change_stays(case):
    optimize_and_compare(pool_net(**case).recipe(), [PASS], {"PADV2": 1, "PAD": 0})
