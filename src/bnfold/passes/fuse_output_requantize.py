"""fuse_output_requantize: a QUANTIZE after a quantized CONV_2D / DEPTHWISE_CONV_2D /
FULLY_CONNECTED / TRANSPOSE_CONV goes where the layer can write its parameters itself and no
integer changes (TICO's FuseOutputRequantizePass, where it is exact).

    before:  x -> CONV_2D (act) -> y [int8 s z1] -> QUANTIZE -> q [int8 s z2] -> readers
    after:   x -> CONV_2D (act) -> q [int8 s z2] -> readers

Exact only with one scale: the layer rounds its accumulator once, r = MBQM(acc, s_in·s_w / s),
whatever its zero point, and a QUANTIZE between equal scales multiplies by exactly 1 (engine/
quantization.py, fact 2), adding z2 - z1 and clamping. So the layer writing (s, z2) gives the same
integers when its activation range at z2 is the range at z1 moved by z2 - z1 and clamped to the
type (`output_requantize`: e.g. RELU at z1 = -128 then z2 = -100). The bias (scale s_in·s_w) does
not depend on the output's parameters.

Refused with the reason: another scale (the usual case: LiteRT rounds the accumulator to s1, then
the requantized value to s2; one multiplier s_in·s_w / s2 rounds once and lands a step away on
some inputs, so TICO's fold is not bit-identical there), another type, a clamp the zero point
moves, per-channel output parameters. Guards: y is read by the QUANTIZE alone and is no model
output.
"""

from __future__ import annotations

from ..engine.quantization import output_requantize, per_tensor
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for quantize in [op for op in graph.ops if op.kind == "QUANTIZE"]:
        y = quantize.input(0)
        layer = y.producer if y is not None else None
        if y is None or layer is None or layer.kind not in KINDS or not y.is_quantized:
            continue
        q = quantize.outputs[0]
        before, after = per_tensor(y), per_tensor(q)
        if isinstance(before, str) or isinstance(after, str):
            problem: str | None = before if isinstance(before, str) else str(after)
        elif not graph.has_single_use(y, quantize):
            problem = f"{y.name!r} is read elsewhere or is a model output"
        else:
            problem = output_requantize(before, after, layer.fused_activation)
        if problem is not None or isinstance(before, str) or isinstance(after, str):
            result.refuse_value(quantize, f"QUANTIZE after {layer.kind} kept: {problem}")
            continue
        result.fold(layer, [quantize], output=q.name, zero_point=[before.zero_point, after.zero_point])
        graph.remove_op(quantize)
        graph.set_output(layer, layer.outputs.index(y), q)
    return result
