"""fold_cast: a CAST of a constant becomes the cast constant (ONE's pass of that name).

    before:  c (const, INT64 [3,5]) -> CAST -> y (INT32)
    after:   y (const, INT32 [3,5], c's values cast)

Exact: the cast is computed by the value check's CAST kernel (LiteRT's rule: float to integer
truncates toward zero; integers wrap as C casts do), which is what the runtime would compute on every
run. Guards (engine/constfold.py): y no model output, nothing integer-quantized, a type bnfold holds
as numbers.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"CAST"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
