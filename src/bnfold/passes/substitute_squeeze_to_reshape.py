"""substitute_squeeze_to_reshape: a SQUEEZE becomes a RESHAPE to its output shape (ONE's pass of that
name: one op kind fewer for a backend, and RESHAPE chains merge).

    before:  x [1,7,1,5] -> SQUEEZE(squeeze_dims [0,2]) -> y [7,5]
    after:   x -> RESHAPE([7,5]) -> y

Exact: a squeeze drops unit axes and moves no element, as a RESHAPE does. Guards: y's shape known
but for at most one dynamic dimension (a RESHAPE takes one -1), x dynamic only where y is, and the
same quantization on both sides.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..engine.reshapes import replace_by_reshape
from ..ir.graph import Graph

KINDS = frozenset({"SQUEEZE"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        x, y = op.input(0), op.outputs[0]
        if x is None or list(y.signature).count(-1) > 1 or x.signature.count(-1) != y.signature.count(-1):
            continue
        replace_by_reshape(graph, result, op, x, y, shape=list(y.signature))
    return result
