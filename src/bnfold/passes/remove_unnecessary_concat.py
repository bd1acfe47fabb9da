"""remove_unnecessary_concat: a CONCATENATION of one tensor is that tensor.

    before:  x -> CONCATENATION([x]) -> y -> readers        after:  x -> readers

PyTorch's `torch.cat([x], dim)` exports as such an op (TICO writes one at the first layer of every
DenseNet block; litert-torch drops it). Exact: the op copies x.

Guards: exactly one input, of y's shape and type, neither quantized (a quantized concatenation
may requantize); no fused activation; y is not a graph output (its name must stay).
"""

from __future__ import annotations

from ..engine.report import PassResult, Refusal
from ..ir.graph import Graph, Op


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "CONCATENATION" and len(op.inputs) == 1]:
        refusal = _refusal(graph, op)
        if refusal:
            result.refuse_value(op, str(refusal))  # a CONCATENATION is no batch-norm candidate: not a skip
            continue
        x = op.inputs[0]
        if x is None:  # nothing to read instead (the reader refuses such a model: ir/invariants.py)
            continue
        result.fold(op, [op], into=graph.consumers(op.outputs[0]))  # its readers now read x
        graph.replace_uses(op.outputs[0], x)
        graph.remove_op(op)
    return result


def _refusal(graph: Graph, op: Op) -> Refusal | None:
    x, y = op.inputs[0], op.outputs[0]
    if x is None or x.shape != y.shape or x.dtype != y.dtype or x.is_quantized or y.is_quantized:
        return Refusal("the one-input concatenation changes the shape or type, or is quantized")
    if op.fused_activation != "NONE":
        return Refusal(f"the one-input concatenation has a fused {op.fused_activation}")
    if graph.is_observed(y):
        return Refusal("the one-input concatenation's output is a graph output")
    return None
