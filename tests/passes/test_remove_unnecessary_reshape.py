"""remove_unnecessary_reshape: a RESHAPE to its own input's shape goes; a graph output keeps its
name (the producer writes it), and a RESHAPE that changes the shape stays."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, build, optimize_and_compare
from bnfold import api
from bnfold.io.formats import CIRCLE

PASS = "remove_unnecessary_reshape"
SHAPE = [3, 7, 5]


def reshape_net(new_shape, *, then_relu=True, on_input=False) -> Net:
    """x -> ADD(c) -> h -> RESHAPE(new_shape) -> t [-> RELU -> y]."""
    n = Net()
    n.input("x", SHAPE)
    h = "x" if on_input else n.op("ADD", ["x", n.const("c", [5])], "h", SHAPE)
    t = n.op("RESHAPE", [h, n.ints("new_shape", new_shape)], "t", new_shape, new_shape=new_shape)
    n.outputs = [n.op("RELU", [t], "y", new_shape) if then_relu else t]
    return n


def test_reshape_to_the_same_shape_goes():
    model, report = optimize_and_compare(reshape_net(SHAPE).recipe(), [PASS], {"RESHAPE": 0, "RELU": 1, "ADD": 1})
    assert len(report.folds) == 1


def test_graph_output_keeps_its_name():
    model, _ = optimize_and_compare(reshape_net(SHAPE, then_relu=False).recipe(), [PASS], {"RESHAPE": 0, "ADD": 1})
    graph = model.graphs[0]
    assert [t.name for t in graph.outputs] == ["t"] and graph.outputs[0].producer.kind == "ADD"


def test_reshape_from_graph_input_to_graph_output_stays():
    # both names are seen from outside: there is no op to write the output instead
    recipe = reshape_net(SHAPE, then_relu=False, on_input=True).recipe()
    _, report = optimize_and_compare(recipe, [PASS], {"RESHAPE": 1})
    assert_said(report, PASS, "'t' is a model output, and 'x' is a graph input, a constant or read elsewhere")


@pytest.mark.parametrize("new_shape", [[3, 35], [7, 3, 5], [1, 3, 7, 5]])
def test_reshape_that_changes_the_shape_stays(new_shape):
    _, report = optimize_and_compare(reshape_net(new_shape).recipe(), [PASS], {"RESHAPE": 1})
    assert_said(report, PASS, None)  # no candidate


def flatten_net(x_shape, *, units=4, keep_num_dims=False, other_reader=False, flat_is_output=False) -> Net:
    """x -> ADD(c) -> h -> RESHAPE([N, K]) -> flat -> FULLY_CONNECTED(W [units, K]) -> y
    [and flat -> RELU -> r, or flat a graph output too]."""
    n = Net()
    n.input("x", x_shape)
    h = n.op("ADD", ["x", n.const("c", [x_shape[-1]])], "h", x_shape)
    k = int(np.prod(x_shape[1:]))
    flat = n.op(
        "RESHAPE", [h, n.ints("new_shape", [x_shape[0], k])], "flat", [x_shape[0], k], new_shape=[x_shape[0], k]
    )
    fc_shape = [x_shape[0], units]
    n.outputs = [
        n.op(
            "FULLY_CONNECTED",
            [flat, n.const("w", [units, k]), n.const("b", [units])],
            "y",
            fc_shape,
            keep_num_dims=keep_num_dims,
        )
    ]
    if other_reader:
        n.outputs.append(n.op("RELU", [flat], "r", [x_shape[0], k]))
    if flat_is_output:
        n.outputs.append(flat)
    return n


@pytest.mark.parametrize("keep_num_dims", [False, True])
@pytest.mark.parametrize("x_shape", [[2, 1, 1, 6], [2, 3, 1, 2], [3, 5, 2]])
def test_flatten_only_fully_connected_reads_goes(x_shape, keep_num_dims):
    # FC reads any rank as the [-1, K] matrix: the RESHAPE to [N, K] says it twice; keep_num_dims
    # (no difference on the rank-2 input) is cleared, else the output would become [..., 4]
    model, report = optimize_and_compare(
        flatten_net(x_shape, keep_num_dims=keep_num_dims).recipe(), [PASS], {"RESHAPE": 0, "FULLY_CONNECTED": 1}
    )
    fc = next(op for op in model.graphs[0].ops if op.kind == "FULLY_CONNECTED")
    assert fc.inputs[0].name == "h" and fc.outputs[0].shape == (x_shape[0], 4) and not fc.options.keepNumDims
    assert [f["flattened_by"] for f in report.folds] == [["y"]]


def test_flatten_into_a_fully_connected_without_options_goes():
    """An FC whose file holds no options (keep_num_dims off, the runtime's default) was an
    AttributeError, exit 3, when the flatten before it went; there is nothing to clear."""
    n = Net()
    x = n.input("x", [2, 3, 4])
    flat = n.op("RESHAPE", [x, n.ints("shape", [2, 12])], "flat", [2, 12])
    n.tensor("y", [2, 5])
    fc = {"type": "FULLY_CONNECTED", "inputs": [flat, n.const("w", [5, 12]), n.const("b", [5])], "outputs": ["y"]}
    n.operations.append({**fc, "options_type": None})
    n.outputs.append("y")
    model, report = optimize_and_compare(n.recipe(), [PASS], {"RESHAPE": 0, "FULLY_CONNECTED": 1})
    fc_op = next(op for op in model.graphs[0].ops if op.kind == "FULLY_CONNECTED")
    assert fc_op.inputs[0].name == "x" and fc_op.options is None
    assert [f["flattened_by"] for f in report.folds] == [["y"]]


@pytest.mark.parametrize("case", [dict(other_reader=True), dict(flat_is_output=True)])
def test_flatten_that_something_else_sees_stays(case):
    # a RELU reads [N, K]; the outside sees flat
    _, report = optimize_and_compare(flatten_net([2, 3, 1, 2], **case).recipe(), [PASS], {"RESHAPE": 1})
    assert_said(report, PASS, "'flat' is read by other ops than FULLY_CONNECTED layers (or is a model output)")


# ---- the RESHAPEs merging a BATCH_MATMUL's batch axes (TICO's attention) ----------------------


def batch_merged_matmul(*, b_batch=(1, 3), after=(1, 3, 5, 6), b_read_elsewhere=False) -> Net:
    """a [1,3,5,4], b [*b_batch,4,6] -> RESHAPE to rank 3 -> BATCH_MATMUL -> [3,5,6] -> RESHAPE(after) -> y."""
    n = Net(seed=23)
    a = n.input("a", [1, 3, 5, 4])
    b = n.input("b", [*b_batch, 4, 6])
    a3 = n.op("RESHAPE", [a, n.ints("a3_shape", [3, 5, 4])], "a3", [3, 5, 4], new_shape=[3, 5, 4])
    b_shape = [int(np.prod(b_batch)), 4, 6]
    b3 = n.op("RESHAPE", [b, n.ints("b3_shape", b_shape)], "b3", b_shape, new_shape=b_shape)
    o = n.op("BATCH_MATMUL", [a3, b3], "o", [3, 5, b_shape[-1]])
    y = n.op("RESHAPE", [o, n.ints("y_shape", list(after))], "y", list(after), new_shape=list(after))
    n.outputs = [y] + ([n.op("RELU", [b3], "b3_relu", b_shape)] if b_read_elsewhere else [])
    return n


def test_the_batch_reshapes_around_batch_matmul_go():
    model, report = optimize_and_compare(batch_merged_matmul().recipe(), [PASS], {"RESHAPE": 0, "BATCH_MATMUL": 1})
    (bmm,) = model.graphs[0].ops
    assert [t.name for t in bmm.inputs] == ["a", "b"] and bmm.outputs[0].name == "y"


def test_an_operand_reshape_read_elsewhere_stays_for_its_other_reader():
    optimize_and_compare(batch_merged_matmul(b_read_elsewhere=True).recipe(), [PASS], {"RESHAPE": 1, "RELU": 1})


def test_an_operand_merging_other_batch_axes_of_the_same_size_is_made_to_keep_the_products():
    """b [3,1,4,6] -> [3,4,6]: its RESHAPE is made to write [1,3,4,6] (the same elements in order)."""
    model, _ = optimize_and_compare(batch_merged_matmul(b_batch=(3, 1)).recipe(), [PASS], {"RESHAPE": 1})
    (reshape,) = [op for op in model.graphs[0].ops if op.kind == "RESHAPE"]
    assert reshape.outputs[0].shape == (1, 3, 4, 6)


def test_a_product_split_otherwise_than_its_batch_stays():
    optimize_and_compare(batch_merged_matmul(after=(3, 5, 2, 3)).recipe(), [PASS], {"RESHAPE": 3, "BATCH_MATMUL": 1})


def test_the_batch_reshapes_go_in_onert_too():
    from decoder_models import CIRCLE, assert_equal_in_runtime, optimized

    original, model, _ = optimized(batch_merged_matmul(), [PASS], fmt=CIRCLE)
    assert model.op_counts() == {"BATCH_MATMUL": 1}
    assert_equal_in_runtime(original, model)


def test_a_repeated_key_reshape_is_made_to_keep_the_batch_axes():
    """GQA: v [1,2,1,4,6] -> BROADCAST_TO [1,2,2,4,6] -> RESHAPE [4,4,6] beside p [1,4,5,4] -> RESHAPE [4,5,4]:
    the product keeps [1,4] batch axes; the key RESHAPE writes [1,4,4,6] instead of [4,4,6]."""
    n = Net(seed=24)
    p = n.input("p", [1, 4, 5, 4])
    v = n.input("v", [1, 2, 1, 4, 6])
    rep = n.op("BROADCAST_TO", [v, n.ints("rep_shape", [1, 2, 2, 4, 6])], "rep", [1, 2, 2, 4, 6], version=2)
    p3 = n.op("RESHAPE", [p, n.ints("p3_shape", [4, 5, 4])], "p3", [4, 5, 4], new_shape=[4, 5, 4])
    v3 = n.op("RESHAPE", [rep, n.ints("v3_shape", [4, 4, 6])], "v3", [4, 4, 6], new_shape=[4, 4, 6])
    o = n.op("BATCH_MATMUL", [p3, v3], "o", [4, 5, 6])
    n.outputs = [n.op("RESHAPE", [o, n.ints("y_shape", [1, 4, 5, 6])], "y", [1, 4, 5, 6], new_shape=[1, 4, 5, 6])]
    model, _ = optimize_and_compare(n.recipe(), [PASS], {"RESHAPE": 1, "BATCH_MATMUL": 1, "BROADCAST_TO": 1})
    (reshape,) = [op for op in model.graphs[0].ops if op.kind == "RESHAPE"]
    assert reshape.outputs[0].shape == (1, 4, 4, 6)


def row_net() -> Net:
    """x [5] -> ADD(c) -> h -> RESHAPE([1, 5]) -> row -> FULLY_CONNECTED(W [3, 5]) -> y [1, 3]."""
    n = Net()
    n.input("x", [5])
    h = n.op("ADD", ["x", n.const("c", [5])], "h", [5])
    row = n.op("RESHAPE", [h, n.ints("new_shape", [1, 5])], "row", [1, 5], new_shape=[1, 5])
    n.outputs = [n.op("FULLY_CONNECTED", [row, n.const("w", [3, 5]), n.const("b", [3])], "y", [1, 3])]
    return n


def test_a_row_made_of_a_rank_1_tensor_goes_where_the_target_runs_the_layer_on_it():
    """LiteRT's FULLY_CONNECTED reads a rank-1 input as one row, onert 0.1.0 refuses to prepare it
    ("ShapeValidator failed"; the O1 fuzzer's seed 143739): for onert the RESHAPE stays, said."""
    optimize_and_compare(row_net().recipe(), [PASS], {"RESHAPE": 0, "FULLY_CONNECTED": 1, "ADD": 1})
    model = build(row_net().recipe(), CIRCLE)
    report = api.apply_passes(model, [PASS], target="onert")
    assert not report.folds and model.op_counts()["RESHAPE"] == 1
    assert report.unsupported[0]["reason"] == "onert does not run FULLY_CONNECTED (input rank 1)"
