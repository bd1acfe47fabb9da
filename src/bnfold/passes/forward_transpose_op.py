"""forward_transpose_op (ONE's option): a TRANSPOSE moved forward through elementwise operators —
unary ones, and binary ones whose other operand is a constant (copied, permuted) or carries the
same transpose — when that lets it cancel or merge with another (propagation.py, restricted to
these operators; remove_redundant_transpose runs the whole propagation):

    before:  x -> TRANSPOSE(p) -> ABS -> MUL(c) -> TRANSPOSE(q) -> y          q = argsort(p)
    after:   x -> ABS -> MUL(c') -> y                                          c' = transpose(c, q)

Unlike ONE's pass, which moves a transpose after every ADD/MUL-with-constant, ABS or LOGISTIC it
reads whatever follows (keeping it for other readers), this one moves it only where that lowers the
number of transposes: one that would meet nothing stays where it is, with its reason.
"""

from __future__ import annotations

from ..engine.propagation import propagate
from ..engine.report import PassResult
from ..ir.graph import Graph

ELEMENTWISE = frozenset({"unary", "elementwise"})


def run(graph: Graph) -> PassResult:
    return propagate(graph, ELEMENTWISE)
