"""forward_reshape_to_unaryop: a RESHAPE before NEG/ABS/LOGISTIC or a MUL/DIV by a scalar moves
after it (the op's output keeps its name), so RESHAPE chains meet; a RESHAPE read elsewhere, or a
MUL by a vector, stays where it is."""

from __future__ import annotations

import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "forward_reshape_to_unaryop"


def reshape_then(kind: str, *, scalar_first=False, constant_shape=(1,), other_reader=False) -> Net:
    """x [3,28] -> EXP -> h -> RESHAPE([3,4,7]) -> r -> kind -> u -> TANH -> y [3,4,7]."""
    n = Net()
    n.input("x", [3, 28])
    h = n.op("EXP", ["x"], "h", [3, 28])
    r = n.op("RESHAPE", [h, n.ints("shape", [3, 4, 7])], "r", [3, 4, 7], new_shape=[3, 4, 7])
    if kind in ("MUL", "DIV"):
        c = n.const("c", list(constant_shape), low=0.5, high=2.0)
        u = n.op(kind, [c, r] if scalar_first else [r, c], "u", [3, 4, 7])
    else:
        u = n.op(kind, [r], "u", [3, 4, 7])
    n.outputs = [n.op("TANH", [u], "y", [3, 4, 7])]
    if other_reader:
        n.outputs.append(n.op("RELU", [r], "z", [3, 4, 7]))
    return n


@pytest.mark.parametrize(
    "kind, scalar_first",
    [("NEG", False), ("ABS", False), ("LOGISTIC", False), ("MUL", True), ("DIV", False), ("DIV", True)],
)
def test_reshape_moves_after_the_op(kind, scalar_first):
    model, _ = optimize_and_compare(
        reshape_then(kind, scalar_first=scalar_first).recipe(), [PASS], {"RESHAPE": 1, kind: 1}
    )
    graph = model.graphs[0]
    op = next(op for op in graph.ops if op.kind == kind)
    assert "h" in [t.name for t in op.inputs] and graph.tensor("u").producer.kind == "RESHAPE"


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(kind="NEG", other_reader=True), "'r' is read by more than the NEG (or is a model output)"),
        (dict(kind="MUL", constant_shape=(7,)), None),  # a MUL by a vector: no candidate
    ],
)
def test_reshape_read_elsewhere_or_a_vector_constant_stays(case, reason):
    model, report = optimize_and_compare(reshape_then(**case).recipe(), [PASS], {"RESHAPE": 1})
    assert report.folds == [] and model.graphs[0].tensor("u").producer.kind == case["kind"]
    assert_said(report, PASS, reason)


def mean_net(x_shape, y_shape, axis, *, keep_dims=True) -> Net:
    """x -> EXP -> h -> RESHAPE(y_shape) -> r -> MEAN(axis) -> u -> TANH -> y."""
    n = Net()
    n.input("x", x_shape)
    h = n.op("EXP", ["x"], "h", x_shape)
    r = n.op("RESHAPE", [h, n.ints("shape", y_shape)], "r", y_shape, new_shape=y_shape)
    out = [1 if i == axis % len(y_shape) else d for i, d in enumerate(y_shape)] if keep_dims else None
    if not keep_dims:
        out = [d for i, d in enumerate(y_shape) if i != axis % len(y_shape)]
    u = n.op("MEAN", [r, n.ints("axis", [axis])], "u", out, keep_dims=keep_dims)
    n.outputs = [n.op("TANH", [u], "y", out)]
    return n


@pytest.mark.parametrize("axis", [1, -3])
def test_reshape_moves_after_a_mean_over_an_axis_it_keeps(axis):
    model, _ = optimize_and_compare(
        mean_net([2, 6, 4, 5], [2, 6, 10, 2], axis).recipe(), [PASS], {"RESHAPE": 1, "MEAN": 1}
    )
    mean = next(op for op in model.graphs[0].ops if op.kind == "MEAN")
    assert mean.inputs[0].name == "h" and mean.outputs[0].shape == (2, 1, 4, 5)
    assert model.graphs[0].tensor("u").producer.kind == "RESHAPE"


@pytest.mark.parametrize(
    "x_shape, y_shape, axis, mean_shape",
    [
        ([3, 7, 5], [1, 21, 5], -1, (3, 7, 1)),  # ONE's Net_Reshape_Mean_000: the dims from the axis on kept
        ([3, 7, 5], [21, 5], -1, (3, 7, 1)),  # the rank changes
        ([4, 6, 5], [2, 2, 6, 5], -2, (4, 1, 5)),
    ],
)
def test_reshape_moves_after_a_mean_over_an_axis_of_the_same_length_and_stride(x_shape, y_shape, axis, mean_shape):
    model, _ = optimize_and_compare(mean_net(x_shape, y_shape, axis).recipe(), [PASS], {"RESHAPE": 1, "MEAN": 1})
    mean = next(op for op in model.graphs[0].ops if op.kind == "MEAN")
    assert mean.inputs[0].name == "h" and mean.outputs[0].shape == mean_shape
    assert model.graphs[0].tensor("u").producer.kind == "RESHAPE"


@pytest.mark.parametrize(
    "x_shape, y_shape, axis, keep",
    [
        ([2, 6, 4, 5], [2, 6, 10, 2], 2, True),
        ([12, 4, 5], [2, 6, 20], 1, True),
        ([5, 3, 5], [3, 5, 5], 1, True),  # a length-5 axis in x, but none with stride 5
        ([3, 7, 5], [21, 5], 1, True),  # x's axis 2 reads the same elements, but the constant 1 names axis 1 of x
        ([2, 6, 4, 5], [2, 6, 10, 2], 1, False),
    ],
)
def test_reshape_before_a_mean_over_a_reshaped_axis_stays(x_shape, y_shape, axis, keep):
    model, report = optimize_and_compare(
        mean_net(x_shape, y_shape, axis, keep_dims=keep).recipe(), [PASS], {"RESHAPE": 1, "MEAN": 1}
    )
    assert report.folds == [] and model.graphs[0].tensor("u").producer.kind == "MEAN"
    assert_said(report, PASS, "the MEAN does not reduce an axis the RESHAPE keeps (keep_dims, one constant axis)")
