"""remove_unnecessary_split: a SPLIT (or SPLIT_V) into one part goes (ONE's pass of that name).

    before:  axis, x [3,7,5] -> SPLIT(num_splits=1) -> y [3,7,5] -> readers
    after:   x -> readers            (y's readers read x; a model output y: x's producer writes it)

Exact: one part of a split is all of it. Guards: exactly one output, of x's shape and quantization;
a model output y needs x to have a producer and no other reader (then that producer writes y).
"""

from __future__ import annotations

from ..engine.identity import bypass, bypass_refusal
from ..engine.report import PassResult
from ..engine.reshapes import same_quantization
from ..ir.graph import Graph

KINDS = frozenset({"SPLIT", "SPLIT_V"})
DATA_INPUT = {"SPLIT": 1, "SPLIT_V": 0}  # SPLIT reads (axis, x), SPLIT_V (x, size_splits, axis)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        x = op.input(DATA_INPUT[op.kind])
        if len(op.outputs) != 1 or x is None:
            continue
        y = op.outputs[0]
        if x.signature != y.signature or not same_quantization(x, y):
            continue
        refusal = bypass_refusal(graph, op, x, y)
        if refusal:
            result.refuse_value(op, refusal)
            continue
        result.fold(op, [op], into=[], shape=list(y.signature))
        bypass(graph, op, x, y)
    return result
