"""fold_fully_connected: a FULLY_CONNECTED of a constant input with constant weights (and bias, if
any) becomes the constant it computes (ONE's pass of that name).

    before:  x (const [N,K]), W (const [U,K]), b (const [U] or none) -> FULLY_CONNECTED -> y [N,U]
    after:   y (const [N,U] = act(x·Wᵀ + b))

Exact up to float rounding: the value check's float32 kernel (x read as the row-major [-1, K]
matrix, keep_num_dims honoured) in float32 as LiteRT does; only the order of the sums may differ.
Guards: float32 and the default weights format (the kernel refuses the rest), and
engine/constfold.py's.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"FULLY_CONNECTED"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
