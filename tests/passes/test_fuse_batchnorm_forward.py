"""fuse_batchnorm_forward: a batch norm before CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED.

Each case checks operator counts and compares LiteRT outputs of the folded model against the
original on normal(0, 2) inputs within rtol = atol = 1e-5 (helpers from test_layout_folds).
"""

from __future__ import annotations

import numpy as np
from test_layout_folds import TOL, assert_same_outputs

from bn_models import Net
from bnfold import api
from bnfold.io.reader import read_model
from bnfold.values import litert
from conftest import DATA

PASS = "fuse_batchnorm_forward"


def optimize(model):
    report = api.apply_passes(model, [PASS])
    assert report.converged
    return report


def check(net, **rules):
    original, model = net.model(), net.model()
    report = optimize(model)
    counts = model.op_counts()
    for kind, want in rules.items():
        assert counts.get(kind, 0) == want, (kind, counts, report.skips)
    assert_same_outputs(original, model)
    return model, report


def bn(n, x, shape, *, scale=None, shift=None, act="NONE"):
    c = shape[-1]
    s = (
        n.tensor("bn_scale", [c], filler={"kind": "explicit", "values": list(scale)})
        if scale is not None
        else n.const("bn_scale", [c])
    )
    t = (
        n.tensor("bn_shift", [c], filler={"kind": "explicit", "values": list(shift)})
        if shift is not None
        else n.const("bn_shift", [c])
    )
    m = n.op("MUL", [x, s], "bn_mul", shape)
    return n.op("ADD", [m, t], "bn", shape, fused_activation_function=act)


def conv(n, x, name, shape, out=5, kernel=(3, 2), padding="VALID", filter_name=None):
    h, w = (shape[1], shape[2]) if padding == "SAME" else (shape[1] - kernel[0] + 1, shape[2] - kernel[1] + 1)
    f = filter_name or n.const(f"{name}_filter", [out, kernel[0], kernel[1], shape[3]])
    return n.op(
        "CONV_2D",
        [x, f, n.const(f"{name}_bias", [out])],
        name,
        [shape[0], h, w, out],
        padding=padding,
        stride_w=1,
        stride_h=1,
    )


# ---- fixtures -----------------------------------------------------------------------------------


def test_bn_conv_valid_fixture_folds_completely():
    path = str(DATA / "bn_conv_valid.tflite")
    original, model = read_model(path), read_model(path)
    report = optimize(model)
    assert dict(model.op_counts()) == {"CONV_2D": 1}
    assert len(report.folds) == 1 and report.folds[0]["direction"] == "forward"
    x = np.load(DATA / "bn_conv_valid.input.npy")
    want, got = litert.run(original, [x])[0], litert.run(model, [x])[0]
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(got, np.load(DATA / "bn_conv_valid.ref.npy"), rtol=1e-4, atol=1e-4)


def test_bn_relu_conv_fixture_is_left_alone():
    """BN -> ReLU -> conv is not foldable forward (the ReLU is in between): this pass alone keeps it."""
    path = str(DATA / "bn_relu_conv.tflite")
    original, model = read_model(path), read_model(path)
    report = optimize(model)
    assert not report.folds and not model.changed
    assert model.op_counts() == original.op_counts()
    assert any("activation RELU" in s["reason"] for s in report.skips)
    x = np.load(DATA / "bn_relu_conv.input.npy")
    np.testing.assert_array_equal(litert.run(model, [x])[0], litert.run(original, [x])[0])


# ---- positive cases -----------------------------------------------------------------------------------


def test_depthwise_multiplier_valid_folds_completely():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3])
    n.op(
        "DEPTHWISE_CONV_2D",
        [y, n.const("filter", [1, 3, 2, 12]), n.const("bias", [12])],
        "dw",
        [2, 5, 8, 12],
        padding="VALID",
        stride_w=1,
        stride_h=1,
        depth_multiplier=4,
    )
    check(n, MUL=0, ADD=0)


def test_fc_without_bias_gets_one():
    n = Net()
    x = n.input("ifm", [3, 4])
    y = bn(n, x, [3, 4])
    n.op("FULLY_CONNECTED", [y, n.const("weights", [6, 4]), ""], "fc", [3, 6])
    model, _ = check(n, MUL=0, ADD=0)
    fc = next(op for op in model.graphs[0].ops if op.kind == "FULLY_CONNECTED")
    assert fc.input(2) is not None and fc.input(2).shape == (6,)


def test_fc_reading_4d_data_directly_tiles_the_vector():
    # FC flattens [N,H,W,C] itself: rows of H·W·C values in NHWC order
    n = Net()
    x = n.input("ifm", [2, 3, 4, 5])
    y = bn(n, x, [2, 3, 4, 5])
    n.op("FULLY_CONNECTED", [y, n.const("weights", [7, 60]), n.const("bias", [7])], "fc", [2, 7])
    check(n, MUL=0, ADD=0)


def test_same_padding_with_zero_shift_folds_the_scale():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3], shift=[0.0, 0.0, 0.0])
    conv(n, y, "conv", [2, 7, 9, 3], padding="SAME")
    check(n, MUL=0, ADD=0)


def test_same_padding_with_shift_keeps_one_add():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3], scale=[1.5, -0.5, 0.75], shift=[0.3, -1.2, 2.0])
    conv(n, y, "conv", [2, 7, 9, 3], padding="SAME")
    model, report = check(n, MUL=0, ADD=1)
    add = next(op for op in model.graphs[0].ops if op.kind == "ADD")
    np.testing.assert_allclose(add.input(1).data, np.float32([0.3 / 1.5, -1.2 / -0.5, 2.0 / 0.75]), rtol=1e-6)
    assert report.folds[0]["shift_kept"] is True
    assert any("SAME padding" in s["reason"] for s in report.skips)  # the ADD left behind, and why


def test_valid_and_same_readers_share_the_data():
    """y read by a VALID conv (takes the shift) and a SAME conv (needs the ADD): one ADD stays, only
    in front of the SAME conv; the VALID conv reads x directly."""
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3])
    a = conv(n, y, "valid", [2, 7, 9, 3], out=5)
    b = conv(n, y, "same", [2, 7, 9, 3], out=4, padding="SAME")
    original, model = n.model(), n.model()
    for m in (original, model):
        m.graphs[0].outputs = [m.graphs[0].tensor(a), m.graphs[0].tensor(b)]
    optimize(model)
    g = model.graphs[0]
    assert model.op_counts().get("MUL", 0) == 0 and model.op_counts()["ADD"] == 1
    valid = next(op for op in g.ops if op.outputs[0].name == "valid")
    same = next(op for op in g.ops if op.outputs[0].name == "same")
    assert valid.input(0) is g.inputs[0]
    assert same.input(0).producer.kind == "ADD"
    assert_same_outputs(original, model)


def test_data_with_other_readers_and_shared_filter():
    """x also feeds another conv that shares the filter: that conv keeps the original filter."""
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3])
    f = n.const("shared_filter", [5, 3, 2, 3])
    a = conv(n, y, "after_bn", [2, 7, 9, 3], filter_name=f)
    b = conv(n, x, "plain", [2, 7, 9, 3], filter_name=f)
    original, model = n.model(), n.model()
    for m in (original, model):
        m.graphs[0].outputs = [m.graphs[0].tensor(a), m.graphs[0].tensor(b)]
    optimize(model)
    assert model.op_counts().get("MUL", 0) == 0 and model.op_counts().get("ADD", 0) == 0
    plain = next(op for op in model.graphs[0].ops if op.outputs[0].name == "plain")
    np.testing.assert_array_equal(plain.input(1).data, original.graphs[0].tensor(f).data)
    assert_same_outputs(original, model)


# ---- negatives ------------------------------------------------------------------------------------------


def test_fused_activation_is_not_folded():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3], act="RELU6")
    conv(n, y, "conv", [2, 7, 9, 3])
    _, report = check(n, MUL=1, ADD=1)
    assert any("activation RELU6" in s["reason"] for s in report.skips)


def test_other_reader_blocks_the_fold():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3])
    a = conv(n, y, "conv", [2, 7, 9, 3])
    p = n.op(
        "MAX_POOL_2D",
        [y],
        "pool",
        [2, 7, 9, 3],
        padding="SAME",
        stride_w=1,
        stride_h=1,
        filter_width=2,
        filter_height=2,
    )
    original, model = n.model(), n.model()
    for m in (original, model):
        m.graphs[0].outputs = [m.graphs[0].tensor(a), m.graphs[0].tensor(p)]
    report = optimize(model)
    assert model.op_counts() == original.op_counts()
    assert any("MAX_POOL_2D" in s["reason"] for s in report.skips)


def test_result_that_is_a_graph_output_stays():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3])
    a = conv(n, y, "conv", [2, 7, 9, 3])
    original, model = n.model(), n.model()
    for m in (original, model):
        m.graphs[0].outputs = [m.graphs[0].tensor(a), m.graphs[0].tensor(y)]
    report = optimize(model)
    assert model.op_counts() == original.op_counts()
    assert any("graph output" in s["reason"] for s in report.skips)


def test_zero_scale_with_shift_under_same_padding_is_skipped():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 3])
    y = bn(n, x, [2, 7, 9, 3], scale=[1.0, 0.0, 2.0], shift=[0.5, 1.0, -1.0])
    conv(n, y, "conv", [2, 7, 9, 3], padding="SAME")
    _, report = check(n, MUL=1, ADD=1)
    assert any("zero scale" in s["reason"] for s in report.skips)


def test_grouped_conv_is_skipped():
    n = Net()
    x = n.input("ifm", [2, 7, 9, 4])
    y = bn(n, x, [2, 7, 9, 4])
    n.op(
        "CONV_2D",
        [y, n.const("filter", [6, 3, 2, 2]), n.const("bias", [6])],
        "conv",
        [2, 5, 8, 6],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    model = n.model()
    report = optimize(model)
    assert model.op_counts()["MUL"] == 1
    assert any("grouped convolution" in s["reason"] for s in report.skips)


def test_reshape_feeding_something_else_is_skipped():
    n = Net()
    x = n.input("ifm", [2, 3, 4, 5])
    y = bn(n, x, [2, 3, 4, 5])
    r = n.op("RESHAPE", [y, n.ints("shape", [2, 60])], "flat", [2, 60], new_shape=[2, 60])
    n.op("FULLY_CONNECTED", [r, n.const("weights", [7, 60]), n.const("bias", [7])], "fc", [2, 7])
    n.op("SOFTMAX", [r], "soft", [2, 60], beta=1.0)
    original, model = n.model(), n.model()
    for m in (original, model):
        m.graphs[0].outputs = [m.graphs[0].tensor("fc"), m.graphs[0].tensor("soft")]
    optimize(model)
    assert model.op_counts() == original.op_counts()


def test_a_kept_shift_with_one_value_stays_a_scalar(tmp_path):
    """keras' Rescaling (recipe Net_Forward_KeptScalar_000): the shift padding would see stays as
    an ADD of a scalar, never a per-channel vector (a slower kernel in LiteRT)."""
    from bnfold.recipe.chef import build, load_recipe
    from conftest import RECIPES

    model = build(load_recipe(RECIPES / "Net_Forward_KeptScalar_000.toml"))
    report = optimize(model)
    [add] = [op for op in model.graphs[0].ops if op.kind == "ADD"]
    constant = next(t for t in add.inputs if t.is_const)
    assert constant.shape == () and report.folds[0]["shift_kept"]
    np.testing.assert_allclose(constant.data, -1.0 / 0.00784313725, rtol=1e-6)
