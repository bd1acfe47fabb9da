"""substitute_transpose_to_reshape: a TRANSPOSE that moves only unit axes is a RESHAPE (ONE's pass
of that name).

    before:  x [6,1,5,1] -> TRANSPOSE(1,0,3,2) -> y [1,6,1,5]
    after:   x [6,1,5,1] -> RESHAPE([1,6,1,5]) -> y

Exact: an element's offset in a row-major buffer is a sum over axes of index times stride, and an
axis of size 1 contributes nothing (its only index is 0). A transpose that keeps the axes longer
than 1 in their order therefore leaves every element at its offset: the output buffer is the
input buffer, which is all a RESHAPE gives. A dynamic axis counts as longer than 1 and becomes -1
in the new shape (so at most one may be dynamic).

Guards: the target runs RESHAPE (engine/targets.py); a constant permutation of the input's rank; the
output keeps the quantization of the input (a RESHAPE copies bytes); LiteRT would not let the
RESHAPE share a buffer another reader of x still needs (engine/reshapes.py: `aliasing_hazard`; a
TRANSPOSE has a buffer of its own).
"""

from __future__ import annotations

from ..engine.layout import transpose_perm
from ..engine.permute import keeps_data_order
from ..engine.report import PassResult
from ..engine.reshapes import replace_by_reshape
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "TRANSPOSE"]:
        perm, x, y = transpose_perm(op), op.input(0), op.outputs[0]
        if perm is None or x is None or not _is_a_reshape(x.signature, perm):
            continue
        replace_by_reshape(graph, result, op, x, y, permutation=list(perm), new_shape=list(y.signature))
    return result


def _is_a_reshape(shape, perm) -> bool:
    """The transpose keeps the data in order, and a RESHAPE can say its shape (one -1 at most)."""
    return keeps_data_order(shape, perm) and sum(1 for d in shape if d < 0) <= 1
