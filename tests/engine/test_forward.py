"""forward.py: the pure input-channel fold, padding, and which layers read a tensor."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net
from bnfold.engine.forward import (
    Crossing,
    along_input,
    constant_input_response,
    find_sinks,
    fold_input_scale,
    padding_refusal,
)
from bnfold.engine.report import Refusal
from bnfold.ir.ops import LAYERS
from bnfold.reference import interpreter

RNG = np.random.default_rng(12)


def test_along_input_exact_repeat_tile():
    v = np.array([1.0, 2.0, 3.0])
    assert along_input(np.zeros((4, 1, 1, 3)), LAYERS["CONV_2D"], v).tolist() == [1, 2, 3]
    assert along_input(np.zeros((1, 1, 1, 6)), LAYERS["DEPTHWISE_CONV_2D"], v).tolist() == [1, 1, 2, 2, 3, 3]
    assert along_input(np.zeros((2, 6)), LAYERS["FULLY_CONNECTED"], v).tolist() == [1, 2, 3, 1, 2, 3]


def test_fold_input_scale_is_one_rounding_of_w_times_the_laid_out_scale():
    w = RNG.normal(0, 1, (5, 6)).astype(np.float32)
    s = RNG.uniform(0.5, 2, 3)
    new_w = np.asarray(fold_input_scale(w, LAYERS["FULLY_CONNECTED"], s))  # a flattened map of 2 positions x 3 channels
    assert np.array_equal(new_w, (w.astype(np.float64) * np.tile(s, 2)).astype(np.float32))
    x = RNG.normal(0, 1, (2, 6))
    np.testing.assert_allclose(
        x @ new_w.T.astype(np.float64), (x * np.tile(s, 2)) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-6
    )


def conv_net(padding: str, kernel=(3, 2), channels_in=3) -> Net:
    n = Net()
    n.input("ifm", [1, 6, 7, channels_in])
    h = 6 - kernel[0] + 1 if padding == "VALID" else 6
    w = 7 - kernel[1] + 1 if padding == "VALID" else 7
    n.op(
        "CONV_2D",
        ["ifm", n.const("filter", [4, *kernel, channels_in]), n.const("bias", [4])],
        "y",
        [1, h, w, 4],
        padding=padding,
        stride_w=1,
        stride_h=1,
    )
    return n


def test_constant_input_response_is_what_a_valid_conv_adds_for_a_constant_image():
    model = conv_net("VALID").model()
    conv = model.graphs[0].ops[0]
    c = RNG.normal(0, 1, 3)
    image = np.broadcast_to(c.astype(np.float32), (1, 6, 7, 3)).copy()
    got = interpreter.run(model, [image])[0] - interpreter.run(model, [np.zeros_like(image)])[0]
    want = constant_input_response(conv.inputs[1].data, LAYERS["CONV_2D"], c)
    np.testing.assert_allclose(got[0, 0, 0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "padding, kernel, pads", [("VALID", (3, 2), False), ("SAME", (1, 1), False), ("SAME", (3, 2), True)]
)
def test_padding_refusal(padding, kernel, pads):
    graph = conv_net(padding, kernel).model().graphs[0]
    conv = graph.ops[0]
    refusal = padding_refusal(conv, conv.inputs[0])
    assert (refusal is not None) == pads
    assert refusal is None or "SAME padding" in refusal.reason


def readers_net(between: str | None) -> Net:
    n = Net()
    n.input("x", [1, 6, 7, 3])
    v = "x"
    if between == "MAX_POOL_2D":
        v = n.op(
            "MAX_POOL_2D",
            [v],
            "pooled",
            [1, 6, 7, 3],
            padding="SAME",
            stride_w=1,
            stride_h=1,
            filter_width=2,
            filter_height=2,
        )
    if between == "PAD":
        v = n.op(
            "PAD",
            [v, n.tensor("pads", [4, 2], "INT32", {"kind": "explicit", "values": [0, 0, 1, 1, 1, 1, 0, 0]})],
            "padded",
            [1, 8, 9, 3],
        )
    shape = n.shapes[v]
    n.op(
        "CONV_2D",
        [v, n.const("filter", [4, 3, 3, 3]), n.const("bias", [4])],
        "y",
        [1, shape[1] - 2, shape[2] - 2, 4],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    return n


AFFINE = Crossing(frozenset({"NONE"}), nonnegative=False)
POSITIVE_SCALE = Crossing(frozenset({"NONE", "RELU"}), nonnegative=True)


def test_find_sinks_direct_and_through_scale_commuting_ops():
    graph = readers_net(None).model().graphs[0]
    [sink] = find_sinks(graph, graph.inputs[0], 3, AFFINE)
    assert sink.layer.kind == "CONV_2D" and sink.padding is None and sink.via is None and sink.root is sink.layer
    graph = readers_net("MAX_POOL_2D").model().graphs[0]
    refusal = find_sinks(graph, graph.inputs[0], 3, AFFINE)
    assert isinstance(refusal, Refusal) and "MAX_POOL_2D" in refusal.reason and "negative scale" in refusal.reason
    [sink] = find_sinks(graph, graph.inputs[0], 3, POSITIVE_SCALE)
    assert sink.layer.kind == "CONV_2D" and sink.padding is None and sink.root.kind == "MAX_POOL_2D"
    graph = readers_net("PAD").model().graphs[0]
    [sink] = find_sinks(graph, graph.inputs[0], 3, POSITIVE_SCALE)
    assert "zero PAD" in sink.padding.reason


def test_find_sinks_maps_the_channel_through_a_transpose():
    n = Net()
    n.input("x", [1, 3, 6, 7])  # NCHW
    t = n.op("TRANSPOSE", ["x", n.ints("perm", [0, 2, 3, 1])], "nhwc", [1, 6, 7, 3])
    n.op(
        "CONV_2D",
        [t, n.const("filter", [4, 3, 3, 3]), n.const("bias", [4])],
        "y",
        [1, 4, 5, 4],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    graph = n.model().graphs[0]
    [sink] = find_sinks(graph, graph.inputs[0], 1, AFFINE)
    assert sink.root.kind == "TRANSPOSE" and sink.layer.kind == "CONV_2D"
    refusal = find_sinks(graph, graph.inputs[0], 2, AFFINE)  # a per-row constant is not per channel
    assert isinstance(refusal, Refusal) and "reads the channel on axis 1, not its channel axis" in refusal.reason


def test_find_sinks_follows_a_flatten_into_fc():
    n = Net()
    n.input("x", [1, 2, 2, 3])
    flat = n.op("RESHAPE", ["x", n.ints("shape", [1, 12])], "flat", [1, 12])
    n.op("FULLY_CONNECTED", [flat, n.const("w", [5, 12]), n.const("b", [5])], "y", [1, 5])
    graph = n.model().graphs[0]
    [sink] = find_sinks(graph, graph.inputs[0], 3, AFFINE)
    assert sink.via.kind == "RESHAPE" and sink.layer.kind == "FULLY_CONNECTED" and sink.inner == 1
