"""remove_redundant_reshape: RESHAPE -> RESHAPE becomes one RESHAPE of the first one's input; the
first stays when something else reads its output."""

from __future__ import annotations

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_redundant_reshape"


def two_reshapes(middle, last, *, middle_also_read=False) -> Net:
    """x [4,6] -> ADD -> h -> RESHAPE(middle) -> t -> RESHAPE(last) -> y (and t -> RELU -> z)."""
    n = Net()
    n.input("x", [4, 6])
    h = n.op("ADD", ["x", n.const("c", [6])], "h", [4, 6])
    t = n.op("RESHAPE", [h, n.ints("middle", middle)], "t", middle, new_shape=middle)
    n.op("RESHAPE", [t, n.ints("last", last)], "y", [d if d > 0 else 12 for d in last], new_shape=last)
    n.outputs = ["y"]
    if middle_also_read:
        n.outputs.append(n.op("RELU", [t], "z", middle))
    return n


def test_two_reshapes_become_one():
    model, report = optimize_and_compare(two_reshapes([2, 12], [1, 2, 3, 4]).recipe(), [PASS], {"RESHAPE": 1})
    (reshape,) = [op for op in model.graphs[0].ops if op.kind == "RESHAPE"]
    assert reshape.inputs[0].name == "h" and reshape.outputs[0].name == "y"
    assert len(report.folds) == 1


def test_a_minus_one_in_the_second_shape_is_inferred_from_the_same_size():
    optimize_and_compare(two_reshapes([24], [2, -1]).recipe(), [PASS], {"RESHAPE": 1})


def test_first_reshape_stays_for_its_other_reader():
    model, report = optimize_and_compare(
        two_reshapes([2, 12], [1, 2, 3, 4], middle_also_read=True).recipe(), [PASS], {"RESHAPE": 2, "RELU": 1}
    )
    last = next(op for op in model.graphs[0].ops if op.kind == "RESHAPE" and op.outputs[0].name == "y")
    assert last.inputs[0].name == "h"
    assert report.folds[0]["removed"] == []


def test_reshape_there_and_back_is_gone_with_the_default_set():
    # merged into one RESHAPE [4,6] -> [4,6], which remove_unnecessary_reshape then removes
    optimize_and_compare(two_reshapes([2, 12], [4, 6]).recipe(), None, {"RESHAPE": 0, "ADD": 1})


def test_a_single_reshape_stays():
    n = Net()
    n.input("x", [4, 6])
    n.outputs = [n.op("RESHAPE", ["x", n.ints("s", [24])], "y", [24], new_shape=[24])]
    optimize_and_compare(n.recipe(), [PASS], {"RESHAPE": 1})


def test_reshapes_into_another_quantization_stay_and_say_why():
    """int8 x -> RESHAPE -> t (another scale) -> RESHAPE -> y: one RESHAPE would read x's bytes with y's scale."""
    n = Net()
    n.input("x", [4, 6])
    n.operands[-1].update(dtype="INT8", quant={"scale": [0.1], "zero_point": [0]})
    t = n.op("RESHAPE", ["x", n.ints("middle", [24])], "t", [24], new_shape=[24])
    n.operands[-1].update(dtype="INT8", quant={"scale": [0.2], "zero_point": [0]})
    n.outputs = [n.op("RESHAPE", [t, n.ints("last", [2, 12])], "y", [2, 12], new_shape=[2, 12])]
    n.operands[-1].update(dtype="INT8", quant={"scale": [0.2], "zero_point": [0]})
    _, report = optimize_and_compare(n.recipe(), [PASS], {"RESHAPE": 2})
    assert_said(report, PASS, "'x', 't' and 'y' are not read with one quantization")
