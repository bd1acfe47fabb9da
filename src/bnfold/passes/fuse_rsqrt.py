"""fuse_rsqrt: 1 / √x, a DIV of the constant one by a SQRT, becomes one RSQRT (ONE's pass of that name).

    before:  x -> SQRT -> s -> DIV(1, s) -> y        after:  x -> RSQRT -> y

Exact: both compute 1 / √x with the same two roundings (√x rounded, then 1 / it rounded): LiteRT's
and onert's RSQRT kernels evaluate 1.f / std::sqrt(x) in float32, so the bits are the same,
including x = 0 (+inf), x < 0 (NaN) and x = +inf (0).

ONE's pass matches only int16-quantized models (its float case is a TODO); here float32, which
PyTorch exports of x / √d and 1 / √v produce (TICO, litert-torch). Guards: the numerator is a
one-element float32 constant exactly 1.0, not quantized (a DIV of a constant by a computed √ is the
fold's only form; x / √v with x computed is transform_sqrt_div_to_rsqrt_mul's); the DIV has no
fused activation; the SQRT's output is read only by the DIV and is no graph output; x, s and y are
float32 of one shape (a constant of higher rank would broadcast); the target runs RSQRT
(engine/targets.py). A candidate refused says why in the report's `not_folded`.
"""

from __future__ import annotations

from ..engine import targets
from ..engine.match import collapse, is_plain_float, only_reader, scalar
from ..engine.report import PassResult
from ..ir.graph import Graph, Op


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for div in [op for op in graph.ops if op.kind == "DIV"]:
        s = div.input(1)
        sqrt = None if s is None else s.producer
        if sqrt is None or sqrt.kind != "SQRT" or scalar(div.input(0)) != 1.0:
            continue
        refusal = _refusal(graph, sqrt, div)
        if refusal:
            result.refuse_value(div, f"1 / SQRT stays: {refusal}")
            continue
        unsupported = targets.refusal(graph, "RSQRT")
        if unsupported:
            result.not_for_target(div, unsupported)
            continue
        collapse(graph, result, [sqrt, div], [sqrt.input(0)], "RSQRT")
    return result


def _refusal(graph: Graph, sqrt: Op, div: Op) -> str | None:
    x, s, y = sqrt.input(0), sqrt.outputs[0], div.outputs[0]
    if x is None:
        return "the SQRT has no input"
    if div.fused_activation != "NONE":
        return f"the DIV's fused {div.fused_activation} would be lost"
    if only_reader(graph, s) is not div:
        return "the SQRT's output is read elsewhere or is a graph output"
    if not all(is_plain_float(t) for t in (x, s, y)) or not (x.signature == s.signature == y.signature):
        return "x, the SQRT and the DIV are not float32 of one shape"
    return None
