"""substitute_padv2_to_pad: PyTorch's max-pool padding (PADV2 by -3.4e38 of a RELU output before a
MAX_POOL_2D, also with the NCHW TRANSPOSEs around it) becomes a PAD of zeros; a possibly negative
input, a padding as wide as the window, a padded batch or channel axis, a SAME window over padding
only, or another reader keeps the PADV2, with the reason (o1_repros: each wrote a model that differs)."""

from __future__ import annotations

import pytest

from bn_models import Net, optimize_and_compare

PASS = "substitute_padv2_to_pad"
LOWEST = -3.4028234663852886e38


def pool_net(
    *,
    relu=True,
    pad=1,
    window=3,
    transposes=False,
    other_reader=False,
    value=LOWEST,
    padding="VALID",
    stride=1,
    batch_pad=0,
    channel_pad=0,
) -> Net:
    """x [1,6,7,2] -> RELU -> r [-> TRANSPOSE NCHW] -> PADV2 -> p [-> TRANSPOSE NHWC] -> MAX_POOL_2D -> y."""
    n = Net()
    n.input("x", [1, 6, 7, 2])
    r = n.op("RELU" if relu else "TANH", ["x"], "r", [1, 6, 7, 2])
    padded = [1 + batch_pad, 6 + 2 * pad, 7 + 2 * pad, 2 + channel_pad]
    if transposes:
        r = n.op("TRANSPOSE", [r, n.ints("to_nchw", [0, 3, 1, 2])], "r_nchw", [1, 2, 6, 7])
        rows = [batch_pad, 0, 0, channel_pad, pad, pad, pad, pad]
        shape = [padded[0], padded[3], padded[1], padded[2]]
    else:
        rows, shape = [batch_pad, 0, pad, pad, pad, pad, 0, channel_pad], padded
    n.tensor("paddings", [4, 2], "INT32", {"kind": "explicit", "values": rows})
    p = n.op("PADV2", [r, "paddings", n.const("value", [], values=[value])], "p", shape)
    if transposes:
        p = n.op("TRANSPOSE", [p, n.ints("to_nhwc", [0, 2, 3, 1])], "p_nhwc", padded)
    if padding == "VALID":
        out = [padded[0], (padded[1] - window) // stride + 1, (padded[2] - window) // stride + 1, padded[3]]
    else:
        out = [padded[0], -(-padded[1] // stride), -(-padded[2] // stride), padded[3]]
    options = dict(padding=padding, stride_w=stride, stride_h=stride, filter_width=window, filter_height=window)
    n.outputs = [n.op("MAX_POOL_2D", [p], "y", out, **options)]
    if other_reader:
        n.outputs.append(n.op("EXP", [p], "e", n.shapes[p]))
    return n


@pytest.mark.parametrize("transposes", [False, True])
@pytest.mark.parametrize("value", [LOWEST, 0.0, -1.5])
def test_max_pool_padding_becomes_a_pad(transposes, value):
    recipe = pool_net(transposes=transposes, value=value).recipe()
    optimize_and_compare(recipe, [PASS], {"PADV2": 0, "PAD": 1, "MAX_POOL_2D": 1})


@pytest.mark.parametrize(
    "case",
    [
        dict(padding="SAME", window=3, pad=1),  # a SAME window adds one more position of pool padding
        dict(padding="SAME", window=3, pad=1, stride=2),
        dict(padding="VALID", window=3, pad=2, stride=2),  # as wide as it is allowed: window - 1
        dict(padding="SAME", window=5, pad=2, stride=2),
    ],
)
def test_padding_every_window_still_meets_becomes_a_pad(case):
    optimize_and_compare(pool_net(**case).recipe(), [PASS], {"PADV2": 0, "PAD": 1, "MAX_POOL_2D": 1})


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        (dict(relu=False), "is not made >= 0 by a RELU or RELU6"),
        (dict(pad=3), "VALID window of the pool along height holds padding only"),
        (dict(other_reader=True), "is read by more than a MAX_POOL_2D"),
        (dict(batch_pad=1), "pads the pool's batch or channel axis"),
        (dict(channel_pad=1), "pads the pool's batch or channel axis"),
        (dict(channel_pad=1, transposes=True), "pads the pool's batch or channel axis"),
        # SAME pads the pool by one in front: its first window holds the PADV2's two rows only
        (dict(padding="SAME", window=3, pad=2), "SAME window of the pool along height holds padding only"),
        (dict(padding="SAME", window=4, pad=3, stride=3), "SAME window of the pool along height holds padding"),
    ],
)
def test_padv2_that_a_zero_could_change_stays(case, reason):
    _, report = optimize_and_compare(pool_net(**case).recipe(), [PASS], {"PADV2": 1, "PAD": 0})
    (said,) = [n["reason"] for n in report.not_folded if n["pass"] == PASS]
    assert reason in said


def test_positive_pad_value_is_no_candidate_and_says_nothing():
    _, report = optimize_and_compare(pool_net(value=0.5).recipe(), [PASS], {"PADV2": 1, "PAD": 0})
    assert not [n for n in report.not_folded if n["pass"] == PASS]
