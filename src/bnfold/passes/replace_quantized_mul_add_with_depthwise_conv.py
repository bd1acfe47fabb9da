"""replace_quantized_mul_add_with_depthwise_conv: LOSSY. A batch norm left in an integer graph, MUL
by a per-channel int8 constant then ADD of one (the TFLite converter's full-int8 ResNetV2 keeps
its 17 pre-activation batch norms so), becomes one int8 1x1 DEPTHWISE_CONV_2D whose weights and
bias are quantized from the constants' real values.

    before:  x [N,H,W,C int8 s_x z_x] -> MUL(γ int8 [C]) -> m [int8] -> ADD(β int8 [C], act) -> y [int8 s_y z_y]
    after:   x -> DEPTHWISE_CONV_2D(1x1, w [1,1,1,C] int8 per channel, b [C] int32, act) -> y

The real function is y = act(γ_c·x + β_c) either way. The weights hold γ_c exactly up to float32:
w_c = ±127 with the per-channel scale |γ_c| / 127; the bias is β_c in units of s_x·s_w,c (int32,
rounded once: at most half of that unit, far below a step of y). What changes is the rounding:
LiteRT rounds the MUL's result to m's scale, then the ADD rounds both operands and its sum to y's;
the depthwise conv rounds once, from its int32 accumulator to y. So y moves by about a step where
the original's roundings added up, and is closer to the real value. Never in the default set;
whenever it changes a model, bnfold measures the output error (values/lossy.py, in quantization
steps at quantized outputs) and the fold records the operators it saved.

Guards: MUL without a fused activation; int8 per-tensor x, m, y and constants varying along the
last axis only (4-D x); m read by the ADD alone and no model output; an activation quantized
kernels clamp to; the bias within int32.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import const_operand, pointwise_depthwise_options
from ..engine.quantization import per_tensor, quantization_like
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import ACTIVATION_BOUNDS, LAYERS

KINDS = frozenset({"MUL"})
LEVEL = 127  # |w_c|: the int8 weight holding γ_c, at full resolution


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for mul in [op for op in graph.ops if op.kind == "MUL"]:
        match = _match(graph, mul)
        if match is None:
            continue
        add, x, gamma, beta = match
        y = add.outputs[0]
        unsupported = targets.refusal(
            graph, "DEPTHWISE_CONV_2D", add.fused_activation, rank=len(y.shape), dtype=y.dtype
        )
        if unsupported:
            result.not_for_target(mul, unsupported)
            continue
        problem = _refusal(graph, mul, add, x, gamma, beta)
        if isinstance(problem, str):
            result.refuse_value(mul, f"MUL -> ADD kept: {problem}")
            continue
        weights, scales, bias = problem
        result.fold(
            mul,
            [mul, add],
            lossy=True,
            output=y.name,
            saved_operators=1,
            weight_scales=scales,
        )
        _replace(graph, mul, add, x, weights, scales, bias)
    return result


def _match(graph: Graph, mul: Op) -> tuple[Op, Tensor, Tensor, Tensor] | None:
    """(ADD, x, γ, β) of MUL(x, γ) -> ADD(·, β), constants on either side; None if not that shape."""
    pair = const_operand(mul)
    if pair is None or not mul.outputs[0].is_quantized:
        return None
    gamma, x = pair
    readers = graph.consumers(mul.outputs[0])
    if len(readers) != 1 or readers[0].kind != "ADD":
        return None
    add = readers[0]
    other = const_operand(add)
    if other is None or other[1] is not mul.outputs[0]:
        return None
    return add, x, gamma, other[0]


def _refusal(
    graph: Graph, mul: Op, add: Op, x: Tensor, gamma: Tensor, beta: Tensor
) -> str | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Why not, or (int8 weights [1,1,1,C], their scales, int32 bias)."""
    m, y = mul.outputs[0], add.outputs[0]
    if mul.fused_activation != "NONE":
        return f"the MUL has a fused {mul.fused_activation}"
    if add.fused_activation not in ACTIVATION_BOUNDS:
        return f"a quantized layer does not clamp its {add.fused_activation} activation to a range"
    if graph.is_observed(m):
        return f"{m.name!r} is a model output"
    if len(x.shape) != 4 or x.shape[3] < 1:
        return f"{x.name!r} is not a 4-D NHWC tensor"
    params = [per_tensor(t) for t in (x, m, y, gamma, beta)]
    for p in params:
        if isinstance(p, str):
            return p
    if any(p.dtype != "INT8" for p in params if not isinstance(p, str)):
        return "not every tensor is int8"
    channels = x.shape[3]
    values = []
    for c, p in ((gamma, params[3]), (beta, params[4])):
        assert not isinstance(p, str)
        per_channel = _per_channel(c, channels)
        if per_channel is None:
            return f"{c.name!r} varies along another axis than the channels"
        values.append(float(p.scale) * (per_channel - p.zero_point))
    g, b = values
    scales = np.where(g != 0, np.abs(g) / LEVEL, 1.0).astype(np.float32)
    weights = np.where(g > 0, LEVEL, np.where(g < 0, -LEVEL, 0)).astype(np.int8).reshape(1, 1, 1, channels)
    x_scale = params[0].scale  # type: ignore[union-attr]
    unit = np.float64(x_scale) * scales.astype(np.float64)
    bias = np.round(b / unit)
    if np.any(np.abs(bias) > np.iinfo(np.int32).max):
        return f"the shift does not fit an int32 bias in units of {float(unit.min()):.3g}"
    return weights, scales, bias.astype(np.int32)


def _per_channel(t: Tensor, channels: int) -> np.ndarray | None:
    """The constant's integers as one per channel (float64), when it varies along the last axis only."""
    data = t.const_data.astype(np.float64)
    if data.ndim > 4 or any(d != 1 for d in data.shape[:-1]) or data.shape and data.shape[-1] not in (1, channels):
        return None
    return np.broadcast_to(data.reshape(-1), (channels,)).copy()


def _replace(
    graph: Graph, mul: Op, add: Op, x: Tensor, weights: np.ndarray, scales: np.ndarray, bias: np.ndarray
) -> None:
    y, name = add.outputs[0], add.outputs[0].name
    channels = len(scales)
    template = x.quantization
    w = graph.add_const(f"{name}/dw_weights", weights, "INT8")
    w.quantization = quantization_like(template, scales, [0] * channels, axis=3)
    b = graph.add_const(f"{name}/dw_bias", bias, "INT32")
    x_scale = float(np.asarray(x.quantization.scale).reshape(-1)[0])
    b.quantization = quantization_like(template, np.float32(x_scale) * scales, [0] * channels, axis=0)
    options = pointwise_depthwise_options(add.fused_activation)
    version = LAYERS["DEPTHWISE_CONV_2D"].version_for("int8")
    graph.add_op("DEPTHWISE_CONV_2D", [x, w, b], [y], options, after=add, version=version)
    graph.remove_op(add)
    graph.remove_op(mul)
