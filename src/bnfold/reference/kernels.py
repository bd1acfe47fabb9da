"""Float kernels of the reference interpreter (and the helpers the quantized ones share).

Float models compute in float32, like LiteRT's float kernels; convolutions are im2col + one
matrix product (or one product per kernel tap), never a Python loop over pixels, so a
ResNet50-sized model runs in seconds.

Semantics that must match TFLite exactly:
- SAME padding: out = ceil(in / stride), pad_total = max((out - 1) * stride + (k - 1) * dilation
  + 1 - in, 0), pad_before = pad_total // 2 (the odd pixel goes after).
- TRANSPOSE_CONV: the padding is computed from the *output* size as if it were a convolution's
  input, the input is scattered with the stride, and the result is cropped at pad_before.
- AVERAGE_POOL_2D divides by the number of in-bounds pixels (padding is not counted).
- DEPTHWISE_CONV_2D output channel c * M + m reads input channel c (M = depth multiplier).

Each kernel is f(interp, op, index, args) -> list of outputs; args are the input arrays (None
for an absent optional input).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import CannotVerify, ModelError, RunFailed
from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Op
from ..ir.ops import FUSED_ACTIVATIONS as ACTIVATIONS
from ..ir.shapes import out_size, pads

# A WHILE loop that runs longer is taken to never end (documented in the README).
MAX_WHILE_ITERATIONS = 100_000


class UnsupportedOperator(RunFailed):
    """The reference interpreter has no kernel for an operator (or for its input types)."""


# ---- helpers ---------------------------------------------------------------------------------


def opt(op: Op, name: str, default):
    """An option field, or `default` when the op has no options or the field is absent/None."""
    value = getattr(op.options, name, None) if op.options is not None else None
    return default if value is None else value


def positive(op: Op, index: int, *names: str) -> tuple[int, ...]:
    """Stride/dilation/filter-size options, which must be >= 1 (absent means 1)."""
    values = tuple(int(opt(op, n, 1)) for n in names)
    for n, v in zip(names, values):
        if v < 1:
            raise ModelError(f"{op.kind} (op {index}) has {n} = {v}")
    return values


def activation(x: np.ndarray, name: str) -> np.ndarray:
    """A fused activation function by name (ir.ops.FUSED_ACTIVATIONS)."""
    if name == "NONE":
        return x
    if name == "RELU":
        return np.maximum(x, 0).astype(x.dtype, copy=False)
    if name == "RELU6":
        return np.clip(x, 0, 6).astype(x.dtype, copy=False)
    if name == "RELU_N1_TO_1":
        return np.clip(x, -1, 1).astype(x.dtype, copy=False)
    if name == "TANH":
        return np.tanh(x)
    if name == "SIGN_BIT":
        return np.signbit(x).astype(x.dtype)
    raise ValueError(name)


def fused(op: Op, x: np.ndarray) -> np.ndarray:
    value = opt(op, "fusedActivationFunction", 0)
    return activation(x, ACTIVATIONS[value])


def windows(x: np.ndarray, kernel, strides, dilations, padding: int, fill=0.0) -> np.ndarray:
    """Sliding windows of x [N, *spatial, C] as a view/array [N, *out, *kernel, C].

    Pads with `fill` according to `padding` (0 SAME, 1 VALID), then takes strided windows.
    """
    spatial = x.shape[1:-1]
    before_after = [pads(s, k, st, d, padding) for s, k, st, d in zip(spatial, kernel, strides, dilations)]
    if any(b or a for b, a in before_after):
        x = np.pad(x, [(0, 0)] + before_after + [(0, 0)], constant_values=fill)
    outs = [out_size(s, k, st, d, padding) for s, k, st, d in zip(spatial, kernel, strides, dilations)]
    st = x.strides
    shape = (x.shape[0], *outs, *kernel, x.shape[-1])
    strides_ = (
        st[0],
        *(st[1 + i] * strides[i] for i in range(len(kernel))),
        *(st[1 + i] * dilations[i] for i in range(len(kernel))),
        st[-1],
    )
    return as_strided(x, shape=shape, strides=strides_, writeable=False)


def float32_only(x: np.ndarray, op: Op, index: int) -> np.ndarray:
    if x.dtype != np.float32:
        raise UnsupportedOperator(f"reference interpreter cannot run {op.kind} on {x.dtype} data (op {index})")
    return x


# ---- kernels ---------------------------------------------------------------------------------
# Each kernel is f(interp, op, index, args) -> list of outputs; args are the input arrays
# (None for an absent optional input).


def conv_nd(x, w, bias, strides, dilations, padding):
    """N-d convolution. x [N, *S, C]; w [*K, I, O] with C = I * groups; out [N, *S', O]."""
    kernel = w.shape[:-2]
    cin, cout = w.shape[-2], w.shape[-1]
    groups = x.shape[-1] // cin
    if all(k == 1 for k in kernel) and all(s == 1 for s in strides):
        cols = x.reshape(*x.shape[:-1], *([1] * len(kernel)), x.shape[-1])  # 1x1, stride 1: no windows
    else:
        cols = windows(x, kernel, strides, dilations, padding)
    lead = cols.shape[: 1 + len(kernel)]
    if groups == 1:
        mat = np.ascontiguousarray(cols).reshape(-1, int(np.prod(kernel)) * cin)
        out = mat @ w.reshape(-1, cout)
    else:
        per = cout // groups
        parts = []
        for g in range(groups):
            c = np.ascontiguousarray(cols[..., g * cin : (g + 1) * cin]).reshape(-1, int(np.prod(kernel)) * cin)
            parts.append(c @ w[..., g * per : (g + 1) * per].reshape(-1, per))
        out = np.concatenate(parts, axis=-1)
    out = out.reshape(*lead, cout)
    if bias is not None:
        out += bias
    return out


def k_conv_2d(interp, op, index, args):
    x, w, bias = float32_only(args[0], op, index), float32_only(args[1], op, index), args[2] if len(args) > 2 else None
    strides = positive(op, index, "strideH", "strideW")
    dilations = positive(op, index, "dilationHFactor", "dilationWFactor")
    filt = np.transpose(w, (1, 2, 3, 0))  # OHWI -> HWIO
    return [fused(op, conv_nd(x, filt, bias, strides, dilations, opt(op, "padding", 0)))]


def k_conv_3d(interp, op, index, args):
    x, w, bias = float32_only(args[0], op, index), float32_only(args[1], op, index), args[2] if len(args) > 2 else None
    strides = positive(op, index, "strideD", "strideH", "strideW")
    dilations = positive(op, index, "dilationDFactor", "dilationHFactor", "dilationWFactor")
    return [fused(op, conv_nd(x, w, bias, strides, dilations, opt(op, "padding", 0)))]


def k_depthwise_conv_2d(interp, op, index, args):
    """Loop over kernel taps only: out[..., c*M+m] += x_tap[..., c] * w[kh, kw, c*M+m]."""
    x, w, bias = float32_only(args[0], op, index), float32_only(args[1], op, index), args[2] if len(args) > 2 else None
    strides = positive(op, index, "strideH", "strideW")
    dilations = positive(op, index, "dilationHFactor", "dilationWFactor")
    out = _depthwise(x, w, strides, dilations, opt(op, "padding", 0))
    if bias is not None:
        out += bias
    return [fused(op, out)]


def _depthwise(x, w, strides, dilations, padding):
    """x [N, H, W, C], w [1, KH, KW, C*M] -> [N, OH, OW, C*M] in x's dtype, one product per tap."""
    _, kh, kw, cm = w.shape
    m = cm // x.shape[-1]
    cols = windows(x, (kh, kw), strides, dilations, padding)  # [N, OH, OW, KH, KW, C]
    if m > 1:
        cols = np.repeat(cols, m, axis=-1)
    out = np.zeros(cols.shape[:3] + (cm,), x.dtype)
    for i in range(kh):
        for j in range(kw):
            out += cols[:, :, :, i, j, :] * w[0, i, j]
    return out


def k_transpose_conv(interp, op, index, args):
    """Scatter input pixels through the filter with the stride, then crop at the TFLite padding."""
    shape, w, x = args[0], float32_only(args[1], op, index), float32_only(args[2], op, index)
    bias = args[3] if len(args) > 3 else None
    n, oh, ow, co = (int(v) for v in shape)
    _, kh, kw, ci = w.shape
    sh, sw = positive(op, index, "strideH", "strideW")
    padding = opt(op, "padding", 0)
    ph, pw = pads(oh, kh, sh, 1, padding)[0], pads(ow, kw, sw, 1, padding)[0]
    _, h, wd, _ = x.shape
    taps = (x.reshape(-1, ci) @ w.reshape(co * kh * kw, ci).T).reshape(n, h, wd, co, kh, kw)
    full_h = max((h - 1) * sh + kh, ph + oh)
    full_w = max((wd - 1) * sw + kw, pw + ow)
    full = np.zeros((n, full_h, full_w, co), np.float32)
    for i in range(kh):
        for j in range(kw):
            full[:, i : i + (h - 1) * sh + 1 : sh, j : j + (wd - 1) * sw + 1 : sw, :] += taps[..., i, j]
    out = full[:, ph : ph + oh, pw : pw + ow, :].copy()
    if bias is not None:
        out += bias
    return [fused(op, out)]


def k_conv_3d_transpose(interp, op, index, args):
    """CONV_3D_TRANSPOSE (filter D H W O I): each input voxel scattered through the filter with the
    stride and dilation, then cropped at the TFLite padding, as k_transpose_conv in three dims."""
    shape, w, x = args[0], float32_only(args[1], op, index), float32_only(args[2], op, index)
    bias = args[3] if len(args) > 3 else None
    n, *out_sizes, co = (int(v) for v in shape)
    *kernel, _, ci = w.shape
    strides = positive(op, index, "strideD", "strideH", "strideW")
    dilations = positive(op, index, "dilationDFactor", "dilationHFactor", "dilationWFactor")
    padding = opt(op, "padding", 0)
    sizes = x.shape[1:4]
    front = [pads(o, k, s, d, padding)[0] for o, k, s, d in zip(out_sizes, kernel, strides, dilations)]
    taps = x.reshape(-1, ci) @ np.moveaxis(w, 3, 0).reshape(co, -1, ci).reshape(-1, ci).T
    taps = taps.reshape(n, *sizes, co, *kernel)
    full = np.zeros(
        (
            n,
            *[
                max((i - 1) * s + (k - 1) * d + 1, f + o)
                for i, s, k, d, f, o in zip(sizes, strides, kernel, dilations, front, out_sizes)
            ],
            co,
        ),
        np.float32,
    )
    for tap in np.ndindex(*kernel):
        where = tuple(slice(t * d, t * d + (i - 1) * s + 1, s) for t, d, i, s in zip(tap, dilations, sizes, strides))
        full[(slice(None), *where)] += taps[(Ellipsis, *tap)]
    out = full[(slice(None), *(slice(f, f + o) for f, o in zip(front, out_sizes)))].copy()
    if bias is not None:
        out += bias
    return [fused(op, out)]


def k_fully_connected(interp, op, index, args):
    x, w, bias = float32_only(args[0], op, index), float32_only(args[1], op, index), args[2] if len(args) > 2 else None
    if opt(op, "weightsFormat", 0) != 0:
        raise UnsupportedOperator(f"reference interpreter cannot run {op.kind} with shuffled weights (op {index})")
    o, i = w.shape
    out = x.reshape(-1, i) @ w.T
    if bias is not None:
        out += bias
    if opt(op, "keepNumDims", False):
        out = out.reshape(*x.shape[:-1], o)
    return [fused(op, out)]


def _binary(fn):
    def kernel(interp, op, index, args):
        a, b = args[0], args[1]
        out = fn(a, b)
        return [fused(op, np.asarray(out, dtype=np.result_type(a, b)))]

    return kernel


def _comparison(fn):
    """A broadcasting comparison with a BOOL output (torch's x.any() compares with 0 first)."""
    return lambda interp, op, index, args: [fn(args[0], args[1])]


def k_cast(interp, op, index, args):
    """A cast to the output's type; float to integer truncates toward zero, as LiteRT's does."""
    dtype = NUMPY_DTYPES.get(op.outputs[0].dtype)
    if dtype is None:
        raise UnsupportedOperator(f"reference interpreter cannot cast to {op.outputs[0].dtype} (op {index})")
    with np.errstate(invalid="ignore", over="ignore"):
        return [args[0].astype(dtype)]


def _divide(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.trunc(a / b).astype(np.result_type(a, b))  # TFLite int DIV truncates
    return a / b


def _unary(fn):
    def kernel(interp, op, index, args):
        x = args[0]
        return [np.asarray(fn(x), dtype=x.dtype)]

    return kernel


def _logistic(x):
    with np.errstate(over="ignore"):  # exp(-x) of a very negative x is inf, and 1 / inf the 0 it should be
        return 1.0 / (1.0 + np.exp(-x))


def k_leaky_relu(interp, op, index, args):
    x = args[0]
    alpha = np.float32(opt(op, "alpha", 0.0))
    return [np.where(x >= 0, x, x * alpha).astype(x.dtype)]


def k_prelu(interp, op, index, args):
    x, alpha = args
    return [np.where(x >= 0, x, x * alpha).astype(x.dtype)]


def k_pad(interp, op, index, args):
    x, paddings = args[0], np.asarray(args[1]).reshape(-1, 2)
    value = args[2].reshape(()) if len(args) > 2 and args[2] is not None else 0
    return [np.pad(x, [(int(a), int(b)) for a, b in paddings], constant_values=value)]


def _axes(axis, rank):
    return tuple(sorted({int(a) % rank for a in np.asarray(axis).reshape(-1)}))


def _reducer(fn):
    def kernel(interp, op, index, args):
        x = args[0]
        out = fn(x, axis=_axes(args[1], x.ndim), keepdims=bool(opt(op, "keepDims", False)))
        return [np.asarray(out, dtype=x.dtype)]

    return kernel


def _pool(kind):
    def kernel(interp, op, index, args):
        x = float32_only(args[0], op, index)
        k = positive(op, index, "filterHeight", "filterWidth")
        s = positive(op, index, "strideH", "strideW")
        padding = opt(op, "padding", 0)
        if kind == "max":
            out = windows(x, k, s, (1, 1), padding, fill=-np.inf).max(axis=(3, 4))
        else:
            total = windows(x, k, s, (1, 1), padding).sum(axis=(3, 4), dtype=np.float32)
            ones = np.ones((1, *x.shape[1:3], 1), np.float32)
            count = windows(ones, k, s, (1, 1), padding).sum(axis=(3, 4))
            out = total / count
        return [fused(op, out.astype(np.float32))]

    return kernel


def _new_shape(shape, size):
    shape = [int(d) for d in shape]
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1])) if len(shape) > 1 else 1
        shape[shape.index(-1)] = size // known if known else 0
    return shape


def k_reshape(interp, op, index, args):
    x = args[0]
    if len(args) > 1 and args[1] is not None:
        shape = np.asarray(args[1]).reshape(-1)
    else:
        shape = opt(op, "newShape", None)
        if shape is None:
            shape = op.outputs[0].shape
    return [x.reshape(_new_shape(shape, x.size))]


def k_squeeze(interp, op, index, args):
    x = args[0]
    dims = opt(op, "squeezeDims", None)
    if dims is None or len(dims) == 0:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=_axes(dims, x.ndim))]


def k_expand_dims(interp, op, index, args):
    x, axis = args[0], int(np.asarray(args[1]).reshape(-1)[0])
    return [np.expand_dims(x, axis if axis >= 0 else axis + x.ndim + 1)]


def k_transpose(interp, op, index, args):
    return [np.ascontiguousarray(np.transpose(args[0], [int(p) for p in np.asarray(args[1]).reshape(-1)]))]


def k_concatenation(interp, op, index, args):
    arrays = [a for a in args if a is not None]
    axis = int(opt(op, "axis", 0)) % arrays[0].ndim
    return [fused(op, np.concatenate(arrays, axis=axis))]


def k_softmax(interp, op, index, args):
    x = float32_only(args[0], op, index)
    beta = np.float32(opt(op, "beta", 1.0))
    e = np.exp((x - x.max(axis=-1, keepdims=True)) * beta)
    return [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]


def k_log_softmax(interp, op, index, args):
    x = float32_only(args[0], op, index)
    shifted = x - x.max(axis=-1, keepdims=True)
    return [(shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))).astype(np.float32)]


def k_space_to_batch_nd(interp, op, index, args):
    """[B, *S, *R] -> pad S -> [B, S1/b1, b1, ...] -> [b1, b2, ..., B, S1/b1, ...] -> [B*prod(b), ...]."""
    x, block = args[0], [int(b) for b in np.asarray(args[1]).reshape(-1)]
    paddings = np.asarray(args[2]).reshape(-1, 2)
    m = len(block)
    x = np.pad(x, [(0, 0)] + [(int(a), int(b)) for a, b in paddings] + [(0, 0)] * (x.ndim - 1 - m))
    batch, spatial, rest = x.shape[0], x.shape[1 : 1 + m], x.shape[1 + m :]
    split = [batch]
    for s, b in zip(spatial, block):
        split += [s // b, b]
    x = x.reshape(*split, *rest)
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, x.ndim))
    x = x.transpose(order)
    return [
        np.ascontiguousarray(x).reshape(batch * int(np.prod(block)), *[s // b for s, b in zip(spatial, block)], *rest)
    ]


def k_batch_to_space_nd(interp, op, index, args):
    """The inverse of SPACE_TO_BATCH_ND, then crop."""
    x, block = args[0], [int(b) for b in np.asarray(args[1]).reshape(-1)]
    crops = np.asarray(args[2]).reshape(-1, 2)
    m = len(block)
    batch = x.shape[0] // int(np.prod(block))
    spatial, rest = x.shape[1 : 1 + m], x.shape[1 + m :]
    x = x.reshape(*block, batch, *spatial, *rest)
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, x.ndim))
    x = np.ascontiguousarray(x.transpose(order)).reshape(batch, *[s * b for s, b in zip(spatial, block)], *rest)
    index_ = (slice(None),) + tuple(slice(int(a), x.shape[1 + i] - int(b)) for i, (a, b) in enumerate(crops))
    return [np.ascontiguousarray(x[index_])]


def quant_params(tensor):
    q = tensor.quantization
    scale = np.asarray(q.scale, np.float32)
    zero = np.asarray(q.zeroPoint if q.zeroPoint is not None else np.zeros(len(scale)), np.int64)
    axis = int(getattr(q, "quantizedDimension", 0) or 0)
    return scale, zero, axis


def per_axis(values, axis, ndim):
    if values.size == 1:
        return values.reshape(())
    shape = [1] * ndim
    shape[axis] = values.size
    return values.reshape(shape)


def k_dequantize(interp, op, index, args):
    x = args[0]
    if x.dtype == np.float16:
        return [x.astype(np.float32)]
    if not op.inputs[0].is_quantized:
        raise UnsupportedOperator(f"reference interpreter cannot run DEQUANTIZE of unquantized {x.dtype} (op {index})")
    scale, zero, axis = quant_params(op.inputs[0])
    out = (x.astype(np.int64) - per_axis(zero, axis, x.ndim)).astype(np.float32) * per_axis(scale, axis, x.ndim)
    return [out.astype(np.float32)]


def k_quantize(interp, op, index, args):
    x = float32_only(args[0], op, index)
    out_t = op.outputs[0]
    if not out_t.is_quantized:
        raise UnsupportedOperator(f"reference interpreter cannot run QUANTIZE to an unquantized tensor (op {index})")
    scale, zero, axis = quant_params(out_t)
    dtype = NUMPY_DTYPES[out_t.dtype]
    q = x / per_axis(scale, axis, x.ndim)
    q = np.sign(q) * np.floor(np.abs(q) + 0.5) + per_axis(zero, axis, x.ndim)  # round half away from zero
    info = np.iinfo(dtype)
    return [np.clip(q, info.min, info.max).astype(dtype)]


def k_fake_quant(interp, op, index, args):
    """FAKE_QUANT as LiteRT computes it (reference_ops::FakeQuant), in float32: [min, max] nudged so
    that zero is one of the 2^num_bits levels (narrow_range drops the lowest), x clamped to it and
    rounded half away from zero to a level."""
    f32, x = np.float32, float32_only(args[0], op, index)
    low, high = f32(opt(op, "min", 0.0)), f32(opt(op, "max", 0.0))
    q_min, q_max = f32(1 if opt(op, "narrowRange", False) else 0), f32((1 << int(opt(op, "numBits", 8))) - 1)
    scale = (high - low) / (q_max - q_min)
    zero = q_min - low / scale
    zero = (
        min(max(zero, q_min), q_max) if not q_min <= zero <= q_max else f32(np.sign(zero) * np.floor(abs(zero) + 0.5))
    )
    nudged_min, nudged_max = (q_min - zero) * scale, (q_max - zero) * scale
    levels = (np.minimum(nudged_max, np.maximum(nudged_min, x)) - nudged_min) * (f32(1.0) / scale)
    return [((np.sign(levels) * np.floor(np.abs(levels) + f32(0.5))).astype(f32) * scale + nudged_min).astype(f32)]


def k_instance_norm(interp, op, index, args):
    """Circle INSTANCE_NORM over NHWC: normalize each (n, c) over H, W; then gamma, beta."""
    x, gamma, beta = float32_only(args[0], op, index), args[1], args[2]
    eps = np.float32(opt(op, "epsilon", 1e-5))
    axes = tuple(range(1, x.ndim - 1))
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float32)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True, dtype=np.float32)
    out = (x - mean) / np.sqrt(var + eps) * gamma.reshape(-1) + beta.reshape(-1)
    return [fused(op, out.astype(np.float32))]


def k_shape(interp, op, index, args):
    dtype = NUMPY_DTYPES.get(op.outputs[0].dtype, np.int32)
    return [np.asarray(args[0].shape, dtype=dtype)]


def k_while(interp, op, index, args):
    cond = interp.model.graphs[opt(op, "condSubgraphIndex", 0)]
    body = interp.model.graphs[opt(op, "bodySubgraphIndex", 0)]
    values = list(args)
    for _ in range(MAX_WHILE_ITERATIONS):
        if not bool(np.asarray(interp.run_graph(cond, values)[0]).reshape(-1)[0]):
            return values
        values = interp.run_graph(body, values)
    raise CannotVerify(
        f"WHILE (op {index}) did not stop after {MAX_WHILE_ITERATIONS} iterations (the reference interpreter's cap)"
    )


def k_batch_matmul(interp, op, index, args):
    a, b = float32_only(args[0], op, index), float32_only(args[1], op, index)
    if opt(op, "adjX", False) or opt(op, "adjointLhs", False):  # TFLite's name, Circle's
        a = np.swapaxes(a, -1, -2)
    if opt(op, "adjY", False) or opt(op, "adjointRhs", False):
        b = np.swapaxes(b, -1, -2)
    return [np.matmul(a, b).astype(np.float32)]


KERNELS: dict[str, Callable] = {  # the interpreter adds select_kernels.SELECT_KERNELS
    "CONV_2D": k_conv_2d,
    "CONV_3D": k_conv_3d,
    "DEPTHWISE_CONV_2D": k_depthwise_conv_2d,
    "TRANSPOSE_CONV": k_transpose_conv,
    "CONV_3D_TRANSPOSE": k_conv_3d_transpose,
    "FULLY_CONNECTED": k_fully_connected,
    "ADD": _binary(np.add),
    "SUB": _binary(np.subtract),
    "MUL": _binary(np.multiply),
    "DIV": _binary(_divide),
    "MAXIMUM": _binary(np.maximum),
    "MINIMUM": _binary(np.minimum),
    "SQUARED_DIFFERENCE": _binary(lambda a, b: (a - b) * (a - b)),
    "POW": _binary(np.power),
    "LESS": _comparison(np.less),
    "GREATER": _comparison(np.greater),
    "LESS_EQUAL": _comparison(np.less_equal),
    "GREATER_EQUAL": _comparison(np.greater_equal),
    "EQUAL": _comparison(np.equal),
    "NOT_EQUAL": _comparison(np.not_equal),
    "CAST": k_cast,
    "RELU": _unary(lambda x: np.maximum(x, 0)),
    "RELU6": _unary(lambda x: np.clip(x, 0, 6)),
    "RELU_N1_TO_1": _unary(lambda x: np.clip(x, -1, 1)),
    "TANH": _unary(np.tanh),
    "LOGISTIC": _unary(_logistic),
    "RSQRT": _unary(lambda x: 1 / np.sqrt(x)),
    "SQRT": _unary(np.sqrt),
    "ABS": _unary(np.abs),
    "NEG": _unary(np.negative),
    "EXP": _unary(np.exp),
    "HARD_SWISH": _unary(lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "LEAKY_RELU": k_leaky_relu,
    "PRELU": k_prelu,
    "PAD": k_pad,
    "PADV2": k_pad,
    "MEAN": _reducer(np.mean),
    "SUM": _reducer(np.sum),
    "REDUCE_MAX": _reducer(np.max),
    "REDUCE_MIN": _reducer(np.min),
    "MAX_POOL_2D": _pool("max"),
    "AVERAGE_POOL_2D": _pool("avg"),
    "RESHAPE": k_reshape,
    "SQUEEZE": k_squeeze,
    "EXPAND_DIMS": k_expand_dims,
    "TRANSPOSE": k_transpose,
    "CONCATENATION": k_concatenation,
    "SOFTMAX": k_softmax,
    "LOG_SOFTMAX": k_log_softmax,
    "SPACE_TO_BATCH_ND": k_space_to_batch_nd,
    "BATCH_TO_SPACE_ND": k_batch_to_space_nd,
    "DEQUANTIZE": k_dequantize,
    "QUANTIZE": k_quantize,
    "FAKE_QUANT": k_fake_quant,
    "INSTANCE_NORM": k_instance_norm,
    "SHAPE": k_shape,
    "WHILE": k_while,
    "BATCH_MATMUL": k_batch_matmul,
}
