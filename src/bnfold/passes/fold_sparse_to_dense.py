"""fold_sparse_to_dense: a SPARSE_TO_DENSE of constants becomes the dense constant (ONE's pass of
that name).

    before:  indices (const INT32 [N,R]), shape (const [R]), values (const [N] or scalar),
             default (const scalar) -> SPARSE_TO_DENSE -> y
    after:   y (const: default everywhere, values[i] at indices[i])

Exact: elements are placed, never computed (reference/sparse_kernels.py, TFLite's rule). Refused: an
index outside the output (LiteRT fails such a run), and the guards of engine/constfold.py.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"SPARSE_TO_DENSE"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
