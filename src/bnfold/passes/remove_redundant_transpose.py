"""remove_redundant_transpose: TRANSPOSEs moved through the operators between them until they cancel
or merge (ONE's pass of that name removes adjacent pairs; this is the whole layout propagation,
propagation.py, which subsumes it):

    before:  x -> TRANSPOSE(p) -> RELU -> ADD(c) -> TRANSPOSE(q) -> y       p[q[i]] = i for every i
    after:   x -> RELU -> ADD(c') -> y                                       c' = c moved back by p
    and:     x -> TRANSPOSE(p) -> TRANSPOSE(q) -> y   becomes   x -> TRANSPOSE(p[q]) -> y

Exact: a transpose only moves elements, and every operator crossed computes the same values on
the moved data with its axes remapped (permute.py). A rewrite is made only when it removes more
transposes than it adds; every TRANSPOSE left gets one reason in the report.
"""

from __future__ import annotations

from ..ir.graph import Graph
from .propagation import propagate
from .report import PassResult


def run(graph: Graph) -> PassResult:
    return propagate(graph)
