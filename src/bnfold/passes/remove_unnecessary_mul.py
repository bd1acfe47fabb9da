"""remove_unnecessary_mul: a MUL by a constant one goes (ONE's pass of that name, #13626).

    before:  x [2,6,8] -> MUL(ones [8] or [1] or [2,6,8], either side) -> y [2,6,8] -> readers
    after:   x -> readers            (y's readers read x; a model output y: x's producer writes it)

Exact: x · 1 = x for every float (NaN, ±inf and -0.0 included) and every integer. Only a constant
exactly 1.0 in every element qualifies (ONE compares with |c - 1| <= FLT_MIN, which for float32 is
the same test). Guards: no fused activation (an activation changes values); the broadcast does not
grow x (y has x's shape); x and y of one type and quantization, not quantized (a quantized 1 need
not be 1); a model output y needs x to have a producer and no other reader (it then writes y). A
MUL by ones refused for one of these reasons says so in the report's `not_folded`.
"""

from __future__ import annotations

from ..engine.identity import bypass, neutral_constant, neutral_operand_refusal
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "MUL" and len(op.inputs) == 2]:
        data = next((d for d in (0, 1) if op.inputs[d] is not None and neutral_constant(op, d, 1.0)), None)
        if data is None:
            continue
        x, y = op.inputs[data], op.outputs[0]
        assert x is not None  # neutral_constant's match
        refusal = neutral_operand_refusal(graph, op, data)
        if refusal:
            result.refuse_value(op, f"a MUL by ones stays: {refusal}")
            continue
        result.fold(op, [op], into=[], shape=list(y.signature))
        bypass(graph, op, x, y)
    return result
