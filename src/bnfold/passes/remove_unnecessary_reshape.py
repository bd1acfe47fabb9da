"""remove_unnecessary_reshape: a RESHAPE whose output shape is its input shape goes (ONE's pass of
that name).

    before:  x [3,7,5] -> RESHAPE([3,7,5]) -> y -> readers
    after:   x [3,7,5] -> readers            (y's readers read x)

Exact: a RESHAPE never moves an element, so with the same shape it is the identity. When y is a
graph output (or a signature names it), its name must stay: then x's producer writes y directly,
which needs x to have no other reader and to be seen by no one; otherwise the RESHAPE stays.

Guards: both shapes known the same, dynamic dimensions in the same places (a RESHAPE to a static
shape from a dynamic one checks the size at run time, which is not nothing); the new shape, when
given as an operand, is a constant; the same quantization on both sides.
"""

from __future__ import annotations

from ..ir.graph import Graph, Op
from .report import PassResult
from .reshapes import same_quantization, signature


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "RESHAPE"]:
        x, y = op.input(0), op.outputs[0]
        if x is None or signature(x) != signature(y) or not same_quantization(x, y):
            continue
        shape = op.input(1)
        if shape is not None and not shape.is_const:
            continue
        if graph.is_observed(y):
            if not _producer_takes_output(graph, op):
                continue
        result.fold(op, [op], shape=list(signature(y)))
        _bypass(graph, op)
    return result


def _producer_takes_output(graph: Graph, op: Op) -> bool:
    x = op.inputs[0]
    return x.producer is not None and graph.has_single_use(x, op)


def _bypass(graph: Graph, op: Op) -> None:
    x, y = op.inputs[0], op.outputs[0]
    graph.remove_op(op)
    if graph.is_observed(y):
        producer = x.producer
        graph.set_output(producer, producer.outputs.index(x), y)
    else:
        graph.replace_uses(y, x)
