"""fuse_preactivation_batchnorm: BN -> ReLU before layers, moved across the ReLU exactly."""

from __future__ import annotations

import numpy as np

from bnfold import api
from bnfold.io.reader import read_model
from bnfold.values import litert
from conftest import DATA, build_recipe, fixture_input

TOL = dict(rtol=1e-5, atol=1e-5)


def _optimize(path, passes=None):
    model = read_model(str(path))
    report = api.apply_passes(model, passes)
    return model, report


def _inputs(model, rng, n=3):
    graph = model.graphs[0]
    return [[rng.normal(0, 2, t.shape).astype(np.float32) for t in graph.inputs] for _ in range(n)]


def _assert_same(original_path, model, inputs):
    original = read_model(str(original_path))
    for xs in inputs:
        for a, b in zip(litert.run(original, xs), litert.run(model, xs)):
            np.testing.assert_allclose(b, a, **TOL)


def test_resnet_v2_mini_every_preactivation_bn_folds_exactly(rng):
    path = DATA / "resnet_v2_mini.tflite"
    model, report = _optimize(path)
    counts = model.op_counts()
    assert counts.get("MUL", 0) == 0
    assert counts["ADD"] == 6  # the 6 residual ADDs, nothing else
    graph = model.graphs[0]
    assert all(not op.inputs[1].is_const and not op.inputs[0].is_const for op in graph.ops if op.kind == "ADD")
    assert counts["CONV_2D"] == 22 and counts["FULLY_CONNECTED"] == 1
    # standalone RELUs remain only where the residual sum also feeds the skip path
    assert counts.get("RELU", 0) == 3
    folds = [f for f in report.folds if f["pass"] == "fuse_preactivation_batchnorm"]
    assert len(folds) == 6 and all(f["shift_kept"] is None for f in folds)
    assert [s for s in report.skips if s["pass"] == "fuse_preactivation_batchnorm"] == []
    _assert_same(path, model, [[fixture_input("resnet_v2_mini.tflite")]] + _inputs(model, rng))


def _pre_skips(report):
    return [s for s in report.skips if s["pass"] == "fuse_preactivation_batchnorm"]


def test_recipe_with_zero_scales_folds_completely_and_exactly(tmp_path, rng):
    path = build_recipe("Net_Preactivation_BN_000", tmp_path)
    model, report = _optimize(path)
    counts = model.op_counts()
    assert counts.get("MUL", 0) == 0 and counts["ADD"] == 2 and counts["RELU"] == 1
    folds = {f["output"]: f for f in report.folds if f["pass"] == "fuse_preactivation_batchnorm"}
    assert set(folds) == {"a1", "a2", "a3"}
    assert folds["a1"]["shift_into"] == ["x0"]  # back through the MAX_POOL_2D into the stem conv
    assert folds["a2"]["shift_into"] == ["h2", "h3"]  # residual: +d into h2's conv, -d into h3's
    assert folds["a2"]["constant_channels"] == [2] and folds["a3"]["constant_channels"] == [1]
    assert _pre_skips(report) == []
    _assert_same(path, model, _inputs(model, rng))


def test_recipe_with_negative_and_zero_scales_leaves_what_cannot_fold(tmp_path, rng):
    path = build_recipe("Net_Preactivation_BN_001", tmp_path)
    model, report = _optimize(path)
    counts = model.op_counts()
    assert counts["MUL"] == 2 and counts["ADD"] == 3 and counts.get("RELU", 0) == 0
    skips = {s["at"]["output"]: s for s in _pre_skips(report)}
    assert set(skips) == {"gax", "aa", "gcx", "ac", "ab"}  # every op of each chain left: MUL -> ADD(RELU)
    assert [skips[c]["chain"] for c in ("gax", "gcx")] == [skips[c]["chain"] for c in ("aa", "ac")]
    assert skips["gax"]["zero_channels"] == [2] and "SAME padding" in skips["gax"]["reason"]
    assert skips["gcx"]["negative_channels"] == [3, 7] and skips["gcx"]["zero_channels"] == [0]
    assert "negative scale" in skips["gcx"]["reason"]
    assert "shift stays as ADD(RELU)" in skips["ab"]["reason"] and "fused RELU" in skips["ab"]["reason"]
    [fold] = [f for f in report.folds if f["pass"] == "fuse_preactivation_batchnorm"]
    assert fold["output"] == "ab" and fold["zero_channels"] == [1] and fold["shift_into"] is None
    _assert_same(path, model, _inputs(model, rng))


def _model_with(tmp_path, graph_output_extra=None, share_filter=False):
    """x -> CONV_2D(RELU) -> MUL -> ADD(RELU) -> y -> {CONV_2D a, CONV_2D b}."""
    from bnfold.io.formats import TFLITE
    from bnfold.ir.graph import Graph, Options
    from bnfold.ir.model import Model

    rng = np.random.default_rng(3)
    model = Model(TFLITE, version=3)
    g = model.add_graph(Graph("main"))

    def conv(pad: str, act: str) -> Options:
        return Options(
            "Conv2DOptions",
            padding=pad,
            strideW=1,
            strideH=1,
            fusedActivationFunction=act,
            dilationWFactor=1,
            dilationHFactor=1,
        )

    x = g.add_tensor("x", "FLOAT32", [1, 6, 5, 3])
    h = g.add_tensor("h", "FLOAT32", [1, 6, 5, 4])
    g.add_op(
        "CONV_2D",
        [x, g.add_const("w0", rng.normal(size=(4, 3, 3, 3))), g.add_const("b0", rng.normal(size=4))],
        [h],
        conv(0, 1),
    )
    m = g.add_tensor("m", "FLOAT32", [1, 6, 5, 4])
    g.add_op(
        "MUL",
        [h, g.add_const("s", rng.uniform(0.2, 2, (1, 1, 1, 4)))],
        [m],
        Options("MulOptions", fusedActivationFunction=0),
    )
    y = g.add_tensor("y", "FLOAT32", [1, 6, 5, 4])
    g.add_op(
        "ADD",
        [m, g.add_const("t", rng.normal(size=(1, 1, 1, 4)))],
        [y],
        Options("AddOptions", fusedActivationFunction=1),
    )
    wa = g.add_const("wa", rng.normal(size=(2, 3, 3, 4)))
    wb = wa if share_filter else g.add_const("wb", rng.normal(size=(2, 3, 3, 4)))
    outs = []
    for name, w in (("oa", wa), ("ob", wb)):
        o = g.add_tensor(name, "FLOAT32", [1, 6, 5, 2])
        g.add_op("CONV_2D", [y, w, g.add_const(name + "_b", rng.normal(size=2))], [o], conv(0, 0))
        outs.append(o)
    g.inputs, g.outputs = [x], outs + ([g.tensor(graph_output_extra)] if graph_output_extra else [])
    path = tmp_path / "m.tflite"
    api.save(model, str(path))
    return path


def test_shared_filter_is_copied_and_both_readers_scaled(tmp_path, rng):
    path = _model_with(tmp_path, share_filter=True)
    model, report = _optimize(path, ["fuse_preactivation_batchnorm"])
    g = model.graphs[0]
    assert model.op_counts()["ADD"] == 1 and model.op_counts().get("MUL", 0) == 0  # shift kept: conv has RELU
    convs = [op for op in g.ops if op.kind == "CONV_2D"][1:]
    original = read_model(str(path)).graphs[0].tensor("wa").data
    s = read_model(str(path)).graphs[0].tensor("s").data.reshape(-1)
    for op in convs:
        np.testing.assert_allclose(op.inputs[1].data, original * s, rtol=1e-6)
    assert convs[0].inputs[1] is not convs[1].inputs[1]
    _assert_same(path, model, _inputs(model, rng))


def test_graph_output_in_the_way_blocks_the_fold(tmp_path):
    path = _model_with(tmp_path, graph_output_extra="y")
    model, report = _optimize(path, ["fuse_preactivation_batchnorm"])
    assert model.op_counts()["MUL"] == 1
    mul, add = _pre_skips(report)
    assert "graph output" in mul["reason"] and add["reason"] == mul["reason"]
