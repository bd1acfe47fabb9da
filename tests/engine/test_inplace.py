"""LiteRT's in-place buffer sharing (engine/reshapes.py): no rewrite lets an op run in place over
a buffer another reader still needs. Each case is a graph the original computes right in LiteRT as
deployed; the pass that would make the hazard refuses there, and does its work when the second
reader is not there. Values: the original with every tensor preserved vs the optimized model in
the builtin kernels and the default interpreter, both sharing buffers."""

from __future__ import annotations

import pytest

from bn_models import Net
from bnfold import api
from bnfold.io.reader import read_model
from layout_fuzzing import prepare, run_case

NCHW, NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _tail(n: Net, t: str, size: int) -> str:
    """t -> RESHAPE [1, size] -> DIV(c) -> SUB(c): LiteRT runs the DIV in place over t's buffer
    (the SUB keeps the DIV's output from being a graph output, which is never shared)."""
    r = n.op("RESHAPE", [t, n.ints("flat_shape", [1, size])], "flat", [1, size])
    d = n.op("DIV", [r, n.const("divisor", [size], low=0.5, high=2.0)], "divided", [1, size])
    return n.op("SUB", [d, n.const("offset", [size])], "tail", [1, size])


def fused_activation(second_reader: bool) -> Net:
    """x -> TANH -> ADD(k) -> RELU -> y -> tail; y -> ABS (the second reader)."""
    n = Net()
    n.input("x", [1, 4, 4, 3])
    a = n.op("ADD", [n.op("TANH", ["x"], "tanh", [1, 4, 4, 3]), n.const("k", [3])], "add", [1, 4, 4, 3])
    y = n.op("RELU", [a], "y", [1, 4, 4, 3])
    n.outputs = [_tail(n, y, 48)] + ([n.op("ABS", [y], "abs", [1, 4, 4, 3])] if second_reader else [])
    return n


def pulled_transpose(second_reader: bool) -> Net:
    """x -> TANH -> TRANSPOSE(NCHW) -> MUL(c) -> TRANSPOSE(NHWC) -> y -> tail; y -> ABS."""
    n = Net()
    n.input("x", [1, 4, 5, 3])
    t = n.op("TRANSPOSE", [n.op("TANH", ["x"], "tanh", [1, 4, 5, 3]), n.ints("p1", NCHW)], "t", [1, 3, 4, 5])
    m = n.op("MUL", [t, n.const("c", [5])], "m", [1, 3, 4, 5])
    y = n.op("TRANSPOSE", [m, n.ints("p2", NHWC)], "y", [1, 4, 5, 3])
    n.outputs = [_tail(n, y, 60)] + ([n.op("ABS", [y], "abs", [1, 4, 5, 3])] if second_reader else [])
    return n


def unit_transpose(second_reader: bool) -> Net:
    """x -> TANH -> MUL(c) -> m -> TRANSPOSE of unit axes -> tail; m -> ABS."""
    n = Net()
    n.input("x", [1, 6, 1, 5])
    m = n.op("MUL", [n.op("TANH", ["x"], "tanh", [1, 6, 1, 5]), n.const("c", [5])], "m", [1, 6, 1, 5])
    y = n.op("TRANSPOSE", [m, n.ints("p", [2, 1, 0, 3])], "y", [1, 6, 1, 5])
    n.outputs = [_tail(n, y, 30)] + ([n.op("ABS", [m], "abs", [1, 6, 1, 5])] if second_reader else [])
    return n


def identity_transpose(second_reader: bool) -> Net:
    """x -> TANH -> MUL(c) -> m -> TRANSPOSE(0,1,2,3) -> tail; m -> ABS."""
    n = Net()
    n.input("x", [1, 4, 5, 3])
    m = n.op("MUL", [n.op("TANH", ["x"], "tanh", [1, 4, 5, 3]), n.const("c", [3])], "m", [1, 4, 5, 3])
    y = n.op("TRANSPOSE", [m, n.ints("p", [0, 1, 2, 3])], "y", [1, 4, 5, 3])
    n.outputs = [_tail(n, y, 60)] + ([n.op("ABS", [m], "abs", [1, 4, 5, 3])] if second_reader else [])
    return n


CASES = {  # graph, passes, the op kind the pass removes when it may
    "fuse_activation_function": (fused_activation, "fuse_activation_function", "RELU"),
    "remove_redundant_transpose": (pulled_transpose, "remove_redundant_transpose", "TRANSPOSE"),
    "substitute_transpose_to_reshape": (unit_transpose, "substitute_transpose_to_reshape", "TRANSPOSE"),
    "remove_unnecessary_transpose": (identity_transpose, "remove_redundant_transpose", "TRANSPOSE"),
}


def _count(data: bytes, kind: str, tmp_path) -> int:
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    return read_model(str(path)).op_counts().get(kind, 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_where_litert_would_share_a_needed_buffer(name, tmp_path):
    graph, passes, kind = CASES[name]
    content, why = prepare(graph(second_reader=True).recipe())
    assert content is not None, why  # LiteRT computes the original right
    result = api.optimize(content, passes)
    assert _count(result.data, kind, tmp_path) == _count(content, kind, tmp_path)
    assert run_case(content, "default").kind == "ok"
    reasons = [s["reason"] for s in result.report["skips"] + result.report["transposes"]]
    assert any("in place" in r for r in reasons) or kind == "RELU"


@pytest.mark.parametrize("name", sorted(CASES))
def test_done_without_the_second_reader(name, tmp_path):
    graph, passes, kind = CASES[name]
    content, why = prepare(graph(second_reader=False).recipe())
    assert content is not None, why
    result = api.optimize(content, passes)
    assert _count(result.data, kind, tmp_path) < _count(content, kind, tmp_path)
    assert run_case(content, "default").kind == "ok"


def test_buffer_chain_follows_litert_planner():
    """litert_inplace_reshape: x -> RELU -> r (own buffer: RELU does not run in place) -> MUL -> m
    (r's buffer: one reader) -> RESHAPE -> s (r's buffer too): m, read by the GATHER as well,
    sits inside the chain, which is the hazard LiteRT does not see."""
    from pathlib import Path

    from bnfold.engine.reshapes import buffer_chain, references

    graph = read_model(str(Path(__file__).parent.parent / "data" / "layout_repros" / "litert_inplace_reshape.tflite"))
    graph = graph.graphs[0]
    reshape = next(op for op in graph.ops if op.kind == "RESHAPE")
    relu = next(op for op in graph.ops if op.kind == "RELU")
    chain = buffer_chain(graph, reshape.outputs[0])
    assert chain == [reshape.outputs[0], reshape.inputs[0], relu.outputs[0]]
    assert [references(graph, t) for t in chain] == [1, 2, 1]
    assert buffer_chain(graph, relu.inputs[0]) == [relu.inputs[0]]


def test_buffer_chain_is_linear_in_its_length():
    """A chain of 3,000 in-place MULs: one walk up and one down, not one walk per link."""
    import time

    from bnfold.engine.reshapes import buffer_chain

    n = Net()
    t = n.op("TANH", [n.input("x", [1, 8])], "t0", [1, 8])
    for i in range(3000):
        t = n.op("MUL", [t, n.const(f"c{i}", [8])], f"m{i}", [1, 8])
    n.outputs = [n.op("TANH", [t], "out", [1, 8])]
    graph = n.model().graphs[0]
    start = time.perf_counter()
    chain = buffer_chain(graph, graph.tensor("m2999"))
    assert len(chain) == 3001 and chain[-1].name == "t0"
    assert time.perf_counter() - start < 1.0


def input_chain(second_reader: bool) -> Net:
    """x -> ADD(k) -> a -> RESHAPE -> SOFTMAX -> RESHAPE; a -> DEPTHWISE_CONV_2D (the second
    reader; values-nchw_in-23924's shape). With x NHWC, the ADD would run in place over the new
    TRANSPOSE's output, a's buffer would be that chain's, and the SOFTMAX would overwrite a."""
    n = Net()
    n.input("x", [2, 5, 4, 3])
    a = n.op("ADD", ["x", n.const("k", [3])], "a", [2, 5, 4, 3], fused_activation_function="RELU6")
    r = n.op("RESHAPE", [a, n.ints("s", [2, -1])], "r", [2, 60])
    soft = n.op("SOFTMAX", [r], "soft", [2, 60], beta=1.0)
    n.outputs = [n.op("RESHAPE", [soft, n.ints("s2", [2, -1])], "out", [2, 60])]
    if second_reader:
        conv = [a, n.const("w", [1, 3, 3, 3]), n.const("b", [3])]
        kw = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}
        n.outputs.append(n.op("DEPTHWISE_CONV_2D", conv, "dw", [2, 5, 4, 3], **kw))
    return n


@pytest.mark.parametrize("second_reader", [True, False])
def test_nchw_input_kept_only_where_its_chain_would_hold_a_needed_tensor(second_reader):
    from bnfold.engine.reshapes import input_hazard

    content, why = prepare(input_chain(second_reader).recipe())
    assert content is not None, why
    graph = input_chain(second_reader).model().graphs[0]
    assert input_hazard(graph, graph.tensor("x")) == second_reader
    interface = api.optimize(content, convert_nchw_to_nhwc=True, nchw_to_nhwc_input_shape=True).report["interface"]
    assert [t["name"] for t in interface["inputs"]] == ([] if second_reader else ["x"])
    assert run_case(content, "nchw_in").kind == "ok"
