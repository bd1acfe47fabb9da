"""substitute_strided_slice_to_reshape: a STRIDED_SLICE that keeps every element and drops unit axes
(shrink_axis_mask) becomes a RESHAPE; one that drops an element stays."""

from __future__ import annotations

from bn_models import Net, optimize_and_compare

PASS = "substitute_strided_slice_to_reshape"


def shrink_net(shape, begin, end, shrink, out_shape) -> Net:
    n = Net()
    n.input("x", shape)
    h = n.op("EXP", ["x"], "h", shape)
    inputs = [h, n.ints("begin", begin), n.ints("end", end), n.ints("strides", [1] * len(shape))]
    s = n.op("STRIDED_SLICE", inputs, "s", out_shape, shrink_axis_mask=shrink)
    n.outputs = [n.op("TANH", [s], "y", out_shape)]
    return n


def test_shrinking_unit_axes_becomes_a_reshape():
    recipe = shrink_net([1, 7, 1, 5], [0, 0, 0, 0], [1, 7, 1, 5], 0b0101, [7, 5]).recipe()
    model, _ = optimize_and_compare(recipe, [PASS], {"STRIDED_SLICE": 0, "RESHAPE": 1})
    reshape = next(op for op in model.graphs[0].ops if op.kind == "RESHAPE")
    assert reshape.inputs[0].name == "h" and reshape.outputs[0].name == "s" and reshape.outputs[0].shape == (7, 5)


def test_shrinking_an_axis_of_several_elements_stays():
    # takes row 0 of 3: elements are dropped
    recipe = shrink_net([3, 7, 5], [0, 0, 0], [1, 7, 5], 0b001, [7, 5]).recipe()
    optimize_and_compare(recipe, [PASS], {"STRIDED_SLICE": 1, "RESHAPE": 0})
