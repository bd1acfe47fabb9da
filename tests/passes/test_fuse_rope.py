"""fuse_rope: the half rotation (Llama's rotate_half, with STRIDED_SLICE or SLICE) becomes one ROPE mode 0
equal in onert where the tables hold one row; the interleaved (GPT-J) form is recognized as ROPE mode
1; a form onert 0.1.0 computes wrong or not at all (tables of several rows that differ; mode 1) is refused for
the onert target, saying why, and its algebra is checked made for no target; each other condition
is tried once."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import apply_for_no_target, build_copy, inputs_for
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from bnfold.values import litert, onert
from decoder_models import CIRCLE, TFLITE, assert_equal_in_runtime, optimized, reasons, rope_net

PASS = "fuse_rope"


@pytest.mark.parametrize("slicer", ["STRIDED_SLICE", "SLICE"])
@pytest.mark.parametrize("table_shape", [[1, 1, 1, 8], [1, 8], [8]])
def test_half_rotation_with_one_row_of_tables_becomes_one_rope_equal_in_onert(slicer, table_shape):
    original, model, report = optimized(rope_net(slicer=slicer, table_shape=table_shape), [PASS])
    assert model.op_counts() == {"ROPE": 1}
    (rope,) = model.graphs[0].ops
    assert rope.options.mode == 0 and [t.shape for t in rope.inputs[1:]] == [(1, 1, 1, 8)] * 2
    assert report["folds"][0]["mode"] == "half"
    assert_equal_in_runtime(original, model)


def _algebra_for_no_target(net):
    original, model = build(net.recipe(), CIRCLE), build(net.recipe(), CIRCLE)
    apply_for_no_target(model, PASS)
    xs = inputs_for(original)
    want = litert.run(build(net.recipe(), TFLITE), xs)  # the written-out form in LiteRT
    np.testing.assert_allclose(interpreter.run(model, xs)[0], want[0], rtol=1e-5, atol=1e-5)
    return model


SEVERAL_ROWS = "onert does not run ROPE (tables of several rows)"


@pytest.mark.parametrize(
    "net, reason",
    [
        (rope_net(table_shape=[1, 1, 3, 8]), f"{SEVERAL_ROWS}; cos [1, 1, 3, 8], sin [1, 1, 3, 8]"),
        (rope_net(table_shape=[1, 2, 1, 8]), f"{SEVERAL_ROWS}; cos [1, 2, 1, 8], sin [1, 2, 1, 8]"),
        (rope_net(mode="interleaved"), "onert does not run ROPE (interleaved)"),
    ],
    ids=["row-per-position", "row-per-head", "interleaved"],
)
def test_forms_onert_does_not_compute_are_refused_and_their_algebra_holds(net, reason):
    _, model, report = optimized(net, [PASS])
    assert "ROPE" not in model.op_counts()
    assert reasons(report) == [reason]
    fused = _algebra_for_no_target(net)
    (rope,) = fused.graphs[0].ops
    assert rope.kind == "ROPE" and rope.options.mode == (1 if "interleaved" in reason else 0)


def test_onert_reads_the_first_row_of_the_tables_for_every_position():
    """What the refusal of several rows stands on: onert 0.1.0's ROPE of tables [1, 1, 3, D] computes
    x·cos[0] + rotate(x)·sin[0] at every position (cker RoPE.h indexes the tables by the last axis
    alone), not the function; with the rows equal it computes the function."""
    if onert.missing():
        pytest.skip(f"onert: {onert.missing()}")
    net = rope_net(table_shape=[1, 1, 3, 8])
    fused = build_copy(_algebra_for_no_target(net))
    (rope,) = fused.graphs[0].ops
    x, sin, cos = inputs_for(fused)[0], rope.inputs[1].data, rope.inputs[2].data
    (have,) = onert.Session(fused)([x])
    rotated = np.concatenate([-x[..., 4:], x[..., :4]], axis=-1)
    first_row = x * cos[:, :, :1] + rotated * sin[:, :, :1]
    np.testing.assert_allclose(have, first_row, rtol=1e-6, atol=1e-6)
    assert np.abs(have - interpreter.run(fused, [x])[0]).max() > 0.1


@pytest.mark.parametrize("table_shape", [[1, 1, 3, 8], [1, 2, 3, 8], [3, 8]])
def test_tables_whose_rows_are_all_one_row_fuse_for_onert_with_that_row(table_shape):
    """Constant tables broadcast to every position (rows bit for bit equal): one ROPE reading one row."""
    original, model, report = optimized(rope_net(table_shape=table_shape, equal_rows=True), [PASS])
    assert model.op_counts() == {"ROPE": 1} and not reasons(report)
    (rope,) = model.graphs[0].ops
    assert [list(t.shape) for t in rope.inputs[1:]] == [[1, 1, 1, 8], [1, 1, 1, 8]]
    assert_equal_in_runtime(original, model)


def test_rows_that_differ_in_one_bit_are_several_rows():
    net = rope_net(table_shape=[1, 1, 3, 8], equal_rows=True)
    cos = next(o for o in net.operands if o["name"] == "cos")
    values = np.array(cos["filler"]["values"], np.float32)
    values[-1] = np.nextafter(values[-1], np.float32(2))
    cos["filler"]["values"] = values.tolist()
    _, model, report = optimized(net, [PASS])
    assert "ROPE" not in model.op_counts()
    assert reasons(report) == [f"{SEVERAL_ROWS}; cos [1, 1, 3, 8], sin [1, 1, 3, 8]"]


def test_litert_and_tflite_have_no_rope():
    _, model, report = optimized(rope_net(), [PASS], target="litert")
    assert reasons(report) == ["litert does not run ROPE"]
    _, model, report = optimized(rope_net(), [PASS], fmt=TFLITE)
    assert "ROPE" not in model.op_counts()
    assert reasons(report) == ["the RoPE stays: the output format tflite has no ROPE (Circle only)"]


def test_an_intermediate_the_outside_sees_keeps_it():
    _, model, report = optimized(rope_net(extra_output="rotated"), [PASS], target="litert")
    assert "ROPE" not in model.op_counts()
    assert reasons(report) == ["the RoPE stays: an intermediate of it is read elsewhere or is a graph output"]
    _, model, report = optimized(rope_net(extra_output="rotated"), [PASS])  # for onert: not rewritten at all
    assert "ROPE" not in model.op_counts() and not report["folds"]
    assert reasons(report) == [
        "left as it is (the runtime computes it right only by the luck of a plan a rewrite may change): "
        "onert may overwrite a graph output another op reads ('rotated', read by MUL)"
    ]


def test_a_table_not_along_the_last_axis_keeps_it():
    _, model, report = optimized(rope_net(table_shape=[1, 2, 1, 1]), [PASS])
    assert "ROPE" not in model.op_counts()
    assert reasons(report) == [
        "the RoPE stays: the cos table [1, 2, 1, 1] does not broadcast along x's last axis [1, 2, 3, 8]"
    ]


def test_another_rotation_is_not_a_rope():
    """cat(-x[..., :D/2], x[..., D/2:]) rotates the other way: the run on positions tells."""
    _, model, report = optimized(rope_net(swap_halves=True), [PASS])
    assert "ROPE" not in model.op_counts() and not report["folds"] and not reasons(report)


def test_rank_3_input_is_not_taken():
    _, model, report = optimized(rope_net((2, 3, 8), table_shape=[8]), [PASS])
    assert "ROPE" not in model.op_counts() and not report["folds"]


@pytest.mark.parametrize("table_shape", [[1, 1, 1, 8], [1, 1, 3, 8]], ids=["one-row", "several-rows"])
@pytest.mark.parametrize("scale", [0.5, 0.3])
def test_a_scale_after_the_rope_joins_its_tables(table_shape, scale):
    """q·d^-1/4 after the RoPE: the MUL goes whether the ROPE is made (one row) or refused for onert
    (a row per position: the written-out form keeps its ops but the MUL)."""
    net = rope_net(table_shape=table_shape, scale=scale)
    original, model, report = optimized(net, [PASS])
    written_out = {"MUL": 2, "ADD": 1, "STRIDED_SLICE": 2, "NEG": 1, "CONCATENATION": 1}
    assert model.op_counts() == ({"ROPE": 1} if table_shape[2] == 1 else written_out)
    assert [f["scale"] for f in report["folds"] if "scale" in f] == [pytest.approx(scale)]
    assert model.graphs[0].outputs[0].name == "y"
    assert_equal_in_runtime(original, model)


@pytest.mark.parametrize(
    "change", [dict(scale_act="RELU"), dict(scale_vector=[0.5, 0.25, 1, 2, 0.5, 0.25, 1, 2])], ids=["relu", "vector"]
)
def test_other_muls_after_the_rope_stay(change):
    original, model, report = optimized(rope_net(scale=0.5, **change), [PASS])
    assert model.op_counts() == {"ROPE": 1, "MUL": 1}
    assert not any("scale" in f for f in report["folds"])
    assert_equal_in_runtime(original, model)


def test_litert_torch_negates_by_a_mul_and_its_tflite_rope_still_takes_the_scale():
    """litert-torch writes -x as MUL(x, -1); in a TFLite model no ROPE can be made (the report says so),
    but the scale after it joins the tables, exact in LiteRT."""
    net = rope_net(negation="MUL", scale=0.5)
    original, model, report = optimized(net, [PASS], fmt=TFLITE)
    assert model.op_counts() == {"MUL": 3, "ADD": 1, "STRIDED_SLICE": 2, "CONCATENATION": 1}
    assert reasons(report) == ["the RoPE stays: the output format tflite has no ROPE (Circle only)"]
    assert_equal_in_runtime(original, model)
    _, fused, _ = optimized(net, [PASS])
    assert fused.op_counts() == {"ROPE": 1}
