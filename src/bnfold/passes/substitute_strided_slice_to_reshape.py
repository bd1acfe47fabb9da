"""substitute_strided_slice_to_reshape: a STRIDED_SLICE that keeps every element in order and only
drops (shrink_axis_mask) unit axes becomes a RESHAPE (ONE's pass of that name).

    before:  x [1,7,5] -> STRIDED_SLICE(begin [0,0,0], end [1,7,5], strides 1, shrink_axis_mask=1) -> y [7,5]
    after:   x [1,7,5] -> RESHAPE([7,5]) -> y

Exact: the slice copies all of x's elements in memory order (the value check's kernel decides,
with the masks and indices read as the runtime reads them: engine/identity.py), so its output is
x's buffer under y's shape, which is what a RESHAPE gives. A slice that keeps the shape too is
remove_unnecessary_strided_slice's. Guards: constant operands, static shapes, the same quantization.
"""

from __future__ import annotations

from ..engine.identity import keeps_every_element_in_order
from ..engine.report import PassResult
from ..engine.reshapes import replace_by_reshape
from ..ir.graph import Graph

KINDS = frozenset({"STRIDED_SLICE"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        x, y = op.input(0), op.outputs[0]
        if x is None or x.signature == y.signature or not keeps_every_element_in_order(graph, op):
            continue
        replace_by_reshape(graph, result, op, x, y, shape=list(y.signature))
    return result
