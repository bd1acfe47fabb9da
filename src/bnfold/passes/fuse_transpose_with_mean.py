"""fuse_transpose_with_mean (ONE's option): a TRANSPOSE before a MEAN (or another reduction) is
absorbed by remapping the reduced axes when nothing after it needs the transpose any more
(propagation.py, restricted to reductions):

    before:  x[N,H,W,C] -> TRANSPOSE(0,3,1,2) -> MEAN(axes 2,3) -> y[N,C]
    after:   x[N,H,W,C] -> MEAN(axes 1,2) -> y[N,C]                    axis a -> p[a]
"""

from __future__ import annotations

from ..engine.propagation import propagate
from ..engine.report import PassResult
from ..ir.graph import Graph

REDUCTIONS = frozenset({"reduce"})


def run(graph: Graph) -> PassResult:
    return propagate(graph, REDUCTIONS)
