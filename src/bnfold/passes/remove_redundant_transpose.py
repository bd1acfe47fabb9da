"""remove_redundant_transpose: TRANSPOSEs moved through the operators between them until they cancel
or merge (ONE's pass of that name removes adjacent pairs; this is the whole layout propagation,
propagation.py, which subsumes it):

    before:  x -> TRANSPOSE(p) -> RELU -> ADD(c) -> TRANSPOSE(q) -> y       p[q[i]] = i for every i
    after:   x -> RELU -> ADD(c') -> y                                       c' = c moved back by p
    and:     x -> TRANSPOSE(p) -> TRANSPOSE(q) -> y   becomes   x -> TRANSPOSE(p[q]) -> y

A RESHAPE that only moves unit axes is a transpose ([N,1,1,C] -> [N,C,1,1] is TRANSPOSE(0,3,1,2),
TICO's spelling around a squeeze-excite gate's 1x1 convs): it is offered to the propagation as
that TRANSPOSE, and stays the RESHAPE it was unless it moved (convert_nchw_to_nhwc.py).

First, TRANSPOSEs of one tensor by the same permutation are one (TICO writes one per reader):

    before:  x -> TRANSPOSE(p) -> a -> readers A;   x -> TRANSPOSE(p) -> b -> readers B
    after:   x -> TRANSPOSE(p) -> a -> readers A and B        (b no graph output)

so the propagation sees one transpose with all its readers (it can then pull it back, e.g. before
the RESHAPE ending ShuffleNet's last unit of a stage, where it merges with the shuffle).

Exact: a transpose only moves elements, and every operator crossed computes the same values on
the moved data with its axes remapped (permute.py). A rewrite is made only when it removes more
transposes than it adds; every TRANSPOSE left gets one reason in the report.
"""

from __future__ import annotations

from ..engine.layout import transpose_perm
from ..engine.report import PassResult, describe
from ..engine.reshapes import same_quantization
from ..ir.graph import Graph
from .convert_nchw_to_nhwc import propagate_with_unit_reshapes


def run(graph: Graph) -> PassResult:
    merged = merge_duplicates(graph)
    result = propagate_with_unit_reshapes(graph)
    result.folds[:0], result.into[:0] = merged.folds, merged.into
    return result


def merge_duplicates(graph: Graph) -> PassResult:
    """Every TRANSPOSE reading the same tensor by the same permutation as an earlier one goes; its
    readers read the earlier one's output (computed before them, since it comes first)."""
    result = PassResult()
    first: dict = {}
    for op in [op for op in graph.ops if op.kind == "TRANSPOSE"]:
        p = transpose_perm(op)
        if p is None or op.input(0) is None:
            continue
        kept = first.setdefault((id(op.inputs[0]), p), op)
        y = op.outputs[0]
        if kept is op or graph.is_observed(y) or not same_quantization(kept.outputs[0], y):
            continue
        result.fold(op, [op], into=[kept], duplicate_of=describe(kept))
        graph.replace_uses(y, kept.outputs[0])
        graph.remove_op(op)
    return result
