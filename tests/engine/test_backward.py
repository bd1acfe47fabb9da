"""backward.py: the pure fold of an output-channel scale/shift, and the matching that finds it."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import ACTIVATION_ENDS_CHAIN, Net, conv2d, dwconv, fc, optimize_and_compare, positive
from bn_models import LAYERS as BUILDERS
from bnfold.engine.backward import chain_after, fold_backward, fold_output_affine, layer_refusal
from bnfold.engine.report import Refusal
from bnfold.ir.ops import LAYERS
from bnfold.reference import interpreter

RNG = np.random.default_rng(11)


def test_fold_output_affine_is_s_times_layer_plus_t_for_fc():
    w = RNG.normal(0, 1, (5, 7)).astype(np.float32)
    b = RNG.normal(0, 1, 5).astype(np.float32)
    s, t = RNG.uniform(-2, 2, 5), RNG.normal(0, 1, 5)
    x = RNG.normal(0, 1, (3, 7))
    new_w, new_b = fold_output_affine(w, b, s, t, LAYERS["FULLY_CONNECTED"].out_axis)
    new_w = np.asarray(new_w)  # the pending product, computed
    want = s * (x @ w.T.astype(np.float64) + b) + t
    np.testing.assert_allclose(x @ new_w.T.astype(np.float64) + new_b, want, rtol=1e-6, atol=1e-6)
    assert new_w.dtype == new_b.dtype == np.float32


@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_3D"])
def test_fold_output_affine_scales_only_the_output_axis_with_one_rounding(kind):
    spec = LAYERS[kind]
    shape = {"CONV_2D": (4, 3, 2, 5), "DEPTHWISE_CONV_2D": (1, 3, 2, 6), "CONV_3D": (2, 3, 2, 5, 4)}[kind]
    w = RNG.normal(0, 1, shape).astype(np.float32)
    c = shape[spec.out_axis]
    s, t = RNG.uniform(-2, 2, c), RNG.normal(0, 1, c)
    new_w, new_b = fold_output_affine(w, None, s, t, spec.out_axis)
    view = [1] * len(shape)
    view[spec.out_axis] = c
    assert np.array_equal(new_w, (w.astype(np.float64) * s.reshape(view)).astype(np.float32))
    assert np.array_equal(new_b, t.astype(np.float32))  # no bias: b = 0


def test_the_folded_conv_computes_the_chain():
    n, out = conv2d()
    y = n.bn(out, [1, 5, 7, 4], [4])
    original, model = n.model(), n.model()
    result = fold_backward(model.graphs[0], "fuse_batchnorm_with_conv")
    model.graphs[0].cleanup()
    assert result.changed and model.op_counts() == {"CONV_2D": 1}
    x = [RNG.normal(0, 2, (1, 5, 7, 3)).astype(np.float32)]
    np.testing.assert_allclose(interpreter.run(model, x)[0], interpreter.run(original, x)[0], rtol=1e-5, atol=1e-5)
    assert y == "bn_out" and model.graphs[0].outputs[0].name == "bn_out"


def test_chain_after_follows_layout_ops_to_the_channel_axis():
    n, out = conv2d()
    t = n.op("TRANSPOSE", [out, n.ints("perm", [0, 3, 1, 2])], "nchw", [1, 4, 5, 7])
    n.bn(t, [1, 4, 5, 7], [1, 4, 1, 1])
    graph = n.model().graphs[0]
    chain = chain_after(graph, graph.ops[0])
    assert chain.axis == 1 and [op.kind for op in chain.ops] == ["MUL", "ADD"] and len(chain.scale) == 4


def test_a_refusal_names_the_op_it_is_about():
    n, out = conv2d()
    t = n.op("RESHAPE", [out, n.ints("shape", [1, 35, 4])], "flat", [1, 35, 4])
    n.op("MUL", [t, n.const("c", [1, 35, 1])], "m", [1, 35, 4])
    graph = n.model().graphs[0]
    refusal = chain_after(graph, graph.ops[0])
    assert isinstance(refusal, Refusal) and refusal.at.kind == "MUL" and "varies along axis 1" in refusal.reason
    result = fold_backward(graph, "fuse_batchnorm_with_conv")
    assert not result.changed and result.skips[0]["at"]["kind"] == "MUL"


def test_layer_refusals():
    n, _ = dwconv(act="RELU")
    graph = n.model().graphs[0]
    assert "fused RELU" in layer_refusal(graph.ops[0], LAYERS["DEPTHWISE_CONV_2D"]).reason
    n, _ = fc()
    graph = n.model().graphs[0]
    assert layer_refusal(graph.ops[0], LAYERS["FULLY_CONNECTED"]) is None


def test_no_chain_no_report_line():
    n = Net()
    n.input("ifm", [1, 4])
    n.op("FULLY_CONNECTED", ["ifm", n.const("w", [3, 4]), ""], "y", [1, 3])
    result = fold_backward(n.model().graphs[0], "fuse_batchnorm_with_fc")
    assert not result.changed and result.skips == []


def test_float16_weights_are_folded_in_float64_and_rounded_once_to_float16():
    w = RNG.normal(0, 1, (4, 3, 2, 5)).astype(np.float16)
    b = RNG.normal(0, 1, 4).astype(np.float16)
    s, t = RNG.uniform(-2, 2, 4), RNG.normal(0, 1, 4)
    new_w, new_b = fold_output_affine(w, b, s, t, 0)
    assert new_w.dtype == new_b.dtype == np.float16
    assert np.array_equal(new_w, (w.astype(np.float64) * s.reshape(4, 1, 1, 1)).astype(np.float16))
    assert np.array_equal(new_b, (b.astype(np.float64) * s + t).astype(np.float16))


@pytest.mark.parametrize("layer", BUILDERS)
def test_an_activation_ends_the_chain(layer):
    """layer -> MUL(RELU) -> ADD: the MUL and its RELU fold into the layer, the ADD stays (exact)."""
    recipe = positive(BUILDERS[layer], ACTIVATION_ENDS_CHAIN)
    kind = recipe["operation"][0]["type"]
    model, report = optimize_and_compare(recipe, [LAYERS[kind].backward_pass], {kind: 1, "MUL": 0, "ADD": 1})
    [fold] = report.folds
    assert [op["kind"] for op in fold["removed"]] == ["MUL"] and fold["activation"] == "RELU"


def test_layers_without_a_chain_do_not_resort_the_graph_per_fold(monkeypatch):
    """A conv with a layout op and no chain after it, met after other folds changed the graph, is
    explained without re-sorting the whole graph each time (that made the pass quadratic in the
    layers: 62 sorts of TICO's DenseNet121)."""
    from bnfold.ir.graph import Graph

    n = Net()
    x = n.input("ifm", [1, 2, 2, 4])
    for i in range(20):
        w = n.const(f"w{i}", [4, 1, 1, 4])
        x = n.op(
            "CONV_2D", [x, w, n.const(f"b{i}", [4])], f"c{i}", [1, 2, 2, 4], padding="VALID", stride_w=1, stride_h=1
        )
        if i % 2 == 0:
            m = n.op("MUL", [x, n.const(f"s{i}", [4])], f"m{i}", [1, 2, 2, 4])
            x = n.op("ADD", [m, n.const(f"t{i}", [4])], f"a{i}", [1, 2, 2, 4])
        else:  # a layout op, then no chain: the explanation walks through it
            x = n.op("TRANSPOSE", [x, n.ints(f"p{i}", [0, 2, 1, 3])], f"p{i}_out", [1, 2, 2, 4])
    graph = n.model().graphs[0]
    sorts = []
    settle = Graph._settle_order
    monkeypatch.setattr(Graph, "_settle_order", lambda self: sorts.append(1) or settle(self))
    result = fold_backward(graph, "fuse_batchnorm_with_conv")
    assert len(result.folds) == 10 and len(sorts) <= 1, len(sorts)


def _fc_scaled(weights: list[float], scale: list[float], dtype: str) -> Net:
    """FC (2 outputs, 2 inputs; float16 weights behind a DEQUANTIZE) -> MUL(scale)."""
    n = Net()
    n.input("ifm", [3, 2])
    if dtype == "FLOAT16":
        n.op("DEQUANTIZE", [n.const("weights16", [2, 2], values=weights, dtype="FLOAT16")], "weights", [2, 2])
    else:
        n.const("weights", [2, 2], values=weights)
    n.op("FULLY_CONNECTED", ["ifm", "weights", n.const("bias", [2], values=[0.5, -0.5])], "fc", [3, 2])
    n.op("MUL", ["fc", n.const("scale", [2], values=scale)], "y", [3, 2])
    return n


@pytest.mark.parametrize("dtype, top", [("FLOAT32", 3.0e38), ("FLOAT16", 60000.0)])
@pytest.mark.parametrize(
    "scale, folds",
    [
        ((1.05, 1.0), True),  # the largest product stays below the dtype's largest value: proven by the bound
        ((1.0, 1000.0), True),  # the bound overflows (largest weight x largest scale), no product does
        ((1.2, 1.0), False),  # one product overflows: refused as before
    ],
)
def test_folds_near_the_largest_value_are_taken_exactly_when_every_product_is_finite(dtype, top, scale, folds):
    weights = [top, 1.0, 0.5, -1.0]
    graph = _fc_scaled(weights, list(scale), dtype).model().graphs[0]
    result = fold_backward(graph, "fuse_batchnorm_with_fc")
    assert result.changed == folds
    if not folds:
        assert (
            result.skips
            == [
                {"at": result.skips[0]["at"], "reason": "the folded weights or bias would not be finite", "layer": "fc"}
            ]
            and result.skips[0]["at"]["kind"] == "MUL"
        )
        return
    w = np.array(weights, np.float16 if dtype == "FLOAT16" else np.float32).reshape(2, 2)
    s = np.array(scale, np.float32).astype(np.float64)  # as the MUL constant holds it
    want = (w.astype(np.float64) * s.reshape(2, 1)).astype(w.dtype)
    fc = next(op for op in graph.ops if op.kind == "FULLY_CONNECTED")
    folded = fc.inputs[1].producer.inputs[0] if dtype == "FLOAT16" else fc.inputs[1]
    assert folded.data.dtype == w.dtype and folded.data.tobytes() == want.tobytes()
