"""remove_unnecessary_cast: a CAST to the type its input already has goes (ONE's pass of that name).

    before:  x (FLOAT32) -> CAST -> y (FLOAT32) -> readers
    after:   x -> readers            (a model output y: x's producer writes it)

Exact: a cast of a value to its own type is the value. Guards (ONE's: input and output types
equal); also the same shape and quantization on both sides, and a model output y needs x to have a
producer and no other reader (engine/identity.py).
"""

from __future__ import annotations

from ..engine.identity import bypass, bypass_refusal
from ..engine.report import PassResult
from ..engine.reshapes import same_quantization
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "CAST"]:
        x, y = op.input(0), op.outputs[0]
        if x is None or x.dtype != y.dtype or x.signature != y.signature or not same_quantization(x, y):
            continue
        why = bypass_refusal(graph, op, x, y)
        if why is not None:
            result.refuse_value(op, why)
            continue
        result.fold(op, [op], into=[], dtype=y.dtype)
        bypass(graph, op, x, y)
    return result
