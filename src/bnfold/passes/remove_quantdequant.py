"""remove_quantdequant: a QUANTIZE/DEQUANTIZE pair that gives back what went in goes (ONE's
RemoveQuantDequantSeqPass, where it is exact).

    DEQUANTIZE then QUANTIZE, one (type, scale, zero point) on both integer sides:
    before:  q [int8 s z] -> DEQUANTIZE -> f [float32] -> QUANTIZE -> q' [int8 s z] -> readers
    after:   q -> readers

    QUANTIZE then DEQUANTIZE of a dequantized tensor (the float side of the same pair):
    before:  q [int8 s z] -> DEQUANTIZE -> f -> QUANTIZE -> q' [int8 s z] -> DEQUANTIZE -> f' -> readers
    after:   q -> DEQUANTIZE -> f -> readers

Exact: DEQUANTIZE then QUANTIZE with the same parameters gives back every integer (engine/
quantization.py, fact 1), so q' = q, and f' = DEQUANTIZE(q') is DEQUANTIZE(q) = f bit for bit.
Guards: 8- or 16-bit integers quantized per tensor, the same type, scale and zero point on both
integer sides; a model output that would go needs the tensor standing in to be renamed to it.

ONE removes every QUANTIZE -> DEQUANTIZE pair, whatever feeds it: that takes out a rounding to
the integer grid and a clamp to its range (ONE does it before quantizing the whole model again).
bnfold keeps the pair when its float input may lie off the grid, and says so.
"""

from __future__ import annotations

from ..engine.quantization import per_tensor, same_parameters, stand_in
from ..engine.report import PassResult
from ..ir.graph import Graph, Op

KINDS = frozenset({"QUANTIZE", "DEQUANTIZE"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    # QUANTIZE -> DEQUANTIZE first: where its QUANTIZE reads a DEQUANTIZE, both of that form's
    # QUANTIZE and DEQUANTIZE go, which the other form would leave as a second DEQUANTIZE
    for first, second in (("QUANTIZE", "DEQUANTIZE"), ("DEQUANTIZE", "QUANTIZE")):
        for op in [op for op in graph.ops if op.kind == second]:
            source = op.input(0)
            before = source.producer if source is not None else None
            if not graph.contains(op) or before is None or before.kind != first or graph.is_unread(op.outputs[0]):
                continue
            if op.kind == "QUANTIZE":
                _dequantize_quantize(graph, result, before, op)
            else:
                _quantize_dequantize(graph, result, before, op)
    return result


def _dequantize_quantize(graph: Graph, result: PassResult, dequantize: Op, quantize: Op) -> None:
    q, q2 = dequantize.input(0), quantize.outputs[0]
    assert q is not None  # a DEQUANTIZE's input: the reader checks every op's arity
    problem = same_parameters(q, q2) or stand_in(graph, q2, q, [dequantize, quantize])
    if problem:
        result.refuse_value(quantize, f"DEQUANTIZE -> QUANTIZE kept: {problem}")
        return
    result.fold(quantize, [dequantize, quantize], into=[], form="DEQUANTIZE -> QUANTIZE", parameters=str(per_tensor(q)))


def _quantize_dequantize(graph: Graph, result: PassResult, quantize: Op, dequantize: Op) -> None:
    f, f2 = quantize.input(0), dequantize.outputs[0]
    first = f.producer if f is not None else None
    if first is None or first.kind != "DEQUANTIZE" or first.input(0) is None:
        result.refuse_value(
            dequantize,
            "QUANTIZE -> DEQUANTIZE kept: it rounds its float input to the integer grid and clamps it to the "
            "type's range, and that input is not known to lie on the grid (ONE removes the pair anyway)",
        )
        return
    q = first.input(0)
    assert q is not None and f is not None
    problem = same_parameters(q, quantize.outputs[0]) or stand_in(graph, f2, f, [quantize, dequantize])
    if problem:
        result.refuse_value(dequantize, f"QUANTIZE -> DEQUANTIZE kept: {problem}")
        return
    result.fold(dequantize, [quantize, dequantize], into=[], form="DEQUANTIZE -> QUANTIZE -> DEQUANTIZE")
