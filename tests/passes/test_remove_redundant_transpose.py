"""Layout propagation (remove_redundant_transpose, propagation.py, permute.py): each operator kind a
transpose crosses, and the cases where it must stay.

Every model starts NHWC: x[2,5,7,3] -> CONV_2D -> [2,5,7,4] -> TRANSPOSE(0,3,1,2) -> t[2,4,5,7]
(NCHW, every dimension a different size), then the op under test, then usually TRANSPOSE(0,2,3,1)
back. Each case checks operator counts after the default passes and LiteRT outputs against the
original (bn_models.optimize_and_compare), and for what stays, the report's reason.
"""

from __future__ import annotations

import pytest

from bn_models import Net, optimize_and_compare
from bnfold import api
from bnfold.engine.permute import compose, inverse
from bnfold.engine.propagation import _moved_quantization, propagate
from bnfold.recipe.chef import build

NCHW, NHWC = (0, 3, 1, 2), (0, 2, 3, 1)
T = [2, 4, 5, 7]  # the NCHW tensor


def head(n: Net, name: str = "c", x: str = "x", channels: int = 4) -> str:
    """x[2,5,7,3] (an input once) -> CONV_2D -> TRANSPOSE to NCHW: the name of the [2,C,5,7] tensor."""
    if x not in n.shapes:
        n.input(x, [2, 5, 7, 3])
    conv = n.op(
        "CONV_2D",
        [x, n.const(f"{name}_w", [channels, 1, 1, 3]), n.const(f"{name}_b", [channels])],
        f"{name}_conv",
        [2, 5, 7, channels],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    return n.op("TRANSPOSE", [conv, n.ints(f"{name}_p", NCHW)], f"{name}_nchw", [2, channels, 5, 7])


def back(n: Net, t: str, shape, name: str = "out") -> str:
    """TRANSPOSE(0,2,3,1) of a 4-D NCHW tensor: the model's output."""
    out = n.op("TRANSPOSE", [t, n.ints(f"{name}_p", NHWC)], name, [shape[0], shape[2], shape[3], shape[1]])
    n.outputs.append(out)
    return out


def net_unary(n):
    back(n, n.op("ABS", [head(n)], "abs", T), T)


def net_constant(n):
    m = n.op("MAXIMUM", [head(n), n.const("k", [4, 1, 1])], "max", T)
    back(n, n.op("SUB", [n.const("k7", [7]), m], "sub", T), T)  # constant first, varying along W


def net_scalar_input(n):
    """A one-value graph input scales the NCHW tensor: it broadcasts the same in any layout."""
    back(n, n.op("MUL", [head(n), n.input("scale", [1, 1])], "scaled", T), T)


def net_same_transpose(n):
    back(n, n.op("SQUARED_DIFFERENCE", [head(n, "a"), head(n, "b")], "sq", T), T)


def net_mean_keep(n):
    back(n, n.op("MEAN", [head(n), n.ints("axes", [3])], "mean", [2, 4, 5, 1], keep_dims=True), [2, 4, 5, 1])


def net_reduce_max(n):
    n.outputs.append(n.op("REDUCE_MAX", [head(n), n.ints("axes", [2, -1])], "rmax", [2, 4], keep_dims=False))


def net_sum_channels(n):
    n.outputs.append(n.op("SUM", [head(n), n.ints("axes", [1])], "sum", [2, 5, 7], keep_dims=False))


def net_concat(n):
    c = n.op("CONCATENATION", [head(n, "a"), head(n, "b")], "cat", [2, 8, 5, 7], axis=1)
    back(n, c, [2, 8, 5, 7])


def net_split(n):
    a, b = "s0", "s1"
    n.tensor(a, [2, 4, 5, 1]), n.tensor(b, [2, 4, 5, 6])
    n.operations.append(
        {
            "type": "SPLIT_V",
            "inputs": [head(n), n.ints("sizes", [1, -1]), n.ints("axis", [-1])],
            "outputs": [a, b],
            "options": {"num_splits": 2},
        }
    )
    back(n, a, [2, 4, 5, 1], "out_a"), back(n, b, [2, 4, 5, 6], "out_b")


def net_slice(n):
    s = n.op("SLICE", [head(n), n.ints("begin", [1, 1, 1, 2]), n.ints("size", [1, 3, 4, -1])], "slice", [1, 3, 4, 5])
    back(n, n.op("RELU", [s], "relu", [1, 3, 4, 5]), [1, 3, 4, 5])


def net_strided_slice(n):
    s = n.op(
        "STRIDED_SLICE",
        [head(n), n.ints("begin", [1, 0, 3, 1]), n.ints("end", [0, 4, 5, 7]), n.ints("strides", [1, 1, 2, 3])],
        "ss",
        [1, 4, 3, 2],
        begin_mask=4,
        end_mask=1,
    )
    back(n, s, [1, 4, 3, 2])


def net_padv2(n):
    paddings = n.tensor("pads", [4, 2], "INT32", {"kind": "explicit", "values": [0, 0, 1, 0, 2, 1, 0, 3]})
    p = n.op("PADV2", [head(n), paddings, n.const("value", [], values=[1.5])], "pad", [2, 5, 8, 10])
    back(n, p, [2, 5, 8, 10])


def net_arg_max(n):
    n.tensor("arg", [2, 5, 7], "INT32")  # output_type 2: INT32
    n.outputs.append(n.op("ARG_MAX", [head(n), n.ints("axis", [1])], "arg", [2, 5, 7], output_type=2))


def net_tile(n):
    back(n, n.op("TILE", [head(n), n.ints("multiples", [1, 2, 1, 3])], "tile", [2, 8, 5, 21]), [2, 8, 5, 21])


def net_softmax_last_axis_kept(n):
    head(n)  # its NCHW transpose has no reader: cleanup drops it
    wh = n.op("TRANSPOSE", ["c_conv", n.ints("swap", (0, 2, 1, 3))], "wh", [2, 7, 5, 4])
    s = n.op("SOFTMAX", [wh], "softmax", [2, 7, 5, 4], beta=0.7)  # along C, which stays last
    n.outputs.append(n.op("TRANSPOSE", [s, n.ints("swap2", (0, 2, 1, 3))], "out", [2, 5, 7, 4]))


def net_unit_reshape(n):
    r = n.op("RESHAPE", [head(n), n.ints("shape5", [2, 4, 1, 5, 7])], "r5", [2, 4, 1, 5, 7])
    e = n.op("EXP", [r], "exp", [2, 4, 1, 5, 7])
    back(n, n.op("RESHAPE", [e, n.ints("shape4", T)], "r4", T), T)


def net_squeeze(n):
    m = n.op("REDUCE_MIN", [head(n), n.ints("axes", [2])], "min", [2, 4, 1, 7], keep_dims=True)
    s = n.op("SQUEEZE", [m], "squeezed", [2, 4, 7], squeeze_dims=[2])
    n.outputs.append(n.op("TRANSPOSE", [s, n.ints("nwc", [0, 2, 1])], "out", [2, 7, 4]))


def net_channel_shuffle(n):
    """ShuffleNet's shuffle in NCHW: the reshape splitting C keeps its two parts adjacent in NHWC too."""
    t = head(n, channels=6)
    r = n.op("RESHAPE", [t, n.ints("groups", [2, 2, 3, 5, 7])], "grouped", [2, 2, 3, 5, 7])
    s = n.op("TRANSPOSE", [r, n.ints("swap", [0, 2, 1, 3, 4])], "shuffled", [2, 3, 2, 5, 7])
    back(n, n.op("RESHAPE", [s, n.ints("flat", [2, 6, 5, 7])], "merged", [2, 6, 5, 7]), [2, 6, 5, 7])


def net_fc_flatten(n):
    flat = n.op("RESHAPE", [head(n), n.ints("flat_shape", [2, -1])], "flat", [2, 140])
    fc = n.op("FULLY_CONNECTED", [flat, n.const("fc_w", [6, 140]), n.const("fc_b", [6])], "fc", [2, 6])
    n.outputs.append(fc)


def net_fc_reads_nchw(n):
    """An FC reading the 4-D NCHW tensor flattens it itself: its weight columns are permuted instead."""
    n.outputs.append(n.op("FULLY_CONNECTED", [head(n), n.const("fc_w", [6, 140]), n.const("fc_b", [6])], "fc", [2, 6]))


def net_fc_keep_num_dims(n):
    """With keep_num_dims the FC maps the NCHW tensor's last axis (W): no flatten, the layout matters."""
    n.outputs.append(
        n.op(
            "FULLY_CONNECTED",
            [head(n), n.const("fc_w", [6, 7]), n.const("fc_b", [6])],
            "fc",
            [2, 4, 5, 6],
            keep_num_dims=True,
        )
    )


def net_shuffle_block(n):
    """ShuffleNet's unit in NCHW: the shuffle, a SPLIT, one half through a conv (NHWC, so TICO wraps
    it in transposes), the other straight into the CONCATENATION: that operand is reached backward
    (SPLIT, RESHAPE) up to the shuffle's TRANSPOSE, which then makes the NHWC tensor itself."""
    t = head(n, channels=6)
    r = n.op("RESHAPE", [t, n.ints("groups", [2, 2, 3, 5, 7])], "grouped", [2, 2, 3, 5, 7])
    s = n.op("TRANSPOSE", [r, n.ints("swap", [0, 2, 1, 3, 4])], "shuffled", [2, 3, 2, 5, 7])
    m = n.op("RESHAPE", [s, n.ints("flat", [2, 6, 5, 7])], "merged", [2, 6, 5, 7])
    n.tensor("a", [2, 3, 5, 7]), n.tensor("b", [2, 3, 5, 7])
    n.operations.append(
        {"type": "SPLIT", "inputs": [n.ints("axis", [1]), m], "outputs": ["a", "b"], "options": {"num_splits": 2}}
    )
    b = n.op("TRANSPOSE", ["b", n.ints("b_p", NHWC)], "b_nhwc", [2, 5, 7, 3])
    c = head(n, "d", b, channels=3)
    back(n, n.op("CONCATENATION", ["a", c], "cat", [2, 6, 5, 7], axis=1), [2, 6, 5, 7])


def net_integer(n):
    """INT32 data: moved exactly like any other."""
    t = head(n)
    n.tensor("int", T, "INT32"), n.tensor("imax", T, "INT32"), n.tensor("out", [2, 5, 7, 4], "INT32")
    floor = n.tensor("floor", [4, 1, 1], "INT32", {"kind": "explicit", "values": [-1, 0, 1, 2]})
    back(n, n.op("MAXIMUM", [n.op("CAST", [t], "int", T), floor], "imax", T), T)


POSITIVE = {  # net -> operator counts after the default passes
    net_unary: {"TRANSPOSE": 0, "ABS": 1},
    net_constant: {"TRANSPOSE": 0, "MAXIMUM": 1, "SUB": 1},
    net_same_transpose: {"TRANSPOSE": 0, "SQUARED_DIFFERENCE": 1},
    net_scalar_input: {"TRANSPOSE": 0, "MUL": 1},
    net_mean_keep: {"TRANSPOSE": 0, "MEAN": 1},
    net_reduce_max: {"TRANSPOSE": 0, "REDUCE_MAX": 1},
    net_sum_channels: {"TRANSPOSE": 0, "SUM": 1},
    net_concat: {"TRANSPOSE": 0, "CONCATENATION": 1},
    net_split: {"TRANSPOSE": 0, "SPLIT_V": 1},
    net_slice: {"TRANSPOSE": 0, "SLICE": 1},
    net_strided_slice: {"TRANSPOSE": 0, "STRIDED_SLICE": 1},
    net_padv2: {"TRANSPOSE": 0, "PADV2": 1},
    net_softmax_last_axis_kept: {"TRANSPOSE": 0, "SOFTMAX": 1},
    net_unit_reshape: {"TRANSPOSE": 0, "EXP": 1},
    net_fc_flatten: {"TRANSPOSE": 0, "FULLY_CONNECTED": 1},
    net_fc_reads_nchw: {"TRANSPOSE": 0, "FULLY_CONNECTED": 1},
    net_integer: {"TRANSPOSE": 0, "CAST": 1, "MAXIMUM": 1},
    net_arg_max: {"TRANSPOSE": 0, "ARG_MAX": 1},
    net_tile: {"TRANSPOSE": 0, "TILE": 1},
    net_squeeze: {"TRANSPOSE": 0, "REDUCE_MIN": 1, "SQUEEZE": 1},
    # the NCHW transpose crosses the splitting reshape and merges into the shuffle; the one after the
    # merging reshape is pulled back before it and merges too: one transpose, the shuffle itself
    net_channel_shuffle: {"TRANSPOSE": 1, "RESHAPE": 2},
    # only the shuffle is left, in NHWC ([2,5,7,2,3] -> [2,5,7,3,2]), as litert-torch exports it
    net_shuffle_block: {"TRANSPOSE": 1, "RESHAPE": 2, "SPLIT": 1, "CONCATENATION": 1},
}


@pytest.mark.parametrize("make", POSITIVE, ids=lambda f: f.__name__[4:])
def test_transposes_cross_and_cancel(make):
    n = Net()
    make(n)
    model, report = optimize_and_compare(n.recipe(), None, POSITIVE[make])
    assert len(report.transposes) == POSITIVE[make]["TRANSPOSE"]
    assert any(f["pass"] == "remove_redundant_transpose" for f in report.folds)


def net_graph_output(n):
    t = head(n)
    n.outputs.append(t)  # the NCHW tensor is a graph output too
    back(n, n.op("RELU", [t], "relu", T), T)


def net_softmax_moved_axis(n):
    back(n, n.op("SOFTMAX", [head(n)], "softmax", T, beta=1.0), T)


def net_reshape_mixes(n):
    r = n.op("RESHAPE", [head(n), n.ints("shape", [2, 20, 7])], "mixed", [2, 20, 7])
    n.outputs.append(n.op("TRANSPOSE", [r, n.ints("p3", [0, 2, 1])], "out", [2, 7, 20]))


def net_costly(n):
    y = n.input("y", T)  # an NCHW graph input: the ADD would need it transposed too
    n.outputs.append(n.op("ADD", [head(n), y], "add", T))


NEGATIVE = {  # net -> (counts, a part of the reason of the transpose that stays)
    net_graph_output: ({"TRANSPOSE": 1, "RELU": 1}, "reaches graph output 'c_nchw'"),
    net_softmax_moved_axis: ({"TRANSPOSE": 2}, "reader SOFTMAX"),
    # the transpose after the reshape is pulled back before it and merges with the first: one stays
    net_reshape_mixes: ({"TRANSPOSE": 1, "RESHAPE": 1}, "merges or splits axes the permutation"),
    net_costly: ({"TRANSPOSE": 1}, "would add 2 transpose(s) to remove 1"),
    net_fc_keep_num_dims: ({"TRANSPOSE": 1, "FULLY_CONNECTED": 1}, "reader FULLY_CONNECTED"),
}


@pytest.mark.parametrize("make", NEGATIVE, ids=lambda f: f.__name__[4:])
def test_transposes_that_stay_say_why(make):
    n = Net()
    make(n)
    counts, reason = NEGATIVE[make]
    model, report = optimize_and_compare(n.recipe(), None, counts)
    assert len(report.transposes) == counts["TRANSPOSE"]
    assert any(reason in t["reason"] for t in report.transposes), report.transposes


def test_squeeze_dims_out_of_range_stop_the_transpose_not_the_run():
    """A SQUEEZE whose squeezeDims name no axis (a malformed model no runtime runs) was a TypeError,
    exit 3, when a transpose tried to cross it; it is a reason the transpose stays."""
    n = Net()
    m = n.op("REDUCE_MIN", [head(n), n.ints("axes", [2])], "min", [2, 4, 1, 7], keep_dims=True)
    s = n.op("SQUEEZE", [m], "squeezed", [2, 4, 7], squeeze_dims=[9])
    n.outputs.append(n.op("TRANSPOSE", [s, n.ints("nwc", [0, 2, 1])], "out", [2, 7, 4]))
    model = build(n.recipe())
    report = api.apply_passes(model, ["remove_redundant_transpose"])
    assert model.op_counts()["TRANSPOSE"] == 2 and not report.folds
    assert any("SQUEEZE axes [9] out of range for rank 4" in t["reason"] for t in report.transposes), report.transposes


def test_a_concatenation_without_options_is_crossed_on_its_default_axis():
    """A CONCATENATION whose file holds no options (the runtime then joins on axis 0) was an
    AttributeError, exit 3, when a transpose crossed it; the crossing now writes its options."""
    n = Net()
    a, b = head(n, "a"), head(n, "b")
    n.tensor("cat", [4, 4, 5, 7])
    n.operations.append({"type": "CONCATENATION", "inputs": [a, b], "outputs": ["cat"], "options_type": None})
    back(n, "cat", [4, 4, 5, 7])
    model, report = optimize_and_compare(n.recipe(), None, {"TRANSPOSE": 0, "CONCATENATION": 1})
    [cat] = [op for op in model.graphs[0].ops if op.kind == "CONCATENATION"]
    assert (cat.options.type, cat.options.axis) == ("ConcatenationOptions", 0)


def net_split_both_layouts(n):
    a, b = "s0", "s1"
    n.tensor(a, [2, 3, 5, 7]), n.tensor(b, [2, 3, 5, 7])
    n.operations.append(
        {
            "type": "SPLIT",
            "inputs": [n.ints("axis", [1]), head(n, channels=6)],
            "outputs": [a, b],
            "options": {"num_splits": 2},
        }
    )
    back(n, a, [2, 3, 5, 7])
    n.outputs.append(n.op("LOG_SOFTMAX", [b], "nchw_softmax", [2, 3, 5, 7]))  # along W of the NCHW half


def test_split_outputs_read_in_both_layouts_keep_one_transpose_for_the_other_reader():
    n = Net()
    net_split_both_layouts(n)
    model, report = optimize_and_compare(n.recipe(), None, {"TRANSPOSE": 1, "SPLIT": 1, "LOG_SOFTMAX": 1})
    [left] = report.transposes
    assert left["at"]["output"] == "s1"  # transposed back under its own name for the reader that needs it


def net_shared_constant(n):
    k = n.const("k", [4, 1, 1])
    m = n.op("MAXIMUM", [head(n), k], "max", T)
    back(n, n.op("RELU6", [m], "relu6", T), T)
    y = n.input("y", [3, 4, 5, 7])
    n.outputs.append(n.op("MAXIMUM", [y, k], "other", [3, 4, 5, 7]))  # the same constant, still NCHW


def test_shared_constant_is_copied_not_edited():
    n = Net()
    net_shared_constant(n)
    model, _ = optimize_and_compare(n.recipe(), None, {"TRANSPOSE": 0, "MAXIMUM": 2})
    graph = model.graphs[0]
    shapes = sorted(tuple(op.inputs[1].shape) for op in graph.ops if op.kind == "MAXIMUM")
    assert shapes == [(1, 1, 4), (4, 1, 1)]


def test_identity_transpose_goes_and_an_output_keeps_its_name():
    n = Net()
    n.input("x", T)
    r = n.op("RELU", ["x"], "relu", T)
    n.outputs.append(n.op("TRANSPOSE", [r, n.ints("same", [0, 1, 2, 3])], "out", T))
    model, report = optimize_and_compare(n.recipe(), ["remove_unnecessary_transpose"], {"TRANSPOSE": 0, "RELU": 1})
    assert [t.name for t in model.graphs[0].outputs] == ["out"]


def test_restricted_passes_cross_only_their_kinds():
    n = Net()
    net_mean_keep(n)
    optimize_and_compare(n.recipe(), ["forward_transpose_op"], {"TRANSPOSE": 2})
    optimize_and_compare(n.recipe(), ["fuse_transpose_with_mean"], {"TRANSPOSE": 0})
    n = Net()
    net_unary(n)
    optimize_and_compare(n.recipe(), ["forward_transpose_op"], {"TRANSPOSE": 0})


def test_quantized_per_channel_tensor_keeps_its_axis():
    """Moving data across a per-channel quantized tensor remaps its quantized_dimension."""
    from types import SimpleNamespace

    q = SimpleNamespace(scale=[0.1, 0.2, 0.3, 0.4], zeroPoint=[0] * 4, quantizedDimension=1)
    assert _moved_quantization(q, NCHW).quantizedDimension == 3 and q.quantizedDimension == 1


def test_rewrite_count_is_linear_in_a_long_chain():
    """A chain of 400 crossable ops between two transposes is one region, rewritten once."""
    n = Net()
    t = head(n)
    for i in range(400):
        t = n.op("RELU" if i % 2 else "NEG", [t], f"u{i}", T)
    back(n, t, T)
    model = build(n.recipe())
    result = propagate(model.graphs[0])
    assert len(result.folds) == 1 and model.op_counts().get("TRANSPOSE", 0) == 0


def squeeze_excite_net(out_reshape: bool = True) -> Net:
    """TICO's squeeze-excite gate: a 1x1 conv's [2,1,1,4] output RESHAPEd to NCHW [2,4,1,1] (a
    transpose of unit axes), LOGISTIC, RESHAPEd back into the next conv (or a graph output)."""
    n = Net()
    n.input("x", [2, 1, 1, 3])
    c = n.op(
        "CONV_2D",
        ["x", n.const("w", [4, 1, 1, 3]), n.const("b", [4])],
        "c",
        [2, 1, 1, 4],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    r = n.op("RESHAPE", [c, n.ints("to_nchw", [2, 4, 1, 1])], "r", [2, 4, 1, 1])
    g = n.op("LOGISTIC", [r], "g", [2, 4, 1, 1])
    if not out_reshape:
        n.outputs = [g]
        return n
    back_ = n.op("RESHAPE", [g, n.ints("to_nhwc", [2, 1, 1, 4])], "gb", [2, 1, 1, 4])
    n.outputs = [
        n.op(
            "CONV_2D",
            [back_, n.const("w2", [5, 1, 1, 4]), n.const("b2", [5])],
            "y",
            [2, 1, 1, 5],
            padding="VALID",
            stride_w=1,
            stride_h=1,
        )
    ]
    return n


def test_unit_axis_reshapes_move_like_transposes():
    # the pair cancels across the LOGISTIC: the gate runs on the conv's own layout
    optimize_and_compare(squeeze_excite_net().recipe(), ["remove_redundant_transpose"], {"RESHAPE": 0, "TRANSPOSE": 0})


def test_unit_axis_reshape_with_nothing_to_meet_stays_a_reshape():
    # moving it would only trade the RESHAPE for a TRANSPOSE at the graph output: it is left as it was
    model, _ = optimize_and_compare(
        squeeze_excite_net(out_reshape=False).recipe(), ["remove_redundant_transpose"], {"RESHAPE": 1, "TRANSPOSE": 0}
    )


def twin_transposes_net(twin_is_output: bool = False) -> Net:
    """One conv output transposed to NCHW twice (TICO writes one TRANSPOSE per reader), each read by
    a unary op whose NCHW result is a graph output."""
    n = Net()
    n.input("x", [2, 5, 7, 3])
    c = n.op(
        "CONV_2D",
        ["x", n.const("w", [4, 1, 1, 3]), n.const("b", [4])],
        "c",
        [2, 5, 7, 4],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    a = n.op("TRANSPOSE", [c, n.ints("pa", NCHW)], "ta", T)
    b = n.op("TRANSPOSE", [c, n.ints("pb", NCHW)], "tb", T)
    n.outputs = [n.op("RELU", [a], "ra", T), n.op("ABS", [b], "rb", T)] + ([b] if twin_is_output else [])
    return n


def test_transposes_of_one_tensor_by_one_permutation_are_one():
    model, report = optimize_and_compare(
        twin_transposes_net().recipe(), ["remove_redundant_transpose"], {"TRANSPOSE": 1, "RELU": 1, "ABS": 1}
    )
    assert [f["duplicate_of"]["output"] for f in report.folds if "duplicate_of" in f] == ["ta"]


def test_a_twin_that_is_a_graph_output_stays():
    optimize_and_compare(
        twin_transposes_net(twin_is_output=True).recipe(), ["remove_redundant_transpose"], {"TRANSPOSE": 2}
    )


def test_inverse_undoes_every_permutation_up_to_six_axes():
    import itertools

    for rank in range(7):
        for p in itertools.permutations(range(rank)):
            assert compose(p, inverse(p)) == compose(inverse(p), p) == tuple(range(rank)), p


def requantizing_transpose_net(out_scale: float) -> Net:
    """int8 x[2,5,7,4] (scale 0.1) -> TRANSPOSE to NCHW with output scale `out_scale` -> ADD(t, t)
    -> TRANSPOSE back: at another scale the first TRANSPOSE also changes the values the ADD sees."""
    n = Net()

    def int8(name: str, shape, scale: float) -> str:
        n.tensor(name, shape, "INT8")
        n.operands[-1]["quant"] = {"scale": [scale], "zero_point": [0]}
        return name

    n.inputs.append(int8("x", [2, 5, 7, 4], 0.1))
    t = n.op("TRANSPOSE", ["x", n.ints("p", NCHW)], int8("t", T, out_scale), T)
    a = n.op("ADD", [t, t], int8("a", T, 0.4), T)
    n.outputs = [n.op("TRANSPOSE", [a, n.ints("back", NHWC)], int8("out", [2, 5, 7, 4], 0.4), [2, 5, 7, 4])]
    return n


def test_quantized_transposes_cancel_when_they_only_permute():
    optimize_and_compare(
        requantizing_transpose_net(0.1).recipe(), ["remove_redundant_transpose"], {"TRANSPOSE": 0}, numerics=False
    )


def test_a_transpose_that_changes_scale_stays_and_says_why():
    model, report = optimize_and_compare(
        requantizing_transpose_net(0.2).recipe(), ["remove_redundant_transpose"], {"TRANSPOSE": 2}, numerics=False
    )
    reasons = {t["at"]["output"]: t["reason"] for t in report.transposes}
    assert "another scale or zero point" in reasons["t"], reasons


# ---- BATCH_MATMUL absorbs a swap of an operand's last two axes into its adjoint flag ----------


def attention_scores(perm=(0, 1, 3, 2), *, through_reshape=True, lhs=False) -> Net:
    """q[1,3,5,4], k[1,3,5,4] -> TRANSPOSE(perm) -> MUL(scale) -> (RESHAPE to rank 3) -> BATCH_MATMUL(q, ·):
    TICO's attention scores, k transposed for the product (or q, `lhs`)."""
    n = Net(seed=21)
    q, k = n.input("q", [1, 3, 5, 4]), n.input("k", [1, 3, 5, 4])
    kt_shape = [[1, 3, 5, 4][p] for p in perm]
    kt = n.op("TRANSPOSE", [k, n.ints("perm", list(perm))], "kt", kt_shape)
    scaled = n.op("MUL", [kt, n.const("scale", [], values=[0.5])], "scaled", kt_shape)
    if through_reshape:
        scaled = n.op(
            "RESHAPE", [scaled, n.ints("s3_shape", kt_shape[1:])], "scaled3", kt_shape[1:], new_shape=kt_shape[1:]
        )
        q = n.op("RESHAPE", [q, n.ints("q3_shape", [3, 5, 4])], "q3", [3, 5, 4], new_shape=[3, 5, 4])
    operands = [scaled, q] if lhs else [q, scaled]
    rows = kt_shape[-1] if lhs else 5
    cols = 4 if lhs else kt_shape[-1]
    out = [3, rows, cols] if through_reshape else [1, 3, rows, cols]
    n.outputs = [n.op("BATCH_MATMUL", operands, "scores", out)]
    return n


@pytest.mark.parametrize("through_reshape", [True, False])
@pytest.mark.parametrize("lhs", [False, True])
def test_batch_matmul_absorbs_a_last_two_axes_transpose(through_reshape, lhs):
    model, report = optimize_and_compare(
        attention_scores(through_reshape=through_reshape, lhs=lhs).recipe(), None, {"TRANSPOSE": 0, "BATCH_MATMUL": 1}
    )
    (bmm,) = [op for op in model.graphs[0].ops if op.kind == "BATCH_MATMUL"]
    assert (bmm.options.adjX, bmm.options.adjY) == ((True, False) if lhs else (False, True))


def test_batch_matmul_absorbs_it_in_onert_too():
    from decoder_models import CIRCLE, assert_equal_in_runtime, optimized

    original, model, _ = optimized(attention_scores(), ["remove_redundant_transpose"], fmt=CIRCLE)
    (bmm,) = [op for op in model.graphs[0].ops if op.kind == "BATCH_MATMUL"]
    assert "TRANSPOSE" not in model.op_counts() and bmm.options.adjointRhs
    assert_equal_in_runtime(original, model)


def test_another_permutation_before_batch_matmul_stays_with_the_reason():
    """k[1,3,5,4] -> TRANSPOSE(1,0,3,2) -> [3,1,4,5]: a batch axis moves too, which no flag absorbs."""
    n = Net(seed=22)
    q, k = n.input("q", [1, 3, 5, 4]), n.input("k", [1, 3, 5, 4])
    kt = n.op("TRANSPOSE", [k, n.ints("perm", [1, 0, 3, 2])], "kt", [3, 1, 4, 5])
    n.outputs = [n.op("BATCH_MATMUL", [q, kt], "scores", [3, 3, 5, 5])]
    model, report = optimize_and_compare(n.recipe(), None, {"TRANSPOSE": 1})
    (left,) = report.to_dict()["transposes"]
    assert "BATCH_MATMUL" in left["reason"] and "only a swap of an operand's last two axes" in left["reason"]
