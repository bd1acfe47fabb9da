"""fold_squeeze: a SQUEEZE of a constant becomes the constant without the squeezed unit axes (ONE's
pass of that name).

    before:  c (const [1, 5, 1, 3]) -> SQUEEZE(squeeze_dims=[0]) -> y ([5, 1, 3])
    after:   y (const [5, 1, 3], c's elements)

Exact: dropping unit axes moves no value; the constant is what the value check's SQUEEZE kernel
computes. Guards: engine/constfold.py's (a squeeze_dims entry that is not a unit axis is the
kernel's own refusal, where ONE asserts).
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"SQUEEZE"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
