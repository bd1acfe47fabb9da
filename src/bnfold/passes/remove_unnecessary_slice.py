"""remove_unnecessary_slice: a SLICE that keeps its whole input goes (ONE's pass of that name).

    before:  x [3,7,5] -> SLICE(begin [0,0,0], size [3,-1,5]) -> y [3,7,5] -> readers
    after:   x -> readers            (y's readers read x; a model output y: x's producer writes it)

Exact: a slice copies elements; one that begins at 0 and takes every element of every axis copies
them all in order, so it is the identity. Whether it does is read by the value check's SLICE kernel
(engine/identity.py), size -1 and all. Guards: constant begin and size, static shapes, the same
shape and quantization on both sides; a model output y needs x to have a producer and no other
reader (then that producer writes y).
"""

from __future__ import annotations

from ..engine.identity import bypass, bypass_refusal, keeps_every_element_in_order
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"SLICE"})


def run(graph: Graph) -> PassResult:
    return remove_identities(graph, KINDS)


def remove_identities(graph: Graph, kinds: frozenset[str]) -> PassResult:
    """Remove every op of `kinds` whose one output is its input 0, element for element and shape."""
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in kinds]:
        x, y = op.input(0), op.outputs[0]
        if len(op.outputs) != 1 or x is None or x.signature != y.signature:
            continue
        if not keeps_every_element_in_order(graph, op):
            continue
        refusal = bypass_refusal(graph, op, x, y)
        if refusal:
            result.refuse_value(op, refusal)
            continue
        result.fold(op, [op], into=[], shape=list(y.signature))
        bypass(graph, op, x, y)
    return result
