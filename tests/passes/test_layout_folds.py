"""Backward folds through layout ops (TRANSPOSE, RESHAPE, SQUEEZE, EXPAND_DIMS, BATCH_TO_SPACE_ND).

Every fold is checked the same way: operator counts afterwards, the layout ops still there, and
LiteRT outputs of the folded model against the original on normal(0, 2) inputs within
rtol = atol = 1e-5. Dimensions are all different sizes wherever the case allows, so an axis
mix-up changes a value.
"""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net
from bnfold import api
from bnfold.engine import layout
from bnfold.engine.backward import fold_backward
from bnfold.engine.leftovers import explain
from bnfold.engine.report import Refusal, Report
from bnfold.io.reader import read_model
from bnfold.ir.model import Model
from bnfold.ir.ops import LAYERS
from bnfold.values import litert
from conftest import DATA

TOL = 1e-5


def fold(model, kind):
    report = Report([f"fold_{kind}"])
    result = fold_backward(model.graphs[0], LAYERS[kind].backward_pass)
    report.add(f"fold_{kind}", 0, result)
    model.graphs[0].cleanup()
    report.skips = explain(model, report.said, report.passes)  # what the manager does at the end of a run
    return result.changed, report


def assert_same_outputs(original, folded, seed=0):
    rng = np.random.default_rng(seed)
    xs = [rng.normal(0, 2, t.shape).astype(np.float32) for t in original.graphs[0].inputs]
    for a, b in zip(litert.run(original, xs), litert.run(folded, xs)):
        np.testing.assert_allclose(b, a, rtol=TOL, atol=TOL)


def check_fold(net, kind, **rules):
    original, model = net.model(), net.model()
    changed, report = fold(model, kind)
    assert changed, report.skips
    counts = model.op_counts()
    for kind, want in rules.items():
        assert counts.get(kind, 0) == want, (kind, counts)
    assert_same_outputs(original, model)
    return model, report


def check_no_fold(net, kind, reason_part):
    original, model = net.model(), net.model()
    changed, report = fold(model, kind)
    assert not changed
    assert model.op_counts() == original.op_counts()
    assert any(reason_part in s["reason"] for s in report.skips), report.skips
    assert_same_outputs(original, model)
    return report


# ---- the layers -------------------------------------------------------------------------------


def conv2d(n, shape=(2, 7, 9, 4), out=5, padding="SAME"):
    x = n.input("ifm", shape)
    h, w = (shape[1], shape[2]) if padding == "SAME" else (shape[1] - 2, shape[2] - 1)
    return n.op(
        "CONV_2D",
        [x, n.const("filter", [out, 3, 2, shape[3]]), n.const("bias", [out])],
        "conv",
        [shape[0], h, w, out],
        padding=padding,
        stride_w=1,
        stride_h=1,
    ), [shape[0], h, w, out]


def nchw(n, x, shape):
    """TRANSPOSE NHWC(-like) -> channels-second, returns (tensor, shape)."""
    rank = len(shape)
    perm = [0, rank - 1] + list(range(1, rank - 1))
    out = [shape[p] for p in perm]
    return n.op("TRANSPOSE", [x, n.ints("perm", perm)], "transposed", out), out


# ---- fixtures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, convs, adds", [("torch_conv_bn_nchw.circle", 1, 0), ("torch_resblock_nchw.circle", 2, 1)]
)
def test_torch_nchw_fixture_folds_and_stays_circle(tmp_path, name, convs, adds):
    path = DATA / name
    original, model = read_model(str(path)), read_model(str(path))
    transposes = original.op_counts()["TRANSPOSE"]
    report = api.apply_passes(model, ["fuse_batchnorm_with_conv"])
    counts = model.op_counts()
    assert counts.get("MUL", 0) == 0 and counts.get("ADD", 0) == adds, counts  # only the residual ADD stays
    assert counts["TRANSPOSE"] == transposes and counts["CONV_2D"] == convs
    assert len(report.folds) == convs and not report.skips
    out = tmp_path / name
    api.save(model, str(out))
    assert out.read_bytes()[4:8] == b"CIR0"
    written = read_model(str(out))
    assert written.format.name.lower() == "circle"
    x = np.load(DATA / (name.rsplit(".", 1)[0] + ".input.npy"))
    want, got = litert.run(original, [x]), litert.run(written, [x])
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(got[0], np.load(DATA / (name.rsplit(".", 1)[0] + ".ref.npy")), rtol=1e-4, atol=1e-4)


def test_resblock_transposes_untouched():
    path = str(DATA / "torch_resblock_nchw.circle")
    original, model = read_model(path), read_model(path)
    api.apply_passes(model, ["fuse_batchnorm_with_conv"])

    def perms(m: Model) -> list:
        return [np.asarray(op.input(1).data).tolist() for op in m.graphs[0].ops if op.kind == "TRANSPOSE"]

    assert perms(model) == perms(original)
    # the first BN's ADD carried the RELU: it is now on the first conv
    convs = [op for op in model.graphs[0].ops if op.kind == "CONV_2D"]
    assert [c.fused_activation for c in convs] == ["RELU", "NONE"]


# ---- positive cases per layer kind ------------------------------------------------------------------


def test_conv2d_through_transpose():
    n = Net()
    y, shape = conv2d(n)
    t, tshape = nchw(n, y, shape)
    n.bn(t, tshape, [1, shape[3], 1, 1])
    check_fold(n, "CONV_2D", MUL=0, ADD=0, TRANSPOSE=1)


def test_conv2d_through_squeeze():
    n = Net()
    x = n.input("ifm", [2, 3, 2, 4])
    y = n.op(
        "CONV_2D",
        [x, n.const("filter", [5, 3, 2, 4]), n.const("bias", [5])],
        "conv",
        [2, 1, 1, 5],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    s = n.op("SQUEEZE", [y], "squeezed", [2, 5], squeeze_dims=[1, 2])
    n.bn(s, [2, 5], [5])
    check_fold(n, "CONV_2D", MUL=0, ADD=0, SQUEEZE=1)


def test_depthwise_multiplier_through_transpose():
    n = Net()
    x = n.input("ifm", [2, 6, 7, 3])
    y = n.op(
        "DEPTHWISE_CONV_2D",
        [x, n.const("filter", [1, 3, 2, 6]), n.const("bias", [6])],
        "dw",
        [2, 4, 6, 6],
        padding="VALID",
        stride_w=1,
        stride_h=1,
        depth_multiplier=2,
    )
    t, tshape = nchw(n, y, [2, 4, 6, 6])
    n.bn(t, tshape, [1, 6, 1, 1])
    check_fold(n, "DEPTHWISE_CONV_2D", MUL=0, ADD=0, TRANSPOSE=1)


def test_transpose_conv_through_transpose():
    n = Net()
    x = n.input("ifm", [2, 4, 5, 3])
    y = n.op(
        "TRANSPOSE_CONV",
        [n.ints("out_shape", [2, 8, 10, 6]), n.const("filter", [6, 3, 2, 3]), x, n.const("bias", [6])],
        "tconv",
        [2, 8, 10, 6],
        padding="SAME",
        stride_w=2,
        stride_h=2,
    )
    t, tshape = nchw(n, y, [2, 8, 10, 6])
    n.bn(t, tshape, [6, 1, 1])
    check_fold(n, "TRANSPOSE_CONV", MUL=0, ADD=0, TRANSPOSE=1)


def test_fully_connected_through_expand_dims():
    n = Net()
    x = n.input("ifm", [3, 7])
    y = n.op("FULLY_CONNECTED", [x, n.const("weights", [5, 7]), n.const("bias", [5])], "fc", [3, 5])
    e = n.op("EXPAND_DIMS", [y, n.ints("axis", [1])], "expanded", [3, 1, 5])
    n.bn(e, [3, 1, 5], [1, 1, 5])
    check_fold(n, "FULLY_CONNECTED", MUL=0, ADD=0, EXPAND_DIMS=1)


def test_fully_connected_through_reshape_to_4d():
    n = Net()
    x = n.input("ifm", [3, 7])
    y = n.op("FULLY_CONNECTED", [x, n.const("weights", [5, 7]), n.const("bias", [5])], "fc", [3, 5])
    r = n.op("RESHAPE", [y, n.ints("shape", [3, 1, 1, 5])], "reshaped", [3, 1, 1, 5], new_shape=[3, 1, 1, 5])
    n.bn(r, [3, 1, 1, 5], [1, 1, 1, 5])
    check_fold(n, "FULLY_CONNECTED", MUL=0, ADD=0, RESHAPE=1)


def test_conv3d_through_transpose():
    n = Net()
    x = n.input("ifm", [1, 4, 5, 6, 2])
    y = n.op(
        "CONV_3D",
        [x, n.const("filter", [2, 3, 2, 2, 3]), n.const("bias", [3])],
        "conv3d",
        [1, 4, 5, 6, 3],
        padding="SAME",
        stride_d=1,
        stride_w=1,
        stride_h=1,
        dilation_d_factor=1,
        dilation_w_factor=1,
        dilation_h_factor=1,
    )
    t, tshape = nchw(n, y, [1, 4, 5, 6, 3])
    n.bn(t, tshape, [1, 3, 1, 1, 1])
    check_fold(n, "CONV_3D", MUL=0, ADD=0, TRANSPOSE=1)


def test_atrous_conv_through_batch_to_space():
    n = Net()
    x = n.input("ifm", [2, 9, 11, 3])
    s2b = n.op(
        "SPACE_TO_BATCH_ND",
        [x, n.ints("block", [2, 2]), n.tensor("pads", [2, 2], "INT32", {"kind": "explicit", "values": [2, 3, 2, 1]})],
        "s2b",
        [8, 7, 7, 3],
    )
    y = n.op(
        "CONV_2D",
        [s2b, n.const("filter", [5, 3, 2, 3]), n.const("bias", [5])],
        "conv",
        [8, 5, 6, 5],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    b2s = n.op(
        "BATCH_TO_SPACE_ND",
        [y, n.ints("block2", [2, 2]), n.tensor("crops", [2, 2], "INT32", {"kind": "explicit", "values": [0, 1, 1, 0]})],
        "b2s",
        [2, 9, 11, 5],
    )
    n.bn(b2s, [2, 9, 11, 5], [5])
    check_fold(n, "CONV_2D", MUL=0, ADD=0, SPACE_TO_BATCH_ND=1, BATCH_TO_SPACE_ND=1)


def test_atrous_depthwise_through_batch_to_space():
    n = Net()
    x = n.input("ifm", [1, 8, 10, 3])
    s2b = n.op(
        "SPACE_TO_BATCH_ND",
        [x, n.ints("block", [2, 2]), n.tensor("pads", [2, 2], "INT32", {"kind": "explicit", "values": [2, 2, 1, 1]})],
        "s2b",
        [4, 6, 6, 3],
    )
    y = n.op(
        "DEPTHWISE_CONV_2D",
        [s2b, n.const("filter", [1, 3, 3, 6]), n.const("bias", [6])],
        "dw",
        [4, 4, 4, 6],
        padding="VALID",
        stride_w=1,
        stride_h=1,
        depth_multiplier=2,
    )
    b2s = n.op(
        "BATCH_TO_SPACE_ND",
        [y, n.ints("block2", [2, 2]), n.tensor("crops", [2, 2], "INT32", {"kind": "explicit", "values": [0, 0, 0, 0]})],
        "b2s",
        [1, 8, 8, 6],
    )
    n.bn(b2s, [1, 8, 8, 6], [1, 1, 1, 6], act="RELU6")
    model, _ = check_fold(n, "DEPTHWISE_CONV_2D", MUL=0, ADD=0, BATCH_TO_SPACE_ND=1)
    dw = next(op for op in model.graphs[0].ops if op.kind == "DEPTHWISE_CONV_2D")
    assert dw.fused_activation == "RELU6"


# ---- negatives ------------------------------------------------------------------------------------


def test_transpose_moving_channel_where_constant_does_not_follow():
    n = Net()
    y, shape = conv2d(n, shape=(2, 7, 5, 4))  # W = C = 5: a [C] constant broadcasts along W after the transpose
    t, tshape = nchw(n, y, shape)
    n.bn(t, tshape, [5])
    check_no_fold(n, "CONV_2D", "varies along axis 3, not only the channel axis 1")


def test_reshape_merging_channel_axis():
    n = Net()
    y, shape = conv2d(n)
    r = n.op("RESHAPE", [y, n.ints("shape", [2, 7, 45])], "merged", [2, 7, 45], new_shape=[2, 7, 45])
    n.bn(r, [2, 7, 45], [45])
    check_no_fold(n, "CONV_2D", "merges or splits the channel axis")


def test_batch_to_space_on_a_non_channel_axis():
    # a transpose first moves the channel off the last axis; BATCH_TO_SPACE_ND then mixes it with space
    n = Net()
    y, shape = conv2d(n, shape=(4, 6, 6, 3), out=6)
    t = n.op("TRANSPOSE", [y, n.ints("perm", [0, 3, 1, 2])], "t", [4, 6, 6, 6])
    b = n.op(
        "BATCH_TO_SPACE_ND",
        [t, n.ints("block", [2, 2]), n.tensor("crops", [2, 2], "INT32", {"kind": "explicit", "values": [0, 0, 0, 0]})],
        "b2s",
        [1, 12, 12, 6],
    )
    n.bn(b, [1, 12, 12, 6], [6])
    check_no_fold(n, "CONV_2D", "BATCH_TO_SPACE_ND keeps only the last axis")


def test_space_to_batch_after_layer_is_not_a_layout_op():
    # zero padding would see the shift: the chain after SPACE_TO_BATCH_ND must stay
    n = Net()
    y, shape = conv2d(n, shape=(1, 6, 6, 3), out=5)
    s = n.op(
        "SPACE_TO_BATCH_ND",
        [y, n.ints("block", [2, 2]), n.tensor("pads", [2, 2], "INT32", {"kind": "explicit", "values": [1, 1, 1, 1]})],
        "s2b",
        [4, 4, 4, 5],
    )
    n.bn(s, [4, 4, 4, 5], [5])
    original, model = n.model(), n.model()
    assert not fold(model, "CONV_2D")[0]
    assert model.op_counts() == original.op_counts()


def test_layout_output_read_elsewhere_is_not_folded():
    n = Net()
    y, shape = conv2d(n)
    t, tshape = nchw(n, y, shape)
    out = n.bn(t, tshape, [1, 5, 1, 1])
    model_dict = n
    original, model = model_dict.model(), model_dict.model()
    for m in (original, model):
        g = m.graphs[0]
        g.outputs = [g.tensor(out), g.tensor("transposed")]  # the transposed conv output is observed
    assert not fold(model, "CONV_2D")[0]
    assert model.op_counts() == original.op_counts()
    assert_same_outputs(original, model)


def test_intermediate_layout_tensor_with_two_readers_is_not_folded():
    n = Net()
    y, shape = conv2d(n)
    t, tshape = nchw(n, y, shape)
    r = n.op("RESHAPE", [t, n.ints("shape", [2, 5, 63])], "flat", [2, 5, 63], new_shape=[2, 5, 63])
    b = n.bn(r, [2, 5, 63], [1, 5, 1])
    n.op("ADD", [t, t], "other", tshape)  # a second reader of the transposed tensor
    original, model = n.model(), n.model()
    for m in (original, model):
        g = m.graphs[0]
        g.outputs = [g.tensor(b), g.tensor("other")]
    assert not fold(model, "CONV_2D")[0]
    assert model.op_counts() == original.op_counts()


# ---- the axis mapping itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape_in, shape_out, axis, want",
    [
        ((2, 7, 9, 5), (2, 63, 5), 3, 2),
        ((2, 7, 9, 5), (2, 7, 9, 1, 5), 3, 4),
        ((2, 1, 1, 5), (2, 5), 3, 1),
        ((2, 5, 7, 9), (2, 5, 63), 1, 1),
        ((2, 7, 9, 5), (2, 7, 45), 3, None),
        ((2, 7, 9, 6), (2, 7, 9, 2, 3), 3, None),
        ((2, 7, 9, 5), (14, 9, 5), 3, 2),
    ],
)
def test_reshape_axis_mapping(shape_in, shape_out, axis, want):
    from bnfold.ir.graph import Tensor

    got = layout._reshape_axis("RESHAPE", Tensor("x", "FLOAT32", shape_in), Tensor("y", "FLOAT32", shape_out), axis)
    assert (None if isinstance(got, Refusal) else got) == want


def test_reshape_with_dynamic_batch_maps_on_the_rest():
    from bnfold.ir.graph import Tensor

    x = Tensor("x", "FLOAT32", (1, 7, 9, 5), shape_signature=(-1, 7, 9, 5))
    y = Tensor("y", "FLOAT32", (1, 63, 5), shape_signature=(-1, 63, 5))
    assert layout._reshape_axis("RESHAPE", x, y, 3) == 2
    z = Tensor("z", "FLOAT32", (1, 7, 45), shape_signature=(7, -1, 45))
    assert isinstance(layout._reshape_axis("RESHAPE", x, z, 3), Refusal)
