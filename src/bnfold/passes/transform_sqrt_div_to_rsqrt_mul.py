"""transform_sqrt_div_to_rsqrt_mul: x / √v becomes x · rsqrt(v) (ONE's pass of that name; in O1
since ONE #13396).

    before:  v -> SQRT -> s;  DIV(x, s) -> y            after:  v -> RSQRT -> r;  MUL(x, r) -> y

Why: a DIV costs more than a MUL, and RMS norms and attention scalings exported as x / √v then have
the RSQRT form fuse_rmsnorm and the layer folds read. Exact up to float rounding: x / √v rounds
twice (√v, the quotient), x · (1 / √v) three times (√v, its reciprocal, the product): the results
differ by at most about 1.5 ulp. The special values agree: v = 0 gives ±inf (NaN at x = 0) both ways,
v = +inf gives 0, v < 0 NaN; 1 / √v cannot overflow for any float32 v > 0 (√ of the smallest
subnormal is 3.7e-23).

Guards: x is computed (a constant numerator is fuse_rsqrt's); the SQRT's output is read only by the
DIV and is no graph output (ONE keeps the SQRT for its other readers, adding an op; here the DIV
stays then); x, v, s and y are float32, none quantized, and y has the shape of x·s's broadcast (the
MUL broadcasts as the DIV did); the DIV's fused activation moves to the MUL, if the target runs MUL
with it, and the target runs RSQRT. A refused candidate says why in the report's `not_folded`.
"""

from __future__ import annotations

from ..engine import targets
from ..engine.match import is_plain_float, only_reader
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options
from ..ir.ops import FUSED_ACTIVATIONS


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for div in [op for op in graph.ops if op.kind == "DIV"]:
        x, s = div.input(0), div.input(1)
        sqrt = s.producer if s is not None else None
        if x is None or x.is_const or sqrt is None or sqrt.kind != "SQRT":
            continue
        refusal = _refusal(graph, sqrt, div)
        if refusal:
            result.refuse_value(div, f"x / SQRT stays: {refusal}")
            continue
        unsupported = targets.refusal(graph, "RSQRT") or targets.refusal(graph, "MUL", div.fused_activation)
        if unsupported:
            result.not_for_target(div, unsupported)
            continue
        _rewrite(graph, result, sqrt, div)
    return result


def _refusal(graph: Graph, sqrt: Op, div: Op) -> str | None:
    x, v, s, y = div.input(0), sqrt.input(0), sqrt.outputs[0], div.outputs[0]
    if only_reader(graph, s) is not div:
        return "the SQRT's output is read elsewhere or is a graph output (an RSQRT beside it would add an op)"
    if not all(is_plain_float(t) for t in (x, v, s, y)):
        return "not float32 throughout"
    if x is s:
        return "x is the SQRT itself"
    return None


def _rewrite(graph: Graph, result: PassResult, sqrt: Op, div: Op) -> None:
    x, v, s, y = div.input(0), sqrt.input(0), sqrt.outputs[0], div.outputs[0]
    act = div.fused_activation
    result.fold(div, [sqrt, div], into=[])
    graph.remove_op(div)
    graph.remove_op(sqrt)
    rsqrt = graph.add_op("RSQRT", [v], [s], None, after=sqrt)  # s keeps its name and shape: now 1 / √v
    options = Options("MulOptions", fusedActivationFunction=FUSED_ACTIVATIONS.index(act))
    mul = graph.add_op("MUL", [x, s], [y], options, after=div)
    result.made(rsqrt)
    result.made(mul)
