"""fold_gather: a GATHER of a constant at constant indices becomes the gathered constant (ONE's
pass of that name; the shape/index arithmetic of exported models: Shape -> Gather -> ...).

    before:  p (const [5,4]), i (const INT32 [3]) -> GATHER(axis=0) -> y [3,4]
    after:   y (const [3,4]: rows i of p)

Exact: elements are copied, never computed (the value check's GATHER kernel, np.take along the
axis). Refused: an index outside [0, dim) of the axis (LiteRT fails such a run: the kernel says
so), batch_dims (no kernel), and the guards of engine/constfold.py.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"GATHER"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
