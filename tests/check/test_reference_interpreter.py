"""The reference interpreter computes what LiteRT computes (within 1e-5) on every fixture, and on
one small model per operator and option combination it supports; unknown operators are named."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from bnfold.io.reader import read_model
from bnfold.ir.const import NUMPY_DTYPES
from bnfold.ir.shapes import pads
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from bnfold.reference.interpreter import UnsupportedOperator
from bnfold.values import litert
from conftest import DATA, FIXTURES, fixture_input

RTOL = ATOL = 1e-5


def assert_agree(model, inputs):
    want = litert.run(model, inputs)
    got = interpreter.run(model, inputs)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return got


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_agrees_with_litert(name):
    model = read_model(str(DATA / name))
    x = fixture_input(name)
    got = assert_agree(model, [x])
    ref = np.load(DATA / (name.rsplit(".", 1)[0] + ".ref.npy"))  # the stored value of one of the outputs
    assert any(g.shape == ref.shape and np.allclose(g, ref, rtol=RTOL, atol=ATOL) for g in got)


# ---- one operator per model ------------------------------------------------------------------


def gauss(shape, stddev=1.0):
    return {"name": None, "shape": list(shape), "filler": {"kind": "gaussian", "stddev": stddev}}


def const(values, dtype="INT32"):
    values = np.asarray(values)
    return {
        "name": None,
        "shape": list(values.shape),
        "dtype": dtype,
        "filler": {"kind": "explicit", "values": values.reshape(-1).tolist()},
    }


def inp(shape, dtype="FLOAT32"):
    return {"name": None, "shape": list(shape), "dtype": dtype}


def single(kind, operands, out_shape, options=None, out_dtype="FLOAT32", n_out=1, options_type=None):
    """A one-operator recipe: operands without a filler become graph inputs (in order)."""
    ops, names = [], []
    for i, o in enumerate(operands):
        if o is None:
            names.append("-")
            continue
        o = dict(o, name=f"in{i}")
        ops.append(o)
        names.append(o["name"])
    outs = [f"out{j}" for j in range(n_out)]
    ops += [{"name": n, "shape": list(out_shape), "dtype": out_dtype} for n in outs]
    recipe = {
        "seed": 3,
        "input": [o["name"] for o in ops if "filler" not in o and o["name"] not in outs],
        "output": outs,
        "operand": ops,
        "operation": [{"type": kind, "inputs": names, "outputs": outs, "options": options or {}}],
    }
    if options_type:
        recipe["operation"][0]["options_type"] = options_type
    return build(recipe)


def random_inputs(model, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 2, t.shape).astype(np.float32) for t in model.graphs[0].inputs]


def act(name="NONE"):
    return {"fused_activation_function": name}


CASES = {
    "conv_same_stride2_odd": (
        "CONV_2D",
        [inp([1, 7, 9, 3]), gauss([4, 3, 2, 3]), gauss([4])],
        [1, 4, 5, 4],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2, **act("RELU6")},
    ),
    "conv_valid_dilated": (
        "CONV_2D",
        [inp([2, 9, 8, 2]), gauss([5, 3, 3, 2]), gauss([5])],
        [2, 5, 2, 5],
        {"padding": "VALID", "stride_h": 1, "stride_w": 2, "dilation_h_factor": 2, "dilation_w_factor": 2},
    ),
    "conv_same_dilated": (
        "CONV_2D",
        [inp([1, 6, 7, 3]), gauss([2, 3, 2, 3]), gauss([2])],
        [1, 6, 7, 2],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 2, "dilation_w_factor": 3},
    ),
    "conv_1x1": (
        "CONV_2D",
        [inp([1, 5, 6, 8]), gauss([3, 1, 1, 8]), gauss([3])],
        [1, 5, 6, 3],
        {"padding": "VALID", "stride_h": 1, "stride_w": 1, **act("RELU")},
    ),
    "dwconv_m1_same_s2": (
        "DEPTHWISE_CONV_2D",
        [inp([1, 7, 8, 3]), gauss([1, 3, 3, 3]), gauss([3])],
        [1, 4, 4, 3],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2, "depth_multiplier": 1},
    ),
    "dwconv_m3_valid": (
        "DEPTHWISE_CONV_2D",
        [inp([1, 6, 5, 2]), gauss([1, 2, 3, 6]), gauss([6])],
        [1, 5, 3, 6],
        {"padding": "VALID", "stride_h": 1, "stride_w": 1, "depth_multiplier": 3, **act("RELU_N1_TO_1")},
    ),
    "dwconv_dilated": (
        "DEPTHWISE_CONV_2D",
        [inp([1, 8, 9, 4]), gauss([1, 3, 3, 4]), gauss([4])],
        [1, 8, 9, 4],
        {
            "padding": "SAME",
            "stride_h": 1,
            "stride_w": 1,
            "depth_multiplier": 1,
            "dilation_h_factor": 2,
            "dilation_w_factor": 3,
        },
    ),
    "tconv_same_s2": (
        "TRANSPOSE_CONV",
        [const([1, 10, 8, 3]), gauss([3, 3, 3, 2]), inp([1, 5, 4, 2])],
        [1, 10, 8, 3],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2},
    ),
    "tconv_same_odd_bias": (
        "TRANSPOSE_CONV",
        [const([1, 9, 7, 4]), gauss([4, 3, 2, 3]), inp([1, 5, 4, 3]), gauss([4])],
        [1, 9, 7, 4],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2},
    ),
    "tconv_valid_5x1": (
        "TRANSPOSE_CONV",
        [const([2, 11, 4, 2]), gauss([2, 5, 1, 3]), inp([2, 4, 4, 3])],
        [2, 11, 4, 2],
        {"padding": "VALID", "stride_h": 2, "stride_w": 1},
    ),
    "fc_keep_dims": (
        "FULLY_CONNECTED",
        [inp([2, 3, 5]), gauss([4, 5]), gauss([4])],
        [2, 3, 4],
        {"keep_num_dims": True, **act("RELU")},
    ),
    "fc_flatten_nobias": ("FULLY_CONNECTED", [inp([2, 3, 5]), gauss([4, 5]), None], [6, 4], {"keep_num_dims": False}),
    "conv3d_same": (
        "CONV_3D",
        [inp([1, 4, 5, 6, 2]), gauss([2, 3, 2, 2, 3]), gauss([3])],
        [1, 4, 3, 6, 3],
        {"padding": "SAME", "stride_d": 1, "stride_h": 2, "stride_w": 1},
    ),
    "conv3d_valid_dilated": (
        "CONV_3D",
        [inp([1, 5, 6, 5, 2]), gauss([2, 2, 3, 2, 4]), None],
        [1, 4, 4, 1, 4],
        {"padding": "VALID", "stride_d": 1, "stride_h": 1, "stride_w": 2, "dilation_h_factor": 2},
    ),
    "add_broadcast_relu": ("ADD", [inp([1, 4, 5, 3]), gauss([3])], [1, 4, 5, 3], act("RELU")),
    "sub_broadcast": ("SUB", [inp([1, 4, 1, 3]), inp([1, 1, 5, 1])], [1, 4, 5, 3], act("RELU6")),
    "mul_const": ("MUL", [inp([2, 3, 4]), gauss([3, 1])], [2, 3, 4], act()),
    "div_const": ("DIV", [inp([1, 3, 4]), const(np.linspace(0.5, 3, 4), "FLOAT32")], [1, 3, 4], act("RELU_N1_TO_1")),
    "relu": ("RELU", [inp([2, 7])], [2, 7], None),
    "relu6": ("RELU6", [inp([2, 7])], [2, 7], None),
    "relu_n1_to_1": ("RELU_N1_TO_1", [inp([2, 7])], [2, 7], None),
    "tanh": ("TANH", [inp([2, 7])], [2, 7], None),
    "logistic": ("LOGISTIC", [inp([2, 7])], [2, 7], None),
    # a rank-0 x: x/√2 is a numpy scalar, on which erf's frompyfunc returns a Python float
    "gelu_scalar": ("GELU", [inp([])], [], None),
    "leaky_relu": ("LEAKY_RELU", [inp([2, 7])], [2, 7], {"alpha": 0.3}),
    "pad": ("PAD", [inp([1, 3, 4, 2]), const([[0, 0], [1, 2], [2, 1], [0, 0]])], [1, 6, 7, 2], None),
    "padv2": (
        "PADV2",
        [inp([1, 3, 4, 2]), const([[0, 0], [1, 0], [0, 1], [1, 1]]), const([-1.5], "FLOAT32")],
        [1, 4, 5, 4],
        {"_options_type": "PadV2Options"},
    ),
    "mean_keep": ("MEAN", [inp([2, 5, 6, 3]), const([1, 2])], [2, 1, 1, 3], {"keep_dims": True}),
    "mean_drop_neg_axis": ("MEAN", [inp([2, 5, 6, 3]), const([-2])], [2, 5, 3], {"keep_dims": False}),
    "maxpool_same_s2": (
        "MAX_POOL_2D",
        [inp([1, 7, 9, 3])],
        [1, 4, 5, 3],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 3, "filter_width": 3},
    ),
    "avgpool_same_s2": (
        "AVERAGE_POOL_2D",
        [inp([1, 7, 9, 3])],
        [1, 4, 5, 3],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 3, "filter_width": 3},
    ),
    "avgpool_valid": (
        "AVERAGE_POOL_2D",
        [inp([2, 6, 5, 2])],
        [2, 3, 2, 2],
        {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2, **act("RELU")},
    ),
    "reshape_shape_input": ("RESHAPE", [inp([2, 3, 5]), const([-1, 15])], [2, 15], None),
    "reshape_options": ("RESHAPE", [inp([2, 3, 5])], [5, 6], {"new_shape": [5, -1]}),
    "squeeze": ("SQUEEZE", [inp([1, 3, 1, 4])], [3, 1, 4], {"squeeze_dims": [0]}),
    "squeeze_all": ("SQUEEZE", [inp([1, 3, 1, 4])], [3, 4], None),
    "expand_dims": ("EXPAND_DIMS", [inp([3, 4]), const([-1])], [3, 4, 1], None),
    "transpose": ("TRANSPOSE", [inp([2, 3, 4, 5]), const([0, 3, 1, 2])], [2, 5, 3, 4], None),
    "concatenation": (
        "CONCATENATION",
        [inp([1, 2, 3]), inp([1, 2, 4])],
        [1, 2, 7],
        {"axis": -1},
    ),  # LiteRT's float kernel refuses a fused activation
    "softmax": ("SOFTMAX", [inp([3, 10])], [3, 10], {"beta": 0.5}),
    "space_to_batch": (
        "SPACE_TO_BATCH_ND",
        [inp([2, 5, 4, 3]), const([2, 3]), const([[1, 0], [1, 1]])],
        [12, 3, 2, 3],
        None,
    ),
    "batch_to_space": (
        "BATCH_TO_SPACE_ND",
        [inp([12, 3, 2, 3]), const([2, 3]), const([[1, 0], [1, 1]])],
        [2, 5, 4, 3],
        None,
    ),
}


def resize(kind, size_in, size_out, **flags):
    options_type = "ResizeBilinearOptions" if kind == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    return (kind, [inp([1, *size_in, 3]), const(size_out)], [1, *size_out, 3], {**flags, "_options_type": options_type})


# The operators real vision models put around convolutions (issue: a reference interpreter for real models)
CASES.update(
    {
        "prelu": ("PRELU", [inp([1, 4, 5, 3]), gauss([1, 1, 3])], [1, 4, 5, 3], None),
        "hard_swish": ("HARD_SWISH", [inp([2, 9])], [2, 9], None),
        "sum_keep": ("SUM", [inp([2, 5, 6, 3]), const([1, 2])], [2, 1, 1, 3], {"keep_dims": True}),
        "reduce_max": (
            "REDUCE_MAX",
            [inp([2, 5, 6, 3]), const([-1])],
            [2, 5, 6],
            {"keep_dims": False, "_options_type": "ReducerOptions"},
        ),
        "bilinear_up": resize("RESIZE_BILINEAR", (5, 7), (12, 9)),
        "bilinear_down_half_pixel": resize("RESIZE_BILINEAR", (9, 8), (4, 5), half_pixel_centers=True),
        "bilinear_align_corners": resize("RESIZE_BILINEAR", (4, 6), (7, 11), align_corners=True),
        "nearest_up": resize("RESIZE_NEAREST_NEIGHBOR", (5, 7), (12, 9)),
        "nearest_half_pixel": resize("RESIZE_NEAREST_NEIGHBOR", (9, 8), (4, 13), half_pixel_centers=True),
        "nearest_align_corners": resize("RESIZE_NEAREST_NEIGHBOR", (4, 6), (7, 11), align_corners=True),
        "strided_slice_masks": (
            "STRIDED_SLICE",
            [inp([2, 7, 8, 3]), const([0, 1, -6, 1]), const([0, 7, -1, 3]), const([1, 2, 2, 1])],
            [2, 3, 3, 2],
            {"begin_mask": 1, "end_mask": 1, "_options_type": "StridedSliceOptions"},
        ),
        "strided_slice_shrink": (
            "STRIDED_SLICE",
            [inp([3, 6, 4]), const([1, 0, 0]), const([2, 6, 4]), const([1, 3, 1])],
            [2, 4],
            {"shrink_axis_mask": 1, "_options_type": "StridedSliceOptions"},
        ),
        "slice": (
            "SLICE",
            [inp([2, 7, 5]), const([1, 2, 0]), const([1, -1, 3])],
            [1, 5, 3],
            {"_options_type": "SliceOptions"},
        ),
        "gather_axis1": (
            "GATHER",
            [inp([3, 6, 2]), const([[4, 0], [5, 5], [1, 2]])],
            [3, 3, 2, 2],
            {"axis": 1, "_options_type": "GatherOptions"},
        ),
        "batch_matmul": ("BATCH_MATMUL", [inp([2, 3, 4, 5]), inp([2, 1, 5, 6])], [2, 3, 4, 6], None),
        "batch_matmul_adj": (
            "BATCH_MATMUL",
            [inp([3, 5, 4]), gauss([3, 6, 5])],
            [3, 4, 6],
            {"adj_x": True, "adj_y": True},
        ),
    }
)


@pytest.mark.parametrize(
    "kind, operands, out_shapes, options",
    [
        ("SPLIT", [const([2]), inp([2, 3, 6])], [[2, 3, 2]] * 3, {"num_splits": 3, "_options_type": "SplitOptions"}),
        ("UNPACK", [inp([2, 3, 4])], [[2, 4]] * 3, {"num": 3, "axis": 1, "_options_type": "UnpackOptions"}),
        (
            "PACK",
            [inp([2, 3]), inp([2, 3]), inp([2, 3])],
            [[2, 3, 3]],
            {"values_count": 3, "axis": -1, "_options_type": "PackOptions"},
        ),
    ],
    ids=["split", "unpack", "pack"],
)
def test_multi_output_operator_agrees_with_litert(kind, operands, out_shapes, options):
    options = dict(options)
    options_type = options.pop("_options_type")
    model = single(kind, operands, out_shapes[0], options, n_out=len(out_shapes), options_type=options_type)
    assert len(assert_agree(model, random_inputs(model))) == len(out_shapes)


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_agrees_with_litert(case):
    kind, operands, out_shape, options = CASES[case]
    options = dict(options or {})
    options_type = options.pop("_options_type", None)
    model = single(kind, operands, out_shape, options, options_type=options_type)
    assert_agree(model, random_inputs(model))


def test_dequantize_float16_weights_agree_with_litert():
    recipe = {
        "input": ["x"],
        "output": ["y"],
        "operand": [
            {"name": "x", "shape": [1, 5, 6, 3]},
            {"name": "w16", "shape": [4, 3, 3, 3], "dtype": "FLOAT16", "filler": {"kind": "gaussian"}},
            {"name": "w", "shape": [4, 3, 3, 3]},
            {"name": "b", "shape": [4], "filler": {"kind": "gaussian"}},
            {"name": "y", "shape": [1, 5, 6, 4]},
        ],
        "operation": [
            {"type": "DEQUANTIZE", "inputs": ["w16"], "outputs": ["w"]},
            {
                "type": "CONV_2D",
                "inputs": ["x", "w", "b"],
                "outputs": ["y"],
                "options": {"padding": "SAME", "stride_h": 1, "stride_w": 1},
            },
        ],
    }
    model = build(recipe)
    assert_agree(model, random_inputs(model))


def test_same_padding_rule_is_tflites():
    # out = ceil(in / stride); pad_total = max((out - 1) * stride + (k - 1) * d + 1 - in, 0); odd pixel after
    assert pads(7, 3, 2, 1, 0) == (1, 1)
    assert pads(8, 3, 2, 1, 0) == (0, 1)
    assert pads(9, 2, 1, 3, 0) == (1, 2)
    assert pads(5, 1, 2, 1, 0) == (0, 0)
    assert pads(9, 3, 1, 1, 1) == (0, 0)


def test_unknown_operator_is_named_with_its_index():
    recipe = {
        "input": ["x"],
        "output": ["z"],
        "operand": [{"name": "x", "shape": [2, 3]}, {"name": "y", "shape": [2, 3]}, {"name": "z", "shape": [2, 3]}],
        "operation": [
            {"type": "RELU", "inputs": ["x"], "outputs": ["y"]},
            {"type": "FLOOR", "inputs": ["y"], "outputs": ["z"]},
        ],
    }
    model = build(recipe)
    with pytest.raises(UnsupportedOperator, match=r"^reference interpreter cannot run FLOOR \(op 1\)$"):
        interpreter.run(model, [np.zeros((2, 3), np.float32)])
    assert interpreter.unsupported_kinds(model) == ["FLOOR"]


@pytest.mark.parametrize(
    "kind, w_shape, options",
    [
        ("CONV_2D", [3, 2, 2, 4], {"padding": "SAME", "stride_h": 1, "stride_w": 2}),
        ("DEPTHWISE_CONV_2D", [1, 3, 2, 8], {"padding": "VALID", "stride_h": 1, "stride_w": 1, "depth_multiplier": 2}),
    ],
)
def test_missing_bias_means_zero_bias(kind, w_shape, options):
    # LiteRT refuses (CONV_2D) or crashes on (DEPTHWISE_CONV_2D) these, so the reference is checked
    # against itself: no bias input computes what an all-zero bias computes.
    x = np.random.default_rng(5).normal(0, 2, (1, 5, 6, 4)).astype(np.float32)
    cout = w_shape[0] if kind == "CONV_2D" else w_shape[-1]
    with_zero = single(
        kind, [inp([1, 5, 6, 4]), gauss(w_shape), const(np.zeros(cout), "FLOAT32")], [1, 1, 1, 1], options
    )
    without = single(kind, [inp([1, 5, 6, 4]), gauss(w_shape)], [1, 1, 1, 1], options)
    a, b = interpreter.run(with_zero, [x])[0], interpreter.run(without, [x])[0]
    assert a.shape[-1] == cout and np.abs(a).max() > 0
    assert np.array_equal(a, b)


def test_dequantize_int8_per_channel_agrees_with_litert():
    recipe = {
        "input": ["x"],
        "output": ["y"],
        "operand": [
            {"name": "x", "shape": [1, 5, 6, 3]},
            {
                "name": "wq",
                "shape": [4, 3, 3, 3],
                "dtype": "INT8",
                "filler": {"kind": "uniform", "low": -127, "high": 127},
                "quant": {"scale": [0.01, 0.02, 0.005, 0.03], "zero_point": [0, 0, 0, 0], "quantized_dimension": 0},
            },
            {"name": "w", "shape": [4, 3, 3, 3]},
            {"name": "b", "shape": [4], "filler": {"kind": "gaussian"}},
            {"name": "y", "shape": [1, 3, 3, 4]},
        ],
        "operation": [
            {"type": "DEQUANTIZE", "inputs": ["wq"], "outputs": ["w"]},
            {
                "type": "CONV_2D",
                "inputs": ["x", "w", "b"],
                "outputs": ["y"],
                "options": {"padding": "SAME", "stride_h": 2, "stride_w": 2},
            },
        ],
    }
    model = build(recipe)
    assert_agree(model, random_inputs(model))


def test_quantized_arithmetic_is_refused_not_guessed():
    recipe = {
        "input": ["x"],
        "output": ["y"],
        "operand": [
            {"name": "x", "shape": [2, 3], "dtype": "INT8", "quant": {"scale": [0.1], "zero_point": [3]}},
            {"name": "y", "shape": [2, 3], "dtype": "INT8", "quant": {"scale": [1 / 128], "zero_point": [0]}},
        ],
        "operation": [{"type": "TANH", "inputs": ["x"], "outputs": ["y"]}],
    }
    with pytest.raises(UnsupportedOperator, match=r"^reference interpreter cannot run quantized TANH \(op 0\)$"):
        interpreter.run(build(recipe), [np.zeros((2, 3), np.int8)])


# ---- int8 kernels: exact against LiteRT's builtin kernels ------------------------------------


def qt(shape, scale, zp, values=None, dtype="INT8", axis=0):
    d = {
        "name": None,
        "shape": list(shape),
        "dtype": dtype,
        "quant": {
            "scale": [float(v) for v in np.atleast_1d(scale)],
            "zero_point": [int(v) for v in np.atleast_1d(zp)],
            "quantized_dimension": axis,
        },
    }
    if values is not None:
        d["filler"] = {"kind": "explicit", "values": np.asarray(values).reshape(-1).tolist()}
    return d


def random_int8_model(kind, rng):
    """One random int8 operator: odd sizes, SAME/VALID, strides, dilations, per-channel and
    per-tensor weights, extreme zero points, random fused activations and scales."""

    def scale(lo: float, hi: float) -> float:
        return float(np.float32(10 ** rng.uniform(lo, hi)))

    def zp() -> int:
        return int(rng.choice([-128, 127])) if rng.random() < 0.2 else int(rng.integers(-128, 128))

    act = {"fused_activation_function": str(rng.choice(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]))}
    n, h, w, c = int(rng.integers(1, 3)), int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 6))
    sx, so = scale(-3, 0), scale(-3, 0.5)
    kh, kw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
    sh, sw, pad = int(rng.integers(1, 3)), int(rng.integers(1, 3)), str(rng.choice(["SAME", "VALID"]))

    def size(s: int, k: int, st: int, d: int = 1) -> int:
        return (s + st - 1) // st if pad == "SAME" else (s - (k - 1) * d - 1 + st) // st

    if kind == "CONV_2D":
        co = int(rng.integers(1, 7))
        dh, dw = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) if pad == "SAME" else (1, 1)
        sws = np.array([scale(-4, -1) for _ in range(co if rng.random() < 0.7 else 1)], np.float32)
        bias_range = 2**24 if rng.random() < 0.2 else 20000
        operands = [
            qt([n, h, w, c], sx, zp()),
            qt([co, kh, kw, c], sws, [0] * sws.size, rng.integers(-127, 128, [co, kh, kw, c])),
            qt([co], np.float32(sx) * sws, [0] * sws.size, rng.integers(-bias_range, bias_range, [co]), "INT32"),
        ]
        out = [n, size(h, kh, sh, dh), size(w, kw, sw, dw), co]
        options = {
            "padding": pad,
            "stride_h": sh,
            "stride_w": sw,
            "dilation_h_factor": dh,
            "dilation_w_factor": dw,
            **act,
        }
    elif kind == "FULLY_CONNECTED":
        i, o = int(rng.integers(1, 40)), int(rng.integers(1, 9))
        sw_ = np.float32(scale(-4, -1))
        operands = [
            qt([n, i], sx, zp()),
            qt([o, i], sw_, 0, rng.integers(-127, 128, [o, i])),
            qt([o], np.float32(sx) * sw_, 0, rng.integers(-20000, 20000, [o]), "INT32"),
        ]
        out, options = [n, o], act
    elif kind in ("ADD", "SUB", "MUL"):
        shape = [n, h, w, c]
        other = shape if rng.random() < 0.5 else [1, 1, 1, c]
        sb = sx if rng.random() < 0.3 else scale(-3, 0)
        so = scale(-1, 0.5) if kind == "MUL" else so
        values = rng.integers(-128, 128, other) if rng.random() < 0.5 else None
        operands, out, options = [qt(shape, sx, zp()), qt(other, sb, zp(), values)], shape, act
    elif kind in ("RELU", "RELU6"):
        so = sx if rng.random() < 0.3 else scale(-3, 0)
        operands, out, options = [qt([n, h, w, c], sx, zp())], [n, h, w, c], None
    else:  # pools: the output shares the input's quantization
        so, z = sx, zp()
        operands = [qt([n, h, w, c], sx, z)]
        out = [n, size(h, kh, sh), size(w, kw, sw), c]
        options = {"padding": pad, "stride_h": sh, "stride_w": sw, "filter_height": kh, "filter_width": kw, **act}
    model = single(kind, operands, out, options, out_dtype="INT8")
    q = model.graphs[0].ops[0].inputs[0].quantization
    out_q = copy.deepcopy(q)
    out_q.scale, out_q.zeroPoint, out_q.quantizedDimension = [so], [z if kind.endswith("POOL_2D") else zp()], 0
    model.graphs[0].ops[0].outputs[0].quantization = out_q
    return model


def int8_inputs(model, rng):
    return [
        (rng.choice([-128, 127], t.shape) if rng.random() < 0.2 else rng.integers(-128, 128, t.shape)).astype(np.int8)
        for t in model.graphs[0].inputs
    ]


INT8_KINDS = ["CONV_2D", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "RELU", "RELU6", "MAX_POOL_2D", "AVERAGE_POOL_2D"]


@pytest.mark.parametrize("kind", INT8_KINDS)
def test_int8_operator_is_bit_exact_with_litert(kind):
    # LiteRT's builtin kernels ("plain") are the target; 60 random single-operator models each.
    rng = np.random.default_rng(INT8_KINDS.index(kind))
    checked = 0
    for _ in range(60):
        model = random_int8_model(kind, rng)
        x = int8_inputs(model, rng)
        try:
            got = interpreter.run(model, x)
        except UnsupportedOperator as e:  # ADD/SUB/MUL whose scales reach LiteRT's int16 narrowing
            assert kind in ("ADD", "SUB", "MUL") and "beyond int16" in str(e)
            continue
        want = litert.run(model, x)
        assert got[0].dtype == want[0].dtype == np.int8 and got[0].shape == want[0].shape
        np.testing.assert_array_equal(got[0], want[0])
        checked += 1
    assert checked >= 40


def test_int8_depthwise_conv_is_refused():
    model = single(
        "DEPTHWISE_CONV_2D",
        [
            qt([1, 5, 5, 2], 0.1, 0),
            qt([1, 3, 3, 2], [0.01, 0.02], [0, 0], np.ones(18, int), axis=3),
            qt([2], [0.001, 0.002], [0, 0], [0, 0], "INT32"),
        ],
        [1, 5, 5, 2],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1},
        out_dtype="INT8",
    )
    with pytest.raises(UnsupportedOperator, match="quantized DEPTHWISE_CONV_2D"):
        interpreter.run(model, [np.zeros((1, 5, 5, 2), np.int8)])


# ---- what models with index inputs use (issue 30: TICO's torch.any, nn.Embedding, index_select) --


@pytest.mark.parametrize(
    "kind, operands, out_shape, options",
    [
        ("GATHER_ND", [inp([6, 5, 2]), const([[1, 4], [5, 0], [0, 0]])], [3, 2], None),
        ("GATHER_ND", [inp([4, 3]), const([[[3], [0]], [[1], [1]]])], [2, 2, 3], None),
        ("EMBEDDING_LOOKUP", [const([3, 0, 7, 3]), inp([8, 3])], [4, 3], None),
    ],
    ids=["gather_nd_pairs", "gather_nd_rows", "embedding_lookup"],
)
def test_index_operator_agrees_with_litert(kind, operands, out_shape, options):
    model = single(kind, operands, out_shape, options)
    assert_agree(model, random_inputs(model))


@pytest.mark.parametrize("kind", ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"])
def test_comparison_agrees_with_litert(kind):
    model = single(kind, [inp([2, 3]), inp([1, 3])], [2, 3], None, out_dtype="BOOL")
    x, y = np.array([[0.0, 1.5, -2.0], [3.0, 1.5, 0.0]], np.float32), np.array([[0.0, 1.5, 1.0]], np.float32)
    got = assert_agree(model, [x, y])[0]
    assert got.dtype == np.bool_ and 0 < got.sum() < got.size  # both answers occur


@pytest.mark.parametrize(
    "src, dst, values",
    [
        ("FLOAT32", "INT32", [[-2.7, -0.5, 0.0, 0.5, 2.7, 3.0]]),  # truncation toward zero
        ("INT64", "INT32", [[0, 1, -5, 9, 2**20, -(2**20)]]),
        ("FLOAT32", "BOOL", [[0.0, -0.0, 1e-30, -3.0, 2.0, 0.0]]),
        ("BOOL", "FLOAT32", [[True, False, True, True, False, False]]),
    ],
)
def test_cast_agrees_with_litert(src, dst, values):
    model = single("CAST", [inp([1, 6], src)], [1, 6], None, out_dtype=dst)
    x = np.asarray(values).astype(NUMPY_DTYPES[src])
    assert_agree(model, [x])


def test_index_out_of_range_is_a_run_failure_naming_the_index():
    from bnfold.errors import RunFailed

    model = single("EMBEDDING_LOOKUP", [inp([3], "INT32"), gauss([5, 2])], [3, 2], None)
    with pytest.raises(RunFailed, match=r"EMBEDDING_LOOKUP \(op 0\) index 5 out of range \[0, 5\)"):
        interpreter.run(model, [np.array([0, 5, 1], np.int32)])
    gather_nd = single("GATHER_ND", [gauss([4, 3]), inp([2, 2], "INT32")], [2], None)
    with pytest.raises(RunFailed, match=r"index 3 out of range \[0, 3\)"):  # component 1 addresses axis 1 (3 long)
        interpreter.run(gather_nd, [np.array([[3, 0], [1, 3]], np.int32)])


@pytest.mark.parametrize("src, dst", [("UINT8", "UINT8"), ("INT8", "INT8"), ("UINT8", "INT8"), ("INT8", "UINT8")])
def test_requantize_is_bit_exact_with_litert(src, dst):
    # QUANTIZE from integers (CSE_Quantize_000's requantization); every input value, random scales
    rng = np.random.default_rng(len(src) * 7 + len(dst))
    info = np.iinfo(NUMPY_DTYPES[src])
    x = np.arange(info.min, info.max + 1).reshape(16, 16).astype(NUMPY_DTYPES[src])
    checked = 0
    for _ in range(20):
        s_in, s_out = rng.uniform(0.01, 4.0, 2)
        z_in, z_out = (
            int(rng.integers(np.iinfo(NUMPY_DTYPES[d]).min, np.iinfo(NUMPY_DTYPES[d]).max)) for d in (src, dst)
        )
        xq, yq = qt([16, 16], s_in, z_in, dtype=src), qt([16, 16], s_out, z_out, dtype=dst)
        recipe = {
            "input": ["x"],
            "output": ["y"],
            "operand": [{**xq, "name": "x"}, {**yq, "name": "y"}],
            "operation": [{"type": "QUANTIZE", "inputs": ["x"], "outputs": ["y"]}],
        }
        model = build(recipe)
        got, want = interpreter.run(model, [x]), litert.run(model, [x])
        assert got[0].dtype == want[0].dtype == NUMPY_DTYPES[dst]
        np.testing.assert_array_equal(got[0], want[0])
        checked += 1
    assert checked == 20
