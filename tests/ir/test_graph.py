"""The IR mutators: edges stay consistent, execution order follows inserts and removals, new names
are unique, constants are copy-on-write, cleanup drops what nothing needs."""

from __future__ import annotations

import numpy as np

from bnfold.io.formats import TFLITE
from bnfold.ir.graph import Graph, float_source
from bnfold.ir.model import Model


def chain(n: int) -> tuple[Graph, list]:
    """x -> RELU -> t1 -> RELU -> t2 ... -> tn (graph output)."""
    graph = Model(TFLITE).add_graph(Graph("g"))
    x = graph.add_tensor("x", "FLOAT32", [1, 4])
    graph.inputs = [x]
    ops, value = [], x
    for i in range(1, n + 1):
        out = graph.add_tensor(f"t{i}", "FLOAT32", [1, 4])
        ops.append(graph.add_op("RELU", [value], [out]))
        value = out
    graph.outputs = [value]
    return graph, ops


def test_ops_read_or_built_keep_their_position_and_new_ones_have_none():
    graph, ops = chain(3)
    assert [op.index for op in ops] == [0, 1, 2]
    added = graph.add_op("RELU", [ops[0].outputs[0]], [graph.add_tensor("y", "FLOAT32", [1, 4])], after=ops[0])
    assert added.index is None


def test_insert_after_lands_right_after_its_anchor_latest_first_and_nested():
    graph, (a, b, c) = chain(3)
    t = a.outputs[0]
    first = graph.add_op("TANH", [t], [graph.add_tensor("u", "FLOAT32", [1, 4])], after=a)
    second = graph.add_op("TANH", [t], [graph.add_tensor("v", "FLOAT32", [1, 4])], after=a)
    nested = graph.add_op("TANH", [first.outputs[0]], [graph.add_tensor("w", "FLOAT32", [1, 4])], after=first)
    assert graph.ops == [a, second, first, nested, b, c]


def test_insert_before_lands_right_before_its_anchor_in_insertion_order():
    graph, (a, b, c) = chain(3)
    t = a.inputs[0]
    first = graph.add_op("TANH", [t], [graph.add_tensor("u", "FLOAT32", [1, 4])], before=a)
    second = graph.add_op("TANH", [t], [graph.add_tensor("v", "FLOAT32", [1, 4])], before=a)
    after = graph.add_op("TANH", [t], [graph.add_tensor("w", "FLOAT32", [1, 4])], after=b)
    late = graph.add_op("TANH", [t], [graph.add_tensor("z", "FLOAT32", [1, 4])], before=c)
    assert graph.ops == [first, second, a, b, after, late, c]


def test_remove_op_unlinks_it_and_leaves_the_order():
    graph, (a, b, c) = chain(3)
    graph.remove_op(b)
    assert graph.ops == [a, c] and not graph.contains(b) and graph.contains(a)
    assert graph.consumers(a.outputs[0]) == [] and b.outputs[0].producer is None


def test_an_anchor_removed_after_an_insert_still_places_the_insert():
    graph, (a, b, c) = chain(3)
    new = graph.add_op("TANH", [a.inputs[0]], [graph.add_tensor("u", "FLOAT32", [1, 4])], after=b)
    graph.remove_op(b)
    assert graph.ops == [a, new, c]


def test_unique_names_count_per_base_and_free_names_of_removed_tensors():
    graph, ops = chain(2)
    assert graph.add_tensor("t1", "FLOAT32", [1]).name == "t1_1"
    assert graph.add_tensor("t1", "FLOAT32", [1]).name == "t1_2"
    assert graph.add_tensor("fresh", "FLOAT32", [1]).name == "fresh"
    graph.cleanup()  # the three unused tensors above go, and with them their names
    assert graph.add_tensor("fresh", "FLOAT32", [1]).name == "fresh"


def test_set_const_input_never_changes_a_buffer_someone_else_reads():
    graph, _ = chain(0)
    x = graph.inputs[0]
    w = graph.add_const("w", np.arange(8, dtype=np.float32).reshape(2, 4))
    y1, y2 = (graph.add_tensor(n, "FLOAT32", [1, 2]) for n in ("y1", "y2"))
    fc1 = graph.add_op("FULLY_CONNECTED", [x, w], [y1])
    fc2 = graph.add_op("FULLY_CONNECTED", [x, w], [y2])
    original = w.buffer
    graph.set_const_input(fc1, 1, np.ones(8), "w/scaled")
    assert fc2.inputs[1] is w and w.buffer is original and np.array_equal(w.data.reshape(-1), np.arange(8))
    assert fc1.inputs[1] is not w and fc1.inputs[1].shape == (2, 4) and np.all(fc1.inputs[1].data == 1)
    # the sole reader: same tensor, new buffer (the old one, a view of the input, is untouched)
    sole = fc1.inputs[1]
    before = sole.buffer
    graph.set_const_input(fc1, 1, np.full(8, 2.0), "unused")
    assert fc1.inputs[1] is sole and sole.buffer is not before and np.all(sole.data == 2)
    # a missing optional input is created
    graph.set_const_input(fc1, 2, np.zeros(2), "fc1/bias")
    assert fc1.inputs[2].name == "fc1/bias" and graph.consumers(fc1.inputs[2]) == [fc1]


def test_cleanup_removes_a_dead_chain_in_one_call_and_keeps_outputs_and_side_effects():
    graph, (a, b, c) = chain(3)
    dead_out = graph.add_tensor("dead", "FLOAT32", [1, 4])
    dead = graph.add_op("TANH", [a.outputs[0]], [dead_out])
    deader = graph.add_op("TANH", [dead_out], [graph.add_tensor("deader", "FLOAT32", [1, 4])])
    custom = graph.add_op(
        graph.model.opcode("CUSTOM", custom_code=b"state"), [a.outputs[0]], [graph.add_tensor("state", "FLOAT32", [1])]
    )
    graph.cleanup()
    assert graph.ops == [a, b, c, custom] and not graph.contains(dead) and not graph.contains(deader)
    assert "dead" not in {t.name for t in graph.tensors}


def test_replace_uses_only_rewires_the_named_readers():
    graph, (a, b, c) = chain(3)
    t = a.outputs[0]
    other = graph.add_op("TANH", [t], [graph.add_tensor("o", "FLOAT32", [1, 4])])
    graph.replace_uses(t, graph.inputs[0], only=[b])
    assert b.inputs[0] is graph.inputs[0] and other.inputs[0] is t
    assert graph.consumers(t) == [other] and not graph.has_single_use(t, b) and graph.has_single_use(t, other)


def test_many_edits_on_a_long_chain_keep_a_valid_order():
    graph, ops = chain(20_000)
    for op in ops[1::2]:  # drop every other RELU: reconnect its reader to its input
        reader = graph.consumers(op.outputs[0])
        graph.replace_uses(op.outputs[0], op.inputs[0])
        graph.remove_op(op)
        assert len(reader) <= 1
    order = graph.ops
    assert len(order) == 10_000 and order == ops[0::2]
    position = {id(op): i for i, op in enumerate(order)}
    assert all(position[id(op.inputs[0].producer)] < position[id(op)] for op in order[1:])


def float16_weights_graph(shared: bool):
    graph, _ = chain(0)
    x = graph.inputs[0]
    w16 = graph.add_const("w16", np.arange(8, dtype=np.float16).reshape(2, 4), "FLOAT16")
    w = graph.add_tensor("w", "FLOAT32", [2, 4])
    dequantize = graph.add_op("DEQUANTIZE", [w16], [w])
    fc = graph.add_op("FULLY_CONNECTED", [x, w], [graph.add_tensor("y", "FLOAT32", [1, 2])])
    if shared:
        graph.add_op("FULLY_CONNECTED", [x, w], [graph.add_tensor("z", "FLOAT32", [1, 2])])
    return graph, fc, dequantize, w16


def test_float16_weights_behind_a_dequantize_stay_float16():
    graph, fc, dequantize, w16 = float16_weights_graph(shared=False)
    assert float_source(fc.inputs[1]) is w16
    assert graph.set_const_input(fc, 1, np.full(8, 0.5, np.float16), "new") is True
    assert fc.inputs[1].producer is dequantize and w16.dtype == "FLOAT16" and np.all(w16.data == 0.5)


def test_shared_float16_weights_get_their_own_dequantize():
    graph, fc, dequantize, w16 = float16_weights_graph(shared=True)
    old = w16.buffer
    assert graph.set_const_input(fc, 1, np.full(8, 0.5, np.float16), "fc/weights") is True
    new = fc.inputs[1]
    assert new.producer is not dequantize and new.producer.kind == "DEQUANTIZE"
    assert float_source(new).dtype == "FLOAT16" and np.all(float_source(new).data == 0.5)
    assert w16.buffer is old and np.array_equal(w16.data.reshape(-1), np.arange(8))
    order = graph.ops
    assert order.index(new.producer) < order.index(fc)
