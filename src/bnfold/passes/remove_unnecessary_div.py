"""remove_unnecessary_div: a DIV by a constant one goes (ONE's pass of that name, #13626).

    before:  x [2,6,8] -> DIV(x, ones [8] or [1] or [2,6,8]) -> y [2,6,8] -> readers
    after:   x -> readers            (y's readers read x; a model output y: x's producer writes it)

Exact: x / 1 = x for every float (NaN, ±inf and -0.0 included). Only the divisor counts (1 / x is
not x) and only a constant exactly 1.0 in every element (ONE's |c - 1| <= FLT_MIN is the same
test in float32). Guards as remove_unnecessary_mul's: no fused activation, no broadcast growing x,
one type and quantization and not quantized, a model output y only where x's producer can write it;
a DIV by ones refused for one of these says so in the report's `not_folded`.
"""

from __future__ import annotations

from ..engine.identity import bypass, neutral_constant, neutral_operand_refusal
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "DIV" and len(op.inputs) == 2]:
        if op.inputs[0] is None or not neutral_constant(op, 0, 1.0):
            continue
        x, y = op.inputs[0], op.outputs[0]
        refusal = neutral_operand_refusal(graph, op, 0)
        if refusal:
            result.refuse_value(op, f"a DIV by ones stays: {refusal}")
            continue
        result.fold(op, [op], into=[], shape=list(y.signature))
        bypass(graph, op, x, y)
    return result
