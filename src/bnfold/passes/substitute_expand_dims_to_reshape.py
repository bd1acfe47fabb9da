"""substitute_expand_dims_to_reshape: an EXPAND_DIMS by a constant axis becomes a RESHAPE to its
output shape (ONE's pass of that name: one op kind fewer for a backend, and RESHAPE chains merge).

    before:  x [2,3,4] -> EXPAND_DIMS(axis 1) -> y [2,1,3,4]
    after:   x -> RESHAPE([2,1,3,4]) -> y

Exact: inserting a unit axis moves no element, as a RESHAPE does; LiteRT shares the input's
buffer for both (engine/reshapes.py), so nothing runs in place that did not before. Guards
(ONE's): the axis is an INT32 or INT64 constant, x has rank >= 1, y's shape is fully known; also
engine/reshapes.replace_by_reshape's (the target runs RESHAPE, the same quantization on both sides).
"""

from __future__ import annotations

from ..engine.match import SHAPES_DISAGREE, shapes_hold
from ..engine.report import PassResult
from ..engine.reshapes import replace_by_reshape
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "EXPAND_DIMS"]:
        x, axis, y = op.input(0), op.input(1), op.outputs[0]
        if x is None or not x.shape or axis is None or not axis.is_const or axis.dtype not in ("INT32", "INT64"):
            continue
        if -1 in y.signature or -1 in x.signature:
            continue
        if not shapes_hold(op):
            result.refuse_value(op, SHAPES_DISAGREE)
            continue
        replace_by_reshape(graph, result, op, x, y, shape=list(y.shape))
    return result
