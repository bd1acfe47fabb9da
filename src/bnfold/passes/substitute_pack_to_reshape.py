"""substitute_pack_to_reshape: a PACK of one tensor becomes a RESHAPE that inserts its unit axis
(ONE's pass of that name).

    before:  x [7,5] -> PACK(values_count=1, axis=1) -> y [7,1,5]
    after:   x -> RESHAPE([7,1,5]) -> y

Exact: stacking one tensor adds an axis of size 1 and moves no element, as a RESHAPE does. Guards:
one input, y's shape known but for at most one dynamic dimension, x dynamic only where y is, the
same quantization on both sides.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..engine.reshapes import replace_by_reshape
from ..ir.graph import Graph

KINDS = frozenset({"PACK"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        if len(op.inputs) != 1 or op.inputs[0] is None:
            continue
        x, y = op.inputs[0], op.outputs[0]
        if list(y.signature).count(-1) > 1 or x.signature.count(-1) != y.signature.count(-1):
            continue
        replace_by_reshape(graph, result, op, x, y, shape=list(y.signature))
    return result
