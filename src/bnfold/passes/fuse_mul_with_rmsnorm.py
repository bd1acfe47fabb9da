"""fuse_mul_with_rmsnorm: a MUL by a constant after an RMS_NORM becomes part of its γ (ONE's pass of
that name, ONE #15891: the γ multiply Llama's exporters write after the norm was left unfused).

    before:  x -> RMS_NORM(γ, ε) -> n -> MUL(n, w) -> y        after:  x -> RMS_NORM(γ·w, ε) -> y

Algebra: (x·γ/rms)·w = x·(γ·w)/rms, elementwise along the last axis. ONE takes only γ = 1.0 (one
element), where γ·w = w bit for bit and the result is exact; any other constant γ is taken here too:
γ·w is computed once in float64 and rounded to float32, which moves the result by float rounding
only (one rounding of γ·w instead of one of the product).

Guards: the MUL has no fused activation (RMS_NORM has none); w is a float32 constant of C values
([C] or [1, .., C]) or one, not quantized, C the last axis; γ a constant of C values or one; the
RMS_NORM's output is read only by the MUL and is no graph output; both float32. A candidate refused
says why in the report's `not_folded`.
"""

from __future__ import annotations

import numpy as np

from ..engine.match import const_operand, float_const, is_plain_float, only_reader
from ..engine.report import PassResult
from ..ir.graph import Graph, Op


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for norm in [op for op in graph.ops if op.kind == "RMS_NORM"]:
        mul = only_reader(graph, norm.outputs[0])
        pair = None if mul is None or mul.kind != "MUL" else const_operand(mul)
        if mul is None or pair is None or pair[1] is not norm.outputs[0]:
            continue
        gamma = _fused_gamma(norm, mul, pair[0])
        if isinstance(gamma, str):
            result.refuse_value(mul, f"the MUL stays after the RMS_NORM: {gamma}")
            continue
        _fuse(graph, result, norm, mul, gamma)
    return result


def _per_channel(data: np.ndarray | None, c: int) -> np.ndarray | None:
    if data is None or c < 1 or (data.size != 1 and (data.size != c or data.shape[-1] != c)):
        return None
    return data.reshape(-1).astype(np.float64)


def _fused_gamma(norm: Op, mul: Op, w: object) -> np.ndarray | str:
    """γ·w as C values (or one), or why the MUL cannot join the RMS_NORM."""
    y = mul.outputs[0]
    c = y.shape[-1] if y.shape else 0
    if mul.fused_activation != "NONE":
        return f"its fused {mul.fused_activation} has no place in RMS_NORM"
    if not is_plain_float(norm.outputs[0]) or not is_plain_float(y) or y.signature != norm.outputs[0].signature:
        return "not float32, or the constant broadcasts the output to another shape"
    weights = _per_channel(float_const(w), c)  # type: ignore[arg-type]
    gamma = _per_channel(float_const(norm.input(1)), c)
    if weights is None:
        return "the constant is not one value per element of the last axis"
    if gamma is None:
        return "the RMS_NORM's γ is not a constant of one value per element of the last axis"
    fused = (gamma * weights).astype(np.float32)
    return fused if np.all(np.isfinite(fused)) else "γ·w would not be finite in float32"


def _fuse(graph: Graph, result: PassResult, norm: Op, mul: Op, gamma: np.ndarray) -> None:
    y = mul.outputs[0]
    g = graph.add_const(graph.unique_name(f"{y.name}/gamma"), gamma)
    x = norm.input(0)
    result.fold(mul, [norm, mul], into=[])
    graph.remove_op(mul)
    graph.remove_op(norm)
    result.made(graph.add_op(norm.opcode, [x, g], [y], norm.options_with(), after=mul))
