"""transform_min_max_to_relu6: a clamp to [0, 6] written as MINIMUM and MAXIMUM becomes one RELU6
(ONE's pass of that name; ONNX's Clip(0, 6) and TensorFlow's relu6 exported without the op).

    before:  x -> MINIMUM(x, 6) -> m -> MAXIMUM(m, 0) -> y
       or:   x -> MAXIMUM(x, 0) -> m -> MINIMUM(m, 6) -> y
    after:   x -> RELU6 -> y

Exact: max(min(x, 6), 0) = min(max(x, 0), 6) = relu6(x) for every float x (both bounds are
compared, nothing is computed). ONE takes only the first order; the second is the same clamp.

Guards: the constants are one-element float32 constants holding exactly 6 and 0 (either operand
order); x, m and y are float32, not quantized, and of one shape (a constant of higher rank would
broadcast x); m has no reader but the second op and is no graph output.
"""

from __future__ import annotations

from ..engine.match import collapse, const_operand, not_plain_float, only_reader, read_elsewhere, scalar
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor

BOUNDS = {"MINIMUM": 6.0, "MAXIMUM": 0.0}


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for first in [op for op in graph.ops if op.kind in BOUNDS]:
        if not graph.contains(first):
            continue
        x = _clamped(first)
        if x is None:
            continue
        second = only_reader(graph, first.outputs[0])
        if second is None or second.kind != _other(first.kind) or _clamped(second) is not first.outputs[0]:
            why = None if second is not None else read_elsewhere(graph, first.outputs[0], _other(first.kind))
            if why:
                result.refuse_value(first, why)
            continue
        why = not_plain_float(x, (x, first.outputs[0], second.outputs[0]))
        if why:
            result.refuse_value(second, why)
            continue
        collapse(graph, result, [first, second], [x], "RELU6", activation="RELU6")
    return result


def _other(kind: str) -> str:
    return "MAXIMUM" if kind == "MINIMUM" else "MINIMUM"


def _clamped(op: Op) -> Tensor | None:
    """What `op` clamps, when its constant operand is the bound RELU6 has on that side."""
    pair = const_operand(op)
    if pair is None or scalar(pair[0]) != BOUNDS[op.kind]:
        return None
    return pair[1]
