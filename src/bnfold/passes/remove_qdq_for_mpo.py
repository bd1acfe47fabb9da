"""remove_qdq_for_mpo: of two QUANTIZE/DEQUANTIZE pairs in a row after a mixed-precision layer
(FULLY_CONNECTED or BATCH_MATMUL, computing in float), the first goes where that changes no value
(ONE's RemoveQDQForMixedPrecisionOpPass, where it is exact).

    before:  FC -> x -> QUANTIZE -> a [T s z] -> DEQUANTIZE -> QUANTIZE -> b [T s z] -> DEQUANTIZE -> y
    after:   FC -> x -> QUANTIZE -> b [T s z] -> DEQUANTIZE -> y

Exact: with one scale, DEQUANTIZE then QUANTIZE is the requantization from (s, z1) to (s, z2)
(engine/quantization.py, facts 1 and 2), so b = requantize(quantize(x)), which is quantize(x) to
b's parameters directly when the second pair writes what the first wrote (`merged_requantize`:
only the same kernel is sure to round as the first QUANTIZE did).

Refused, with the reason: two scales (x is rounded twice; once can land a step away), two types
(ONE's int16 then int8 of one scale: the direct QUANTIZE to int8 would run in XNNPACK, which rounds
ties otherwise than the builtin int16 kernel; ONE drops the first pair anyway), a zero point the
first clamps, per-channel or 32-bit parameters. The first pair stays when something else reads it
(only b's QUANTIZE is rewired).
"""

from __future__ import annotations

from ..engine.quantization import merged_requantize, per_tensor
from ..engine.report import PassResult
from ..ir.graph import Graph, Op

KINDS = frozenset({"DEQUANTIZE"})
MIXED_PRECISION = frozenset({"FULLY_CONNECTED", "BATCH_MATMUL"})  # ONE's supported_ops


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        chain = _chain(op)
        if chain is None:
            continue
        first, second = chain
        p1, p2 = per_tensor(first.outputs[0]), per_tensor(second.outputs[0])
        problem = p1 if isinstance(p1, str) else p2 if isinstance(p2, str) else merged_requantize(p1, p2)
        if problem is not None:
            result.refuse_value(second, f"first QUANTIZE/DEQUANTIZE pair kept: {problem}")
            continue
        middle = second.inputs[0]
        assert middle is not None and middle.producer is not None  # _chain walked through it
        single = graph.has_single_use(middle, second) and graph.has_single_use(first.outputs[0], middle.producer)
        removed = [first, middle.producer] if single else []
        result.fold(second, removed, form="QUANTIZE -> DEQUANTIZE -> QUANTIZE -> DEQUANTIZE")
        graph.set_input(second, 0, first.inputs[0])
    return result


def _chain(dequantize: Op) -> tuple[Op, Op] | None:
    """(first QUANTIZE, second QUANTIZE) of the pattern ending at `dequantize`, or None."""
    ops = [dequantize]
    for kind in ("QUANTIZE", "DEQUANTIZE", "QUANTIZE"):
        t = ops[-1].input(0)
        p = t.producer if t is not None else None
        if p is None or p.kind != kind:
            return None
        ops.append(p)
    x = ops[-1].input(0)
    if x is None or x.producer is None or x.producer.kind not in MIXED_PRECISION:
        return None
    return ops[3], ops[1]
