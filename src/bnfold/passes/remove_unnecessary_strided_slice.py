"""remove_unnecessary_strided_slice: a STRIDED_SLICE that keeps its whole input goes (ONE's pass of
that name).

    before:  x [3,7,5] -> STRIDED_SLICE(begin [0,0,0], end [3,7,5], strides [1,1,1]) -> y [3,7,5]
    after:   x -> readers            (y's readers read x; a model output y: x's producer writes it)

Exact: a strided slice copies elements; one that takes every element of every axis with stride 1
(begin/end masks, negative and clamped indices as the runtime reads them: the value check's
kernel decides, engine/identity.py) copies them all in order, so it is the identity. Guards: as
remove_unnecessary_slice (constant operands, static shapes, same shape and quantization); ellipsis
and new-axis masks are left alone (no kernel reads them).
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..ir.graph import Graph
from .remove_unnecessary_slice import remove_identities

KINDS = frozenset({"STRIDED_SLICE"})


def run(graph: Graph) -> PassResult:
    return remove_identities(graph, KINDS)
