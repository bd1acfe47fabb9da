"""transform_min_relu_to_relu6: RELU after a MINIMUM with 6 is one RELU6 (ONE's pass of that name).

    before:  x -> MINIMUM(x, 6) -> m -> RELU -> y
    after:   x -> RELU6 -> y

Exact: max(min(x, 6), 0) = relu6(x) for every float x (comparisons only).

Guards: the constant is a one-element float32 constant holding exactly 6 (either operand order);
x, m and y are float32, not quantized, and of one shape; m has no reader but the RELU and is no
graph output.
"""

from __future__ import annotations

from ..engine.match import collapse, const_operand, not_plain_float, only_reader, read_elsewhere, scalar
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for minimum in [op for op in graph.ops if op.kind == "MINIMUM"]:
        pair = const_operand(minimum)
        if pair is None or scalar(pair[0]) != 6.0:
            continue
        x, m = pair[1], minimum.outputs[0]
        relu = only_reader(graph, m)
        if relu is None or relu.kind != "RELU":
            why = read_elsewhere(graph, m, "RELU")
            if why:
                result.refuse_value(minimum, why)
            continue
        why = not_plain_float(x, (x, m, relu.outputs[0]))
        if why:
            result.refuse_value(relu, why)
            continue
        collapse(graph, result, [minimum, relu], [x], "RELU6", activation="RELU6")
    return result
