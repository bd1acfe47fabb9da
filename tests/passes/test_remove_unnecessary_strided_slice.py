"""remove_unnecessary_strided_slice: a STRIDED_SLICE that takes every element with stride 1 goes
(masks and clamped ends read as the runtime reads them); a stride, a cut or a reversal stays."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_unnecessary_strided_slice"
SHAPE = [3, 7, 5]


def strided_slice_net(begin, end, strides, out_shape, **masks) -> Net:
    """x -> EXP -> h -> STRIDED_SLICE -> s -> TANH -> y."""
    n = Net()
    n.input("x", SHAPE)
    h = n.op("EXP", ["x"], "h", SHAPE)
    inputs = [h, n.ints("begin", begin), n.ints("end", end), n.ints("strides", strides)]
    s = n.op("STRIDED_SLICE", inputs, "s", out_shape, **masks)
    n.outputs = [n.op("TANH", [s], "y", out_shape)]
    return n


@pytest.mark.parametrize(
    "begin, end, masks",
    [([0, 0, 0], [3, 7, 5], {}), ([2, 3, 1], [0, 0, 0], {"begin_mask": 7, "end_mask": 7}), ([0, 0, 0], [9, 70, 5], {})],
)
def test_strided_slice_of_everything_goes(begin, end, masks):
    recipe = strided_slice_net(begin, end, [1, 1, 1], SHAPE, **masks).recipe()
    optimize_and_compare(recipe, [PASS], {"STRIDED_SLICE": 0, "EXP": 1, "TANH": 1})


@pytest.mark.parametrize(
    "begin, end, strides, out",
    [([0, 0, 0], [3, 7, 5], [1, 2, 1], [3, 4, 5]), ([0, 1, 0], [3, 7, 5], [1, 1, 1], [3, 6, 5])],
)
def test_strided_slice_that_skips_or_cuts_stays(begin, end, strides, out):
    optimize_and_compare(strided_slice_net(begin, end, strides, out).recipe(), [PASS], {"STRIDED_SLICE": 1})


def test_reversal_of_a_unit_axis_free_tensor_stays():
    # same shape, every element, but in reverse order along axis 2: not the identity
    recipe = strided_slice_net([0, 0, -1], [3, 7, -6], [1, 1, -1], SHAPE).recipe()
    _, report = optimize_and_compare(recipe, [PASS], {"STRIDED_SLICE": 1})
    assert_said(report, PASS, None)  # no candidate


def test_strided_slice_of_everything_from_a_graph_input_into_a_graph_output_stays_and_says_why():
    n = Net()
    n.input("x", SHAPE)
    inputs = ["x", n.ints("begin", [0, 0, 0]), n.ints("end", SHAPE), n.ints("strides", [1, 1, 1])]
    n.outputs = [n.op("STRIDED_SLICE", inputs, "s", SHAPE)]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"STRIDED_SLICE": 1})
    assert_said(report, PASS, "'s' is a model output, and 'x' is a graph input, a constant or read elsewhere")
