"""fold_reshape: a RESHAPE of a constant becomes the constant in its new shape (ONE's pass of that
name: the shape arithmetic and reshaped weights of exported models).

    before:  c (const [6, 4]), s (const INT32 [3] or the newShape option) -> RESHAPE -> y ([2, 3, 4])
    after:   y (const [2, 3, 4], c's elements in the same order)

Exact: a RESHAPE moves no value (row-major order is kept); the new constant holds c's elements as
the value check's RESHAPE kernel lays them out. Guards: engine/constfold.py's (every input a
constant, y no model output, nothing integer-quantized, the computed shape y's static shape).
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"RESHAPE"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
