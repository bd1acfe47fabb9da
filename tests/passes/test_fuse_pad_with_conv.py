"""fuse_pad_with_conv: a zero PAD before a VALID conv goes when it pads what SAME would; any
other PAD (another split, a non-zero value, the channel axis, another reader) stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "fuse_pad_with_conv"


def padded_net(
    size=7,
    kernel=5,
    stride=2,
    pads=((0, 0), (2, 2), (2, 2), (0, 0)),
    *,
    depthwise=True,
    kind="PAD",
    value=0.0,
    other_reader=False,
) -> Net:
    """x [1,size,size,3] -> PAD(pads) -> VALID conv (kernel, stride) -> y [-> x_pad also a RELU's]."""
    n = Net()
    n.input("x", [1, size, size, 3])
    padded = [1, size + sum(pads[1]), size + sum(pads[2]), 3 + sum(pads[3])]
    inputs = ["x", n.tensor("pads", [4, 2], "INT32", {"kind": "explicit", "values": [v for p in pads for v in p]})]
    if kind == "PADV2":
        inputs.append(n.const("value", [], values=[value]))
    p = n.op(kind, inputs, "x_pad", padded)
    out = [1, (padded[1] - kernel) // stride + 1, (padded[2] - kernel) // stride + 1]
    options = dict(padding="VALID", stride_w=stride, stride_h=stride)
    if depthwise:
        y = n.op(
            "DEPTHWISE_CONV_2D",
            [p, n.const("w", [1, kernel, kernel, padded[3]]), n.const("b", [padded[3]])],
            "y",
            out + [padded[3]],
            depth_multiplier=1,
            **options,
        )
    else:
        y = n.op(
            "CONV_2D", [p, n.const("w", [4, kernel, kernel, padded[3]]), n.const("b", [4])], "y", out + [4], **options
        )
    n.outputs = [y] + ([n.op("RELU", [p], "r", padded)] if other_reader else [])
    return n


@pytest.mark.parametrize(
    "net",
    [
        padded_net(),  # mnasnet's last stride-2 5x5: SAME pads 2 and 2 on 7
        padded_net(size=6, kernel=3, stride=1, pads=((0, 0), (1, 1), (1, 1), (0, 0)), depthwise=False),
        padded_net(size=6, kernel=3, stride=2, pads=((0, 0), (0, 1), (0, 1), (0, 0)), kind="PADV2"),
    ],
    ids=["dwconv_5x5_s2", "conv_3x3_s1", "padv2_s2_after_only"],
)
def test_pad_that_same_would_make_goes(net):
    model, report = optimize_and_compare(net.recipe(), [PASS], {"PAD": 0, "PADV2": 0})
    layer = model.graphs[0].ops[0]
    assert layer.options.padding == 0 and layer.inputs[0].name == "x" and len(report.folds) == 1  # SAME


@pytest.mark.parametrize(
    "net, reason",
    [
        (
            padded_net(size=8, kernel=3, stride=2, pads=((0, 0), (1, 1), (1, 1), (0, 0))),
            "pads [1, 1] along the height; SAME would pad [0, 1]",
        ),
        (
            padded_net(kind="PADV2", value=0.5),
            "the PADV2's paddings are not constant, or it pads another value than zero",
        ),
        (
            padded_net(size=7, kernel=1, stride=1, pads=((0, 0), (0, 0), (0, 0), (0, 2)), depthwise=False),
            "the PAD pads the batch or channel axis",
        ),
        (padded_net(other_reader=True), "'x_pad' is read by more than the DEPTHWISE_CONV_2D (or is a model output)"),
    ],
    ids=["another_split", "non_zero_value", "channel_pad", "other_reader"],
)
def test_other_pads_stay_and_say_why(net, reason):
    _, report = optimize_and_compare(
        net.recipe(),
        [PASS],
        {"PAD": int("PADV2" not in str(net.operations)), "PADV2": int("PADV2" in str(net.operations))},
    )
    assert_said(report, PASS, reason)
