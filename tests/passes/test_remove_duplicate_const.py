"""remove_duplicate_const: constants of equal bytes, type, shape and quantization become one; 0.0
and -0.0, other shapes or types, and a constant that is a model output stay apart."""

from __future__ import annotations

from bn_models import Net, assert_said, optimize_and_compare

PASS = "remove_duplicate_const"
SHAPE = [4, 3]


def two_consts(a, b, *, b_shape=(3,), b_dtype="FLOAT32") -> Net:
    n = Net()
    n.input("x", SHAPE)
    c1 = n.const("c1", [3], values=a)
    c2 = n.const("c2", list(b_shape), values=b, dtype=b_dtype)
    y1 = n.op("ADD", ["x", c1], "y1", SHAPE, fused_activation_function="NONE")
    if b_dtype == "FLOAT32":
        n.outputs = [y1, n.op("MUL", ["x", c2], "y2", SHAPE, fused_activation_function="NONE")]
    else:
        n.outputs = [y1, n.op("CAST", [c2], "y2", list(b_shape))]
    return n


def test_equal_constants_become_one():
    model, report = optimize_and_compare(two_consts([1.0, -2.0, 0.5], [1.0, -2.0, 0.5]).recipe(), [PASS], {"MUL": 1})
    graph = model.graphs[0]
    assert [t.name for t in graph.tensors if t.is_const] == ["c1"]
    assert report.folds[0]["duplicate"] == "c2" and report.folds[0]["constant"] == "c1"


def test_minus_zero_other_shapes_and_types_stay_apart():
    cases = [
        two_consts([0.0, 1.0, 2.0], [-0.0, 1.0, 2.0]),
        two_consts([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], b_shape=(1, 3)),
        two_consts([1.0, 1.0, 1.0], [1065353216] * 3, b_dtype="INT32"),  # the same bytes, another type
    ]
    for net in cases:
        model, report = optimize_and_compare(net.recipe(), [PASS], {"ADD": 1})
        assert report.folds == [] and sum(t.is_const for t in model.graphs[0].tensors) == 2
        assert_said(report, PASS, None)  # two constants that differ are no duplicate: nothing to say
