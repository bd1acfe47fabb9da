"""remove_redundant_transpose: TRANSPOSEs moved through the operators between them until they cancel
or merge (ONE's pass of that name removes adjacent pairs; this is the whole layout propagation,
propagation.py, which subsumes it):

    before:  x -> TRANSPOSE(p) -> RELU -> ADD(c) -> TRANSPOSE(q) -> y       p[q[i]] = i for every i
    after:   x -> RELU -> ADD(c') -> y                                       c' = c moved back by p
    and:     x -> TRANSPOSE(p) -> TRANSPOSE(q) -> y   becomes   x -> TRANSPOSE(p[q]) -> y

A RESHAPE that only moves unit axes is a transpose ([N,1,1,C] -> [N,C,1,1] is TRANSPOSE(0,3,1,2),
TICO's spelling around a squeeze-excite gate's 1x1 convs): it is offered to the propagation as
that TRANSPOSE, and stays the RESHAPE it was unless it moved (convert_nchw_to_nhwc.py).

Exact: a transpose only moves elements, and every operator crossed computes the same values on
the moved data with its axes remapped (permute.py). A rewrite is made only when it removes more
transposes than it adds; every TRANSPOSE left gets one reason in the report.
"""

from __future__ import annotations

from ..ir.graph import Graph
from .convert_nchw_to_nhwc import propagate_with_unit_reshapes
from .report import PassResult


def run(graph: Graph) -> PassResult:
    return propagate_with_unit_reshapes(graph)
