"""fold_densify: a DENSIFY of a sparse constant becomes the dense constant (ONE's pass of that name;
the TFLite converter stores sparse weights with a DENSIFY in front of the layer).

    before:  w (const, sparse: traversal order, blocks, DENSE / SPARSE_CSR dimensions) -> DENSIFY -> w'
    after:   w' (const, dense)

Exact: the stored values are placed where the sparsity parameters say, zeros elsewhere
(reference/sparse_kernels.py decodes TFLite's format, the runtime's DENSIFY does the same at load).
The file grows by the zeros and the runtime no longer densifies at load. Refused: sparsity
parameters that do not describe the tensor, and the guards of engine/constfold.py.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"DENSIFY"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
