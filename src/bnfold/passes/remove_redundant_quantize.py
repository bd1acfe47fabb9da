"""remove_redundant_quantize: a requantization to the parameters it reads goes, and a QUANTIZE
that requantizes to what the QUANTIZE before it wrote reads that QUANTIZE's input instead (ONE's
RemoveRedundantQuantizePass, where it is exact).

    identity:  q [int8 s z] -> QUANTIZE -> q' [int8 s z] -> readers        after: q -> readers
    chain:     x -> QUANTIZE -> a [T s z] -> QUANTIZE -> b [T s z]         after: x -> QUANTIZE -> b
               (a keeps its QUANTIZE when something else reads it)

Exact: a requantization between equal scales multiplies by exactly 1 and moves the zero point
(engine/quantization.py, fact 2); with the same type and zero point it is the identity, under
every kernel. In a chain, the merged QUANTIZE must round as the first one did, which only the same
kernel (input and output types) is sure to (`merged_requantize`): so the chain merges when the
second writes what the first wrote.

Refused, with the reason: a chain through two scales (LiteRT rounds after each multiply; one
multiply rounds once and can land a step away: ONE merges it anyway), through two types (int16
then int8 of one scale: the merged QUANTIZE would run in another kernel, and XNNPACK's rounds ties
otherwise than the builtin int16 one; uint8 -> int8 differs from uint8 -> uint8 in XNNPACK, found
by the quantized fuzz), per-channel or 32-bit parameters, a model output that cannot be renamed.
"""

from __future__ import annotations

from ..engine.quantization import merged_requantize, per_tensor, same_parameters, stand_in
from ..engine.report import PassResult
from ..ir.graph import Graph, Op

KINDS = frozenset({"QUANTIZE"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        if not graph.contains(op) or op.input(0) is None:
            continue
        before = op.inputs[0].producer if op.inputs[0] is not None else None
        if before is not None and before.kind == "QUANTIZE" and not _merge_chain(graph, result, before, op):
            continue
        _remove_identity(graph, result, op)
    return result


def _merge_chain(graph: Graph, result: PassResult, first: Op, second: Op) -> bool:
    """Make `second` read what `first` reads, where exact; whether it did."""
    x, a, b = first.input(0), first.outputs[0], second.outputs[0]
    assert x is not None
    p1, p2 = per_tensor(a), per_tensor(b)
    problem = p1 if isinstance(p1, str) else p2 if isinstance(p2, str) else merged_requantize(p1, p2)
    if problem is not None:
        result.refuse_value(second, f"QUANTIZE -> QUANTIZE kept: {problem}")
        return False
    result.fold(second, [first] if graph.has_single_use(a, second) else [], form="QUANTIZE -> QUANTIZE")
    graph.set_input(second, 0, x)
    return True


def _remove_identity(graph: Graph, result: PassResult, quantize: Op) -> None:
    q, q2 = quantize.input(0), quantize.outputs[0]
    if q is None or q.dtype in ("FLOAT32", "FLOAT16"):
        return  # a quantization of floats, not a requantization
    problem = same_parameters(q, q2)
    if problem is not None:
        result.refuse_value(quantize, f"QUANTIZE of integers kept: it requantizes ({problem})")
        return
    problem = stand_in(graph, q2, q, [quantize])
    if problem is not None:
        result.refuse_value(quantize, f"QUANTIZE to the same parameters kept: {problem}")
        return
    result.fold(quantize, [quantize], into=[], form="QUANTIZE to the same parameters")
