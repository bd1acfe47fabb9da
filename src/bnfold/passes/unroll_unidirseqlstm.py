"""unroll_unidirseqlstm: ONE's rewrite of UNIDIRECTIONAL_SEQUENCE_LSTM into one set of
FULLY_CONNECTED / gate ops per time step (UnrollUnidirectionalSequenceLSTMPass), for backends
that have no LSTM kernel.

bnfold refuses every candidate, with the reason in the report: it does not implement the unrolling
yet, and the runtimes it writes for run the operator whole (LiteRT's builtin kernel; onert loads
it as its LSTM operation), so the unrolled form would serve only a ONE backend without one. A
model without the operator has no candidate.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"UNIDIRECTIONAL_SEQUENCE_LSTM"})
REASON = (
    "unrolling UNIDIRECTIONAL_SEQUENCE_LSTM is not implemented in bnfold (LiteRT and onert run the operator "
    "whole; the unrolled form serves a ONE backend without an LSTM kernel): refused"
)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in graph.ops:
        if op.kind in KINDS:
            result.not_for_target(op, REASON)
    return result
