"""remove_unnecessary_add: an ADD of a constant zero goes (ONE's pass of that name).

    before:  x [3,7,5] -> ADD(zeros [5] or [1] or [3,7,5]) -> y [3,7,5] -> readers
    after:   x -> readers            (y's readers read x; a model output y: x's producer writes it)

Exact: x + 0 = x for every float (a -0.0 becomes +0.0, the same number) and every integer. Guards:
the zero is a constant of every element 0 whose broadcast does not grow x (y has x's shape), no
fused activation, float or unquantized types on both sides with the same quantization; a model
output y needs x to have a producer and no other reader (then that producer writes y).
"""

from __future__ import annotations

import numpy as np

from ..engine.identity import bypass, bypass_refusal
from ..engine.report import PassResult
from ..engine.reshapes import same_quantization
from ..ir.graph import Graph

KINDS = frozenset({"ADD"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        if len(op.inputs) != 2 or op.fused_activation != "NONE":
            continue
        y = op.outputs[0]
        for data, zero in ((0, 1), (1, 0)):
            x, c = op.inputs[data], op.inputs[zero]
            if x is None or c is None or x is c or not c.is_const or c.is_quantized or x.is_quantized:
                continue
            if x.signature != y.signature or x.dtype != y.dtype or not same_quantization(x, y):
                continue
            values = c.data
            if values is None or np.any(values != 0) or len(c.shape) > len(x.shape):
                continue
            refusal = bypass_refusal(graph, op, x, y)
            if refusal:
                result.refuse_value(op, refusal)
                break
            result.fold(op, [op], into=[], shape=list(y.signature))
            bypass(graph, op, x, y)
            break
    return result
