"""Integer-quantized kernels of the reference interpreter, bit-exact with LiteRT's builtin ones.

TFLite's integer semantics (its quantization spec): real = scale * (q - zero_point). A kernel
computes an int32 accumulator from zero-point-corrected integers, then requantizes it:
  out = clamp(zp_out + MBQM(acc, M, shift), act_min, act_max)
where (M, shift) = quantize_multiplier(real_multiplier) and MBQM (_rescale) rounds the way the
LiteRT 2.3 builtin kernel ("plain" resolver) does, measured against it on random models:
- "double" (gemmlowp): a rounding doubling high multiply, then a rounding right shift, both
  rounding ties away from zero. ADD, SUB, MUL, RELU, RELU6 (and every "reference" kernel).
- "upward" (ruy, which runs CONV_2D and FULLY_CONNECTED; and QUANTIZE from integers): the same
  two roundings, ties upward.
Neither is TFLITE_SINGLE_ROUNDING's one 64-bit rounding, which disagrees with both.
Integer DEPTHWISE_CONV_2D is refused: LiteRT's optimized kernel mixes the two modes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.const import NUMPY_DTYPES
from ..ir.ops import ACTIVATION_BOUNDS
from ..ir.ops import FUSED_ACTIVATIONS as ACTIVATIONS
from .kernels import UnsupportedOperator, conv_nd, k_reshape, opt, per_axis, positive, quant_params, windows

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def quantize_multiplier(real) -> tuple[np.ndarray, np.ndarray]:
    """(M, shift) with real = M * 2**(shift - 31), M a Q31 int in [2**30, 2**31) (or 0).

    frexp gives real = q * 2**shift with q in [0.5, 1); M = round-half-away(q * 2**31); if that
    rounds up to 2**31, M halves and shift grows by one; a shift below -31 means M = shift = 0.
    """
    q, shift = np.frexp(np.asarray(real, np.float64))
    m = np.floor(np.abs(q) * (1 << 31) + 0.5).astype(np.int64) * np.where(q < 0, -1, 1)
    carry = m == (1 << 31)
    m, shift = np.where(carry, m // 2, m), np.where(carry, shift + 1, shift).astype(np.int64)
    tiny = shift < -31
    return np.where(tiny, 0, m), np.where(tiny, 0, shift)


def _wrap32(x: np.ndarray) -> np.ndarray:
    """Two's-complement int32 wrap-around of int64 values (C int32 overflow as LiteRT builds it)."""
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def _rounding_shift(x: np.ndarray, exponent) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2**exponent rounded to nearest, ties away from zero."""
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def _rescale(acc: np.ndarray, m, shift, rounding: str = "double") -> np.ndarray:
    """MultiplyByQuantizedMultiplier(acc, M, shift) on int64 arrays holding int32 values.

    Double rounding: x = acc * 2**max(shift, 0) (wrapping int32); h = SaturatingRoundingDoubling-
    HighMul(x, M) = (x*M + (2**30 if x*M >= 0 else 1 - 2**30)) / 2**31 truncated toward zero
    (INT32_MAX for x = M = INT32_MIN); result = RoundingDivideByPOT(h, max(-shift, 0)).
    Upward: h = (x*M + 2**30) >> 31; result = (h + 2**(r - 1)) >> r for r = max(-shift, 0) > 0.
    """
    acc, m, shift = np.asarray(acc, np.int64), np.asarray(m, np.int64), np.asarray(shift, np.int64)
    if rounding == "upward":
        x = _wrap32(acc << np.maximum(shift, 0))
        high = (x * m + (1 << 30)) >> 31
        right = np.maximum(-shift, 0)
        return (high + np.where(right > 0, np.int64(1) << np.maximum(right - 1, 0), 0)) >> right
    x = _wrap32(acc << np.maximum(shift, 0))
    ab = x * m
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))
    high = np.where((x == INT32_MIN) & (m == INT32_MIN), INT32_MAX, high)
    return _rounding_shift(high, np.maximum(-shift, 0))


def _qrange(t, fused: str) -> tuple[int, int]:
    """TFLite's activation range in the output's integers: the dtype's range intersected with
    zp + round-half-away(float32(bound / scale)) of the activation's real bounds."""
    info = np.iinfo(NUMPY_DTYPES[t.dtype])
    lo, hi = int(info.min), int(info.max)
    scale, zero, _ = quant_params(t)
    bounds = ACTIVATION_BOUNDS
    if fused not in bounds:
        raise UnsupportedOperator(f"reference interpreter cannot run a quantized {fused} activation")

    def q(f):
        v = np.float32(f) / scale[0]
        return int(zero[0]) + int(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)))

    b_lo, b_hi = bounds[fused]
    if b_lo is not None:
        lo = max(lo, q(b_lo))
    if b_hi is not None:
        hi = min(hi, q(b_hi))
    return lo, hi


def _requantize(acc, m, shift, out_t, fused="NONE", rounding="double") -> np.ndarray:
    """clamp(zp_out + MBQM(acc, M, shift), activation range) as the output's dtype."""
    _, zero, _ = quant_params(out_t)
    lo, hi = _qrange(out_t, fused)
    return np.clip(_rescale(acc, m, shift, rounding) + zero[0], lo, hi).astype(NUMPY_DTYPES[out_t.dtype])


def _centered(x: np.ndarray, t) -> np.ndarray:
    """x - zero_point (per-axis zero points broadcast along the quantized dimension), as float64
    so that convolutions can use BLAS: every int32 accumulator is exact in a float64."""
    _, zero, axis = quant_params(t)
    return x.astype(np.float64) - per_axis(zero, axis, x.ndim)


def _conv_multipliers(op, x_t, w_t, out_t, channels: int):
    """Per output channel (M, shift) of input_scale * filter_scale[c] / output_scale (in double)."""
    s_in, s_w, s_out = quant_params(x_t)[0][0], quant_params(w_t)[0], quant_params(out_t)[0][0]
    s_w = np.broadcast_to(s_w, (channels,)) if s_w.size == 1 else s_w
    return quantize_multiplier(np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out))


def _accumulated(acc: np.ndarray, bias) -> np.ndarray:
    acc = np.rint(acc).astype(np.int64)
    return acc if bias is None else acc + bias.astype(np.int64)


def _check_integer(op, index, *tensors):
    for t in tensors:
        if t is not None and (not t.is_quantized or t.dtype != "INT8"):
            raise UnsupportedOperator(
                f"reference interpreter cannot run quantized {op.kind} with "
                f"{t.dtype}{'' if t.is_quantized else ' unquantized'} tensor {t.name!r} (op {index})"
            )


def q_conv_2d(interp, op, index, args):
    """acc[c] = sum (x - x_zp)(w - w_zp) + bias[c] (int32); per-channel requantization."""
    x_t, w_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
    _check_integer(op, index, x_t, w_t, out_t)
    bias = args[2] if len(args) > 2 else None
    strides = positive(op, index, "strideH", "strideW")
    dilations = positive(op, index, "dilationHFactor", "dilationWFactor")
    filt = np.transpose(_centered(args[1], w_t), (1, 2, 3, 0))
    acc = conv_nd(_centered(args[0], x_t), filt, None, strides, dilations, opt(op, "padding", 0))
    m, shift = _conv_multipliers(op, x_t, w_t, out_t, filt.shape[-1])
    fused = ACTIVATIONS[opt(op, "fusedActivationFunction", 0)]
    return [_requantize(_accumulated(acc, bias), m, shift, out_t, fused, "upward")]


def q_fully_connected(interp, op, index, args):
    x_t, w_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
    _check_integer(op, index, x_t, w_t, out_t)
    if opt(op, "weightsFormat", 0) != 0:
        raise UnsupportedOperator(f"reference interpreter cannot run {op.kind} with shuffled weights (op {index})")
    bias = args[2] if len(args) > 2 else None
    x, w = _centered(args[0], x_t), _centered(args[1], w_t)
    o, i = w.shape
    acc = x.reshape(-1, i) @ w.T
    m, shift = _conv_multipliers(op, x_t, w_t, out_t, o)
    fused = ACTIVATIONS[opt(op, "fusedActivationFunction", 0)]
    out = _requantize(_accumulated(acc, bias), m, shift, out_t, fused, "upward")
    return [out.reshape(*x.shape[:-1], o) if opt(op, "keepNumDims", False) else out]


def _int16_safe(op, index, bound):
    """LiteRT's vectorized ADD/SUB/MUL narrow the rescaled result to int16 (saturating) and add
    the output zero point in int16 (wrapping), its scalar tail does not; the two agree only when
    |result| + 128 stays in int16, so a model whose scales allow more is refused."""
    if bound + 130 >= 1 << 15:
        raise UnsupportedOperator(
            f"reference interpreter cannot run quantized {op.kind} whose input/output "
            f"scales allow results beyond int16 (op {index})"
        )


def _q_add_sub(sign):
    def kernel(interp, op, index, args):
        """Each input: (x - zp) * 2**20, rescaled by s_i / (2 max(s1, s2)); the sum (difference)
        rescaled by 2 max(s1, s2) / (2**20 s_out); + zp_out, clamped."""
        a_t, b_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
        _check_integer(op, index, a_t, b_t, out_t)
        (sa, za, _), (sb, zb, _), (so, _, _) = quant_params(a_t), quant_params(b_t), quant_params(out_t)
        _int16_safe(op, index, 256 * (np.float64(sa[0]) + np.float64(sb[0])) / np.float64(so[0]))
        twice_max = np.float64(2 * max(sa[0], sb[0]))
        left = 20
        ma, sha = quantize_multiplier(np.float64(sa[0]) / twice_max)
        mb, shb = quantize_multiplier(np.float64(sb[0]) / twice_max)
        mo, sho = quantize_multiplier(twice_max / np.float64(np.float32((1 << left) * so[0])))
        a = _rescale((args[0].astype(np.int64) - za[0]) << left, ma, sha)
        b = _rescale((args[1].astype(np.int64) - zb[0]) << left, mb, shb)
        fused = ACTIVATIONS[opt(op, "fusedActivationFunction", 0)]
        return [_requantize(a + sign * b, mo, sho, out_t, fused)]

    return kernel


def q_mul(interp, op, index, args):
    """(a - zp_a)(b - zp_b) rescaled by s_a s_b / s_out; + zp_out, clamped."""
    a_t, b_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
    _check_integer(op, index, a_t, b_t, out_t)
    (sa, za, _), (sb, zb, _), (so, _, _) = quant_params(a_t), quant_params(b_t), quant_params(out_t)
    real = np.float64(sa[0]) * np.float64(sb[0]) / np.float64(so[0])
    _int16_safe(op, index, 256 * 256 * real)
    m, shift = quantize_multiplier(real)
    prod = (args[0].astype(np.int64) - za[0]) * (args[1].astype(np.int64) - zb[0])
    fused = ACTIVATIONS[opt(op, "fusedActivationFunction", 0)]
    return [_requantize(prod, m, shift, out_t, fused)]


def _q_relu(fused):
    def kernel(interp, op, index, args):
        """(x - zp_in) rescaled by s_in / s_out; + zp_out, clamped to the activation's range."""
        x_t, out_t = op.inputs[0], op.outputs[0]
        _check_integer(op, index, x_t, out_t)
        (si, zi, _), (so, _, _) = quant_params(x_t), quant_params(out_t)
        m, shift = quantize_multiplier(np.float64(si[0]) / np.float64(so[0]))
        return [_requantize(args[0].astype(np.int64) - zi[0], m, shift, out_t, fused)]

    return kernel


def _q_pool(kind):
    def kernel(interp, op, index, args):
        """Max, or the in-bounds sum divided by the in-bounds count rounding half away from zero;
        clamped to the fused activation's range (input and output share scale and zero point)."""
        x_t, out_t = op.inputs[0], op.outputs[0]
        _check_integer(op, index, x_t, out_t)
        x = args[0].astype(np.int64)
        k = positive(op, index, "filterHeight", "filterWidth")
        s = positive(op, index, "strideH", "strideW")
        padding = opt(op, "padding", 0)
        if kind == "max":
            out = windows(x, k, s, (1, 1), padding, fill=INT32_MIN).max(axis=(3, 4))
        else:
            total = windows(x, k, s, (1, 1), padding).sum(axis=(3, 4))
            count = windows(np.ones((1, *x.shape[1:3], 1), np.int64), k, s, (1, 1), padding).sum(axis=(3, 4))
            half = count // 2
            num = np.where(total > 0, total + half, total - half)
            out = np.sign(num) * (np.abs(num) // count)  # C division truncates toward zero
        lo, hi = _qrange(out_t, ACTIVATIONS[opt(op, "fusedActivationFunction", 0)])
        return [np.clip(out, lo, hi).astype(NUMPY_DTYPES[out_t.dtype])]

    return kernel


def q_requantize(interp, op, index, args):
    """QUANTIZE from integers (LiteRT's Requantize): (x - zp_in) rescaled by s_in / s_out, + zp_out,
    clamped to the output's dtype; ties round upward (ties away from zero disagreed with LiteRT on
    1 of every few values: tests/check/test_reference_interpreter.py)."""
    x_t, out_t = op.inputs[0], op.outputs[0]
    for t in (x_t, out_t):
        if not t.is_quantized or t.dtype not in ("INT8", "UINT8") or quant_params(t)[0].size != 1:
            raise UnsupportedOperator(
                f"reference interpreter cannot requantize {t.dtype} tensor {t.name!r} (op {index}): "
                "per-tensor INT8/UINT8 only"
            )
    (si, zi, _), (so, _, _) = quant_params(x_t), quant_params(out_t)
    m, shift = quantize_multiplier(np.float64(si[0]) / np.float64(so[0]))
    return [_requantize(args[0].astype(np.int64) - zi[0], m, shift, out_t, rounding="upward")]


QUANTIZED_KERNELS: dict[str, Callable] = {
    "CONV_2D": q_conv_2d,
    "FULLY_CONNECTED": q_fully_connected,
    "ADD": _q_add_sub(1),
    "SUB": _q_add_sub(-1),
    "MUL": q_mul,
    "RELU": _q_relu("RELU"),
    "RELU6": _q_relu("RELU6"),
    "MAX_POOL_2D": _q_pool("max"),
    "AVERAGE_POOL_2D": _q_pool("avg"),
    "RESHAPE": k_reshape,
    "QUANTIZE": q_requantize,
}
