"""fold_quantize: a QUANTIZE of a float32 constant to int8 or uint8 becomes the quantized constant
(the PT2E export keeps every weight as float32 -> QUANTIZE -> DEQUANTIZE, quantizing the weights on
every run: litert-torch #179, LiteRT #60).

    before:  w [float32 const] -> QUANTIZE -> q [int8, per channel] -> DEQUANTIZE -> ...
    after:   q [int8 const, per channel] -> DEQUANTIZE -> ...

Exact for every kernel that could run the QUANTIZE: each integer is round(w / s_c) + z_c clamped to
the type, and LiteRT's kernels differ only in how they form the quotient (float32 or double
division, a multiply by 1/s, the zero point added before rounding in float32) and how they round
a tie (away from zero in the builtin kernels, to even in XNNPACK). Each way is within three
float32 roundings of the exact quotient: 3·2^-24·(|w / s| + |z|). An element whose exact quotient
(float64) lies farther than 2^-22·(|w / s| + |z| + 1) from a half rounds to the same integer
under all of them; one that lies nearer (a tie, or nearly one: about one weight in a million) is
where they could part (unless both neighbours clamp to the same end of the type: PT2E's largest
weight sits at 127.5 steps), and the fold is refused with the count. Only 8-bit types (int16 is left to
the runtime). Guards: q is no model output; per-tensor or per-channel parameters whose axis exists;
finite constants.
"""

from __future__ import annotations

import numpy as np

from ..engine.constfold import make_constant
from ..engine.report import PassResult
from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Graph, Op

KINDS = frozenset({"QUANTIZE"})
TYPES = frozenset({"INT8", "UINT8"})
TIE_MARGIN = 2.0**-22  # times (|quotient| + |zero point| + 1): how far from a half a folded quotient must be


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        w, q = op.input(0), op.outputs[0]
        if w is None or not w.is_const or w.dtype != "FLOAT32" or w.is_quantized:
            continue
        values = _quantized(graph, op)
        if isinstance(values, str):
            result.refuse_value(op, f"QUANTIZE of a constant kept: {values}")
            continue
        result.fold(op, [op], into=[], constants=[q.name], dtype=q.dtype)
        graph.remove_op(op)
        make_constant(q, values)
    return result


def _quantized(graph: Graph, op: Op) -> np.ndarray | str:
    """The integers the QUANTIZE computes, or why they are not known for every kernel."""
    w, q = op.inputs[0], op.outputs[0]
    assert w is not None
    if graph.is_observed(q):
        return f"{q.name!r} is a model output"
    if q.dtype not in TYPES:
        return f"{q.name!r} is {q.dtype}: only 8-bit quantization is folded (small quotients, small rounding errors)"
    if -1 in q.signature or tuple(q.shape) != tuple(w.shape):
        return f"{q.name!r} has no static shape of the constant's"
    quantization = q.quantization
    scale = np.asarray(getattr(quantization, "scale", None), np.float64).reshape(-1)
    zeros = getattr(quantization, "zeroPoint", None)
    zero = np.asarray([0] * scale.size if zeros is None or len(zeros) == 0 else zeros, np.int64).reshape(-1)
    data = w.const_data.astype(np.float64)
    if scale.size == 0 or not np.all(scale > 0) or not np.all(np.isfinite(data)):
        return "its scale or values are not finite and positive"
    axis = int(getattr(quantization, "quantizedDimension", 0) or 0)
    shape = [1] * data.ndim
    if scale.size > 1:
        if axis >= data.ndim or data.shape[axis] != scale.size:
            return f"{scale.size} scales do not match axis {axis} of {list(data.shape)}"
        shape[axis] = scale.size
    if zero.size not in (1, scale.size):
        return "its zero points do not match its scales"
    quotient = data / scale.reshape(shape)
    info = np.iinfo(NUMPY_DTYPES[q.dtype])
    offset = zero.reshape(shape if zero.size > 1 else [1] * data.ndim)
    low = np.floor(quotient + offset)  # a tie lies between low and low + 1: harmless where both clamp alike
    inside = (low < info.max) & (low + 1 > info.min)
    distance = np.abs(np.abs(quotient - np.trunc(quotient)) - 0.5)
    near = inside & (distance < TIE_MARGIN * (np.abs(quotient) + np.abs(offset) + 1))
    if np.any(near):
        return (
            f"{int(near.sum())} of its values lie at a half step (within kernels' rounding), where kernels round apart"
        )
    rounded = np.sign(quotient) * np.floor(np.abs(quotient) + 0.5) + offset
    return np.clip(rounded, info.min, info.max).astype(NUMPY_DTYPES[q.dtype])
