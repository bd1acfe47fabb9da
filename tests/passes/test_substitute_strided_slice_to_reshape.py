"""substitute_strided_slice_to_reshape: a STRIDED_SLICE that keeps every element and drops unit axes
(shrink_axis_mask) becomes a RESHAPE; one that drops an element stays."""

from __future__ import annotations

from bn_models import Net, assert_said, optimize_and_compare

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
    _, report = optimize_and_compare(recipe, [PASS], {"STRIDED_SLICE": 1, "RESHAPE": 0})
    assert_said(report, PASS, None)  # a slice dropping elements is no candidate


def test_shrinking_stays_where_the_reshape_would_share_a_needed_buffer_and_says_why():
    """As substitute_pack_to_reshape's case: LiteRT runs the MUL in place over a and the DIV in
    place over s; made a RESHAPE, s would share m's buffer, which the ADD still reads."""
    n = Net()
    n.input("x", [1, 7, 5])
    a = n.op("TANH", ["x"], "a", [1, 7, 5])
    m = n.op("MUL", [a, n.const("k", [1])], "m", [1, 7, 5])
    inputs = [m, n.ints("begin", [0, 0, 0]), n.ints("end", [1, 7, 5]), n.ints("strides", [1, 1, 1])]
    s = n.op("STRIDED_SLICE", inputs, "s", [7, 5], shrink_axis_mask=0b001)
    d = n.op("DIV", [s, n.const("divisor", [1], low=0.5, high=2.0)], "d", [7, 5])
    n.outputs = [n.op("TANH", [d], "y", [7, 5]), n.op("ADD", [m, n.const("shift", [5])], "z", [1, 7, 5])]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"STRIDED_SLICE": 1, "RESHAPE": 0})
    assert_said(report, PASS, "in place over a buffer another reader still needs")
