"""remove_redundant_quantize: a QUANTIZE to its input's own parameters goes; QUANTIZE -> QUANTIZE
writing what the first wrote becomes one QUANTIZE. Bit for bit in LiteRT. Two scales (ONE merges
them; LiteRT's results then differ by a step, shown here), two types (XNNPACK then rounds in
another kernel, shown here) or a zero point that moves the range stay with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold import api
from bnfold.recipe.chef import build
from bnfold.values import litert
from quant_models import QNet, optimize_quantized, quant_inputs, reasons

PASS = "remove_redundant_quantize"
SHAPE = [3, 4, 5]


def identity_net(dtype="INT8", zero=-7) -> QNet:
    """q (integer input) -> QUANTIZE to q's parameters -> q2 -> RELU -> y."""
    n = QNet()
    n.qinput("q", SHAPE, dtype, 0.125, zero)
    n.op("QUANTIZE", ["q"], n.q("q2", SHAPE, dtype, 0.125, zero), SHAPE)
    n.outputs = [n.op("RELU", ["q2"], n.q("y", SHAPE, dtype, 0.125, zero), SHAPE)]
    return n


@pytest.mark.parametrize("dtype,zero", [("INT8", -7), ("UINT8", 131), ("INT16", 0)])
def test_requantize_to_the_same_parameters_goes(dtype, zero):
    optimize_quantized(identity_net(dtype, zero).recipe(), [PASS], {"QUANTIZE": 0, "RELU": 1})


def chain_net(first, second, *, source=None) -> QNet:
    """x (float, or integer `source`) -> QUANTIZE to `first` -> a -> QUANTIZE to `second` -> b
    -> RELU -> y; each of first/second is (dtype, scale, zero point)."""
    n = QNet()
    if source is None:
        n.input("x", SHAPE)
    else:
        n.qinput("x", SHAPE, *source)
    n.op("QUANTIZE", ["x"], n.q("a", SHAPE, *first), SHAPE)
    n.op("QUANTIZE", ["a"], n.q("b", SHAPE, *second), SHAPE)
    n.outputs = [n.op("RELU", ["b"], n.q("y", SHAPE, *second), SHAPE)]
    return n


@pytest.mark.parametrize(
    "first,second,source",
    [
        (("INT8", 0.02, 5), ("INT8", 0.02, 5), None),  # the same twice, from floats
        (("UINT8", 0.02, 128), ("UINT8", 0.02, 128), None),
        (("INT16", 0.02, 0), ("INT16", 0.02, 0), None),
        (("INT8", 0.02, 0), ("INT8", 0.02, 0), ("INT8", 0.05, 2)),  # from integers
    ],
)
def test_a_chain_writing_what_the_first_wrote_becomes_one_quantize(first, second, source):
    optimize_quantized(chain_net(first, second, source=source).recipe(), [PASS], {"QUANTIZE": 1})


@pytest.mark.parametrize(
    "first,second,words",
    [
        (("INT16", 0.02, 0), ("INT8", 0.02, 0), "would round to INT8 where the first rounded to INT16"),
        (("UINT8", 0.02, 128), ("INT8", 0.02, 0), "another kernel"),
        (("INT8", 0.02, 0), ("INT16", 0.02, 0), "another kernel"),
        (("INT8", 0.02, 5), ("INT8", 0.02, 0), "clamps to [-133, 122]"),
        (("INT8", 0.03, 0), ("INT8", 0.02, 0), "round twice"),
    ],
)
def test_a_chain_that_could_change_integers_stays(first, second, words):
    _, _, report = optimize_quantized(chain_net(first, second).recipe(), [PASS], {"QUANTIZE": 2})
    assert any("QUANTIZE -> QUANTIZE kept" in r and words in r for r in reasons(report)), reasons(report)


def test_a_uint8_chain_of_two_types_rounds_otherwise_in_xnnpack():
    """Why two types are refused: seed 507 of the quantized fuzz. x uint8 (0.05, 54) -> uint8 (0.02,
    11) -> int8 (0.02, -117) merged into x -> int8 is bit-identical in the builtin kernels, but
    XNNPACK (LiteRT's default) converts uint8 -> int8 otherwise than uint8 -> uint8."""
    n = QNet()
    n.input("in", SHAPE)
    n.op("QUANTIZE", ["in"], n.q("x", SHAPE, "UINT8", 0.05, 54), SHAPE)
    n.op("QUANTIZE", ["x"], n.q("a", SHAPE, "UINT8", 0.02, 11), SHAPE)
    n.outputs = [n.op("QUANTIZE", ["a"], n.q("b", SHAPE, "INT8", 0.02, -117), SHAPE)]
    original, merged = build(n.recipe()), build(n.recipe())
    graph = merged.graphs[0]
    second = next(op for op in graph.ops if op.outputs[0].name == "b")
    graph.set_input(second, 0, graph.tensor("x"))
    api.apply_passes(merged, [])
    xs = [np.linspace(-3, 10, 60, dtype=np.float32).reshape(SHAPE)]
    assert np.array_equal(litert.run(original, xs)[0], litert.run(merged, xs)[0])  # builtin kernels
    default = [litert.run(m, xs, resolver="default")[0] for m in (original, merged)]
    assert not np.array_equal(*default)


def test_merging_two_scales_as_one_does_changes_integers_in_litert():
    """Why two scales are refused: ONE's merge (the second QUANTIZE reading x) is off by a step."""
    recipe = chain_net(("INT8", 0.03, 0), ("INT8", 0.02, 0)).recipe()
    original, merged = build(recipe), build(recipe)
    graph = merged.graphs[0]
    second = next(op for op in graph.ops if op.outputs[0].name == "b")
    graph.set_input(second, 0, graph.tensor("x"))
    api.apply_passes(merged, [])  # nothing but the cleanup of the first QUANTIZE
    differ = 0
    for seed in range(4):
        xs = quant_inputs(original, seed)
        differ += int(np.count_nonzero(litert.run(original, xs)[0] != litert.run(merged, xs)[0]))
    assert differ > 0


def test_a_requantize_to_other_parameters_is_not_an_identity():
    n = QNet()
    n.qinput("q", SHAPE, "INT8", 0.125, 0)
    n.op("QUANTIZE", ["q"], n.q("q2", SHAPE, "INT8", 0.25, 0), SHAPE)
    n.outputs = [n.op("RELU", ["q2"], n.q("y", SHAPE, "INT8", 0.25, 0), SHAPE)]
    _, _, report = optimize_quantized(n.recipe(), [PASS], {"QUANTIZE": 1})
    assert any("it requantizes" in r and "scale 0.25" in r for r in reasons(report)), reasons(report)
