"""The reference interpreter: runs a model's IR in numpy, with LiteRT's semantics.

It exists so that a value check does not depend on one runtime, and so that Circle-only models
(operators TFLite lacks) can be checked at all. Float models compute in float32, like LiteRT's
float kernels; convolutions are im2col + one matrix product (or one product per kernel tap),
never a Python loop over pixels, so a ResNet50-sized model runs in seconds.

Semantics that must match TFLite exactly:
- SAME padding: out = ceil(in / stride), pad_total = max((out - 1) * stride + (k - 1) * dilation
  + 1 - in, 0), pad_before = pad_total // 2 (the odd pixel goes after).
- TRANSPOSE_CONV: the padding is computed from the *output* size as if it were a convolution's
  input, the input is scattered with the stride, and the result is cropped at pad_before.
- AVERAGE_POOL_2D divides by the number of in-bounds pixels (padding is not counted).
- DEPTHWISE_CONV_2D output channel c * M + m reads input channel c (M = depth multiplier).

Int8 CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL, RELU, RELU6, MAX_POOL_2D, AVERAGE_POOL_2D and
RESHAPE run with TFLite's integer arithmetic, bit-exact with LiteRT's builtin kernels (see the
quantized kernels section); other integer-quantized operators are refused.

An operator it cannot run raises UnsupportedOperator naming the operator and its index.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import ModelError
from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Graph, Op
from ..ir.ops import FUSED_ACTIVATIONS as ACTIVATIONS
from ..ir.model import Model

MAX_WHILE_ITERATIONS = 1_000_000


class UnsupportedOperator(ModelError):
    """The reference interpreter has no kernel for an operator (or for its input types)."""


# ---- helpers ---------------------------------------------------------------------------------

def _opt(op: Op, name: str, default):
    """An option field, or `default` when the op has no options or the field is absent/None."""
    value = getattr(op.options, name, None) if op.options is not None else None
    return default if value is None else value


def _positive(op: Op, index: int, *names: str) -> tuple[int, ...]:
    """Stride/dilation/filter-size options, which must be >= 1 (absent means 1)."""
    values = tuple(int(_opt(op, n, 1)) for n in names)
    for n, v in zip(names, values):
        if v < 1:
            raise ModelError(f"{op.kind} (op {index}) has {n} = {v}")
    return values


def activation(x: np.ndarray, name: str) -> np.ndarray:
    """A fused activation function by name (ir.graph.ACTIVATIONS)."""
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


def _fused(op: Op, x: np.ndarray) -> np.ndarray:
    value = _opt(op, "fusedActivationFunction", 0)
    return activation(x, ACTIVATIONS[value])


def out_size(size: int, k: int, stride: int, dilation: int, padding: int) -> int:
    """Output length of a convolution/pool along one axis; padding 0 = SAME, 1 = VALID."""
    eff = (k - 1) * dilation + 1
    if padding == 0:
        return (size + stride - 1) // stride
    return (size - eff + stride) // stride


def pads(size: int, k: int, stride: int, dilation: int, padding: int) -> tuple[int, int]:
    """(before, after) padding along one axis, TFLite's rule."""
    if padding == 1:
        return 0, 0
    out = out_size(size, k, stride, dilation, padding)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


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
    strides_ = (st[0], *(st[1 + i] * strides[i] for i in range(len(kernel))),
                *(st[1 + i] * dilations[i] for i in range(len(kernel))), st[-1])
    return as_strided(x, shape=shape, strides=strides_, writeable=False)


def _float(x: np.ndarray, op: Op, index: int) -> np.ndarray:
    if x.dtype != np.float32:
        raise UnsupportedOperator(f"reference interpreter cannot run {op.kind} on {x.dtype} data (op {index})")
    return x


# ---- kernels ---------------------------------------------------------------------------------
# Each kernel is f(interp, op, index, args) -> list of outputs; args are the input arrays
# (None for an absent optional input).

def _conv_nd(x, w, bias, strides, dilations, padding):
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
            c = np.ascontiguousarray(cols[..., g * cin:(g + 1) * cin]).reshape(-1, int(np.prod(kernel)) * cin)
            parts.append(c @ w[..., g * per:(g + 1) * per].reshape(-1, per))
        out = np.concatenate(parts, axis=-1)
    out = out.reshape(*lead, cout)
    if bias is not None:
        out += bias
    return out


def k_conv_2d(interp, op, index, args):
    x, w, bias = _float(args[0], op, index), _float(args[1], op, index), args[2] if len(args) > 2 else None
    strides = _positive(op, index, "strideH", "strideW")
    dilations = _positive(op, index, "dilationHFactor", "dilationWFactor")
    filt = np.transpose(w, (1, 2, 3, 0))  # OHWI -> HWIO
    return [_fused(op, _conv_nd(x, filt, bias, strides, dilations, _opt(op, "padding", 0)))]


def k_conv_3d(interp, op, index, args):
    x, w, bias = _float(args[0], op, index), _float(args[1], op, index), args[2] if len(args) > 2 else None
    strides = _positive(op, index, "strideD", "strideH", "strideW")
    dilations = _positive(op, index, "dilationDFactor", "dilationHFactor", "dilationWFactor")
    return [_fused(op, _conv_nd(x, w, bias, strides, dilations, _opt(op, "padding", 0)))]


def k_depthwise_conv_2d(interp, op, index, args):
    """Loop over kernel taps only: out[..., c*M+m] += x_tap[..., c] * w[kh, kw, c*M+m]."""
    x, w, bias = _float(args[0], op, index), _float(args[1], op, index), args[2] if len(args) > 2 else None
    strides = _positive(op, index, "strideH", "strideW")
    dilations = _positive(op, index, "dilationHFactor", "dilationWFactor")
    out = _depthwise(x, w, strides, dilations, _opt(op, "padding", 0))
    if bias is not None:
        out += bias
    return [_fused(op, out)]


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
    shape, w, x = args[0], _float(args[1], op, index), _float(args[2], op, index)
    bias = args[3] if len(args) > 3 else None
    n, oh, ow, co = (int(v) for v in shape)
    _, kh, kw, ci = w.shape
    sh, sw = _positive(op, index, "strideH", "strideW")
    padding = _opt(op, "padding", 0)
    ph, pw = pads(oh, kh, sh, 1, padding)[0], pads(ow, kw, sw, 1, padding)[0]
    _, h, wd, _ = x.shape
    taps = (x.reshape(-1, ci) @ w.reshape(co * kh * kw, ci).T).reshape(n, h, wd, co, kh, kw)
    full_h = max((h - 1) * sh + kh, ph + oh)
    full_w = max((wd - 1) * sw + kw, pw + ow)
    full = np.zeros((n, full_h, full_w, co), np.float32)
    for i in range(kh):
        for j in range(kw):
            full[:, i:i + (h - 1) * sh + 1:sh, j:j + (wd - 1) * sw + 1:sw, :] += taps[..., i, j]
    out = full[:, ph:ph + oh, pw:pw + ow, :].copy()
    if bias is not None:
        out += bias
    return [_fused(op, out)]


def k_conv_3d_transpose(interp, op, index, args):
    """CONV_3D_TRANSPOSE (filter D H W O I): each input voxel scattered through the filter with the
    stride and dilation, then cropped at the TFLite padding, as k_transpose_conv in three dims."""
    shape, w, x = args[0], _float(args[1], op, index), _float(args[2], op, index)
    bias = args[3] if len(args) > 3 else None
    n, *out_sizes, co = (int(v) for v in shape)
    *kernel, _, ci = w.shape
    strides = _positive(op, index, "strideD", "strideH", "strideW")
    dilations = _positive(op, index, "dilationDFactor", "dilationHFactor", "dilationWFactor")
    padding = _opt(op, "padding", 0)
    sizes = x.shape[1:4]
    front = [pads(o, k, s, d, padding)[0] for o, k, s, d in zip(out_sizes, kernel, strides, dilations)]
    taps = (x.reshape(-1, ci) @ np.moveaxis(w, 3, 0).reshape(co, -1, ci).reshape(-1, ci).T)
    taps = taps.reshape(n, *sizes, co, *kernel)
    full = np.zeros((n, *[max((i - 1) * s + (k - 1) * d + 1, f + o) for i, s, k, d, f, o in
                          zip(sizes, strides, kernel, dilations, front, out_sizes)], co), np.float32)
    for tap in np.ndindex(*kernel):
        where = tuple(slice(t * d, t * d + (i - 1) * s + 1, s) for t, d, i, s in zip(tap, dilations, sizes, strides))
        full[(slice(None), *where)] += taps[(Ellipsis, *tap)]
    out = full[(slice(None), *(slice(f, f + o) for f, o in zip(front, out_sizes)))].copy()
    if bias is not None:
        out += bias
    return [_fused(op, out)]


def k_fully_connected(interp, op, index, args):
    x, w, bias = _float(args[0], op, index), _float(args[1], op, index), args[2] if len(args) > 2 else None
    if _opt(op, "weightsFormat", 0) != 0:
        raise UnsupportedOperator(f"reference interpreter cannot run {op.kind} with shuffled weights (op {index})")
    o, i = w.shape
    out = x.reshape(-1, i) @ w.T
    if bias is not None:
        out += bias
    if _opt(op, "keepNumDims", False):
        out = out.reshape(*x.shape[:-1], o)
    return [_fused(op, out)]


def _binary(fn):
    def kernel(interp, op, index, args):
        a, b = args[0], args[1]
        out = fn(a, b)
        return [_fused(op, np.asarray(out, dtype=np.result_type(a, b)))]
    return kernel


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
    return 1.0 / (1.0 + np.exp(-x))


def k_leaky_relu(interp, op, index, args):
    x = args[0]
    alpha = np.float32(_opt(op, "alpha", 0.0))
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
        out = fn(x, axis=_axes(args[1], x.ndim), keepdims=bool(_opt(op, "keepDims", False)))
        return [np.asarray(out, dtype=x.dtype)]
    return kernel


def _pool(kind):
    def kernel(interp, op, index, args):
        x = _float(args[0], op, index)
        k = _positive(op, index, "filterHeight", "filterWidth")
        s = _positive(op, index, "strideH", "strideW")
        padding = _opt(op, "padding", 0)
        if kind == "max":
            out = windows(x, k, s, (1, 1), padding, fill=-np.inf).max(axis=(3, 4))
        else:
            total = windows(x, k, s, (1, 1), padding).sum(axis=(3, 4), dtype=np.float32)
            ones = np.ones((1, *x.shape[1:3], 1), np.float32)
            count = windows(ones, k, s, (1, 1), padding).sum(axis=(3, 4))
            out = total / count
        return [_fused(op, out.astype(np.float32))]
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
        shape = _opt(op, "newShape", None)
        if shape is None:
            shape = op.outputs[0].shape
    return [x.reshape(_new_shape(shape, x.size))]


def k_squeeze(interp, op, index, args):
    x = args[0]
    dims = _opt(op, "squeezeDims", None)
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
    axis = int(_opt(op, "axis", 0)) % arrays[0].ndim
    return [_fused(op, np.concatenate(arrays, axis=axis))]


def k_softmax(interp, op, index, args):
    x = _float(args[0], op, index)
    beta = np.float32(_opt(op, "beta", 1.0))
    e = np.exp((x - x.max(axis=-1, keepdims=True)) * beta)
    return [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]


def k_space_to_batch_nd(interp, op, index, args):
    """[B, *S, *R] -> pad S -> [B, S1/b1, b1, ...] -> [b1, b2, ..., B, S1/b1, ...] -> [B*prod(b), ...]."""
    x, block = args[0], [int(b) for b in np.asarray(args[1]).reshape(-1)]
    paddings = np.asarray(args[2]).reshape(-1, 2)
    m = len(block)
    x = np.pad(x, [(0, 0)] + [(int(a), int(b)) for a, b in paddings] + [(0, 0)] * (x.ndim - 1 - m))
    batch, spatial, rest = x.shape[0], x.shape[1:1 + m], x.shape[1 + m:]
    split = [batch]
    for s, b in zip(spatial, block):
        split += [s // b, b]
    x = x.reshape(*split, *rest)
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, x.ndim))
    x = x.transpose(order)
    return [np.ascontiguousarray(x).reshape(batch * int(np.prod(block)), *[s // b for s, b in zip(spatial, block)], *rest)]


def k_batch_to_space_nd(interp, op, index, args):
    """The inverse of SPACE_TO_BATCH_ND, then crop."""
    x, block = args[0], [int(b) for b in np.asarray(args[1]).reshape(-1)]
    crops = np.asarray(args[2]).reshape(-1, 2)
    m = len(block)
    batch = x.shape[0] // int(np.prod(block))
    spatial, rest = x.shape[1:1 + m], x.shape[1 + m:]
    x = x.reshape(*block, batch, *spatial, *rest)
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, x.ndim))
    x = np.ascontiguousarray(x.transpose(order)).reshape(batch, *[s * b for s, b in zip(spatial, block)], *rest)
    index_ = (slice(None),) + tuple(slice(int(a), x.shape[1 + i] - int(b)) for i, (a, b) in enumerate(crops))
    return [np.ascontiguousarray(x[index_])]


def _quant_params(tensor):
    q = tensor.quantization
    scale = np.asarray(q.scale, np.float32)
    zero = np.asarray(q.zeroPoint if q.zeroPoint is not None else np.zeros(len(scale)), np.int64)
    axis = int(getattr(q, "quantizedDimension", 0) or 0)
    return scale, zero, axis


def _per_axis(values, axis, ndim):
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
    scale, zero, axis = _quant_params(op.inputs[0])
    out = (x.astype(np.int64) - _per_axis(zero, axis, x.ndim)).astype(np.float32) * _per_axis(scale, axis, x.ndim)
    return [out.astype(np.float32)]


def k_quantize(interp, op, index, args):
    x = _float(args[0], op, index)
    out_t = op.outputs[0]
    if not out_t.is_quantized:
        raise UnsupportedOperator(f"reference interpreter cannot run QUANTIZE to an unquantized tensor (op {index})")
    scale, zero, axis = _quant_params(out_t)
    dtype = NUMPY_DTYPES[out_t.dtype]
    q = x / _per_axis(scale, axis, x.ndim)
    q = np.sign(q) * np.floor(np.abs(q) + 0.5) + _per_axis(zero, axis, x.ndim)  # round half away from zero
    info = np.iinfo(dtype)
    return [np.clip(q, info.min, info.max).astype(dtype)]


def k_instance_norm(interp, op, index, args):
    """Circle INSTANCE_NORM over NHWC: normalize each (n, c) over H, W; then gamma, beta."""
    x, gamma, beta = _float(args[0], op, index), args[1], args[2]
    eps = np.float32(_opt(op, "epsilon", 1e-5))
    axes = tuple(range(1, x.ndim - 1))
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float32)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True, dtype=np.float32)
    out = (x - mean) / np.sqrt(var + eps) * gamma.reshape(-1) + beta.reshape(-1)
    return [_fused(op, out.astype(np.float32))]


def k_shape(interp, op, index, args):
    dtype = NUMPY_DTYPES.get(op.outputs[0].dtype, np.int32)
    return [np.asarray(args[0].shape, dtype=dtype)]


def k_while(interp, op, index, args):
    cond = interp.model.graphs[_opt(op, "condSubgraphIndex", 0)]
    body = interp.model.graphs[_opt(op, "bodySubgraphIndex", 0)]
    values = list(args)
    for _ in range(MAX_WHILE_ITERATIONS):
        if not bool(np.asarray(interp.run_graph(cond, values)[0]).reshape(-1)[0]):
            return values
        values = interp.run_graph(body, values)
    raise ModelError(f"WHILE (op {index}) did not stop after {MAX_WHILE_ITERATIONS} iterations")


KERNELS: dict[str, Callable] = {
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
    "LESS": lambda i, op, idx, a: [np.less(a[0], a[1])],
    "GREATER": lambda i, op, idx, a: [np.greater(a[0], a[1])],
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
    "MAX_POOL_2D": _pool("max"),
    "AVERAGE_POOL_2D": _pool("avg"),
    "RESHAPE": k_reshape,
    "SQUEEZE": k_squeeze,
    "EXPAND_DIMS": k_expand_dims,
    "TRANSPOSE": k_transpose,
    "CONCATENATION": k_concatenation,
    "SOFTMAX": k_softmax,
    "SPACE_TO_BATCH_ND": k_space_to_batch_nd,
    "BATCH_TO_SPACE_ND": k_batch_to_space_nd,
    "DEQUANTIZE": k_dequantize,
    "QUANTIZE": k_quantize,
    "INSTANCE_NORM": k_instance_norm,
    "SHAPE": k_shape,
    "WHILE": k_while,
}


# ---- quantized (integer) kernels --------------------------------------------------------------
# TFLite's integer semantics (its quantization spec): real = scale * (q - zero_point). A kernel
# computes an int32 accumulator from zero-point-corrected integers, then requantizes it:
#   out = clamp(zp_out + MBQM(acc, M, shift), act_min, act_max)
# where (M, shift) = quantize_multiplier(real_multiplier) and MBQM (_rescale) rounds the way the
# LiteRT 2.3 builtin kernel ("plain" resolver) does, measured against it on random models:
# - "double" (gemmlowp): a rounding doubling high multiply, then a rounding right shift, both
#   rounding ties away from zero. ADD, SUB, MUL, RELU, RELU6 (and every "reference" kernel).
# - "upward" (ruy, which runs CONV_2D and FULLY_CONNECTED): the same two roundings, ties upward.
# Neither is TFLITE_SINGLE_ROUNDING's one 64-bit rounding, which disagrees with both.
# Integer DEPTHWISE_CONV_2D is refused: LiteRT's optimized kernel mixes the two modes.

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


def _qparams(t):
    """(scale float32[], zero_point int64[], axis) of a quantized tensor."""
    return _quant_params(t)


def _qrange(t, fused: str) -> tuple[int, int]:
    """TFLite's activation range in the output's integers: the dtype's range intersected with
    zp + round-half-away(float32(bound / scale)) of the activation's real bounds."""
    info = np.iinfo(NUMPY_DTYPES[t.dtype])
    lo, hi = int(info.min), int(info.max)
    scale, zero, _ = _qparams(t)
    bounds = {"NONE": (None, None), "RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}
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
    _, zero, _ = _qparams(out_t)
    lo, hi = _qrange(out_t, fused)
    return np.clip(_rescale(acc, m, shift, rounding) + zero[0], lo, hi).astype(NUMPY_DTYPES[out_t.dtype])


def _centered(x: np.ndarray, t) -> np.ndarray:
    """x - zero_point (per-axis zero points broadcast along the quantized dimension), as float64
    so that convolutions can use BLAS: every int32 accumulator is exact in a float64."""
    _, zero, axis = _qparams(t)
    return x.astype(np.float64) - _per_axis(zero, axis, x.ndim)


def _conv_multipliers(op, x_t, w_t, out_t, channels: int):
    """Per output channel (M, shift) of input_scale * filter_scale[c] / output_scale (in double)."""
    s_in, s_w, s_out = _qparams(x_t)[0][0], _qparams(w_t)[0], _qparams(out_t)[0][0]
    s_w = np.broadcast_to(s_w, (channels,)) if s_w.size == 1 else s_w
    return quantize_multiplier(np.float64(s_in) * s_w.astype(np.float64) / np.float64(s_out))


def _accumulated(acc: np.ndarray, bias) -> np.ndarray:
    acc = np.rint(acc).astype(np.int64)
    return acc if bias is None else acc + bias.astype(np.int64)


def _check_integer(op, index, *tensors):
    for t in tensors:
        if t is not None and (not t.is_quantized or t.dtype != "INT8"):
            raise UnsupportedOperator(f"reference interpreter cannot run quantized {op.kind} with "
                                      f"{t.dtype}{'' if t.is_quantized else ' unquantized'} tensor {t.name!r} (op {index})")


def q_conv_2d(interp, op, index, args):
    """acc[c] = sum (x - x_zp)(w - w_zp) + bias[c] (int32); per-channel requantization."""
    x_t, w_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
    _check_integer(op, index, x_t, w_t, out_t)
    bias = args[2] if len(args) > 2 else None
    strides = _positive(op, index, "strideH", "strideW")
    dilations = _positive(op, index, "dilationHFactor", "dilationWFactor")
    filt = np.transpose(_centered(args[1], w_t), (1, 2, 3, 0))
    acc = _conv_nd(_centered(args[0], x_t), filt, None, strides, dilations, _opt(op, "padding", 0))
    m, shift = _conv_multipliers(op, x_t, w_t, out_t, filt.shape[-1])
    fused = ACTIVATIONS[_opt(op, "fusedActivationFunction", 0)]
    return [_requantize(_accumulated(acc, bias), m, shift, out_t, fused, "upward")]


def q_fully_connected(interp, op, index, args):
    x_t, w_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
    _check_integer(op, index, x_t, w_t, out_t)
    if _opt(op, "weightsFormat", 0) != 0:
        raise UnsupportedOperator(f"reference interpreter cannot run {op.kind} with shuffled weights (op {index})")
    bias = args[2] if len(args) > 2 else None
    x, w = _centered(args[0], x_t), _centered(args[1], w_t)
    o, i = w.shape
    acc = x.reshape(-1, i) @ w.T
    m, shift = _conv_multipliers(op, x_t, w_t, out_t, o)
    fused = ACTIVATIONS[_opt(op, "fusedActivationFunction", 0)]
    out = _requantize(_accumulated(acc, bias), m, shift, out_t, fused, "upward")
    return [out.reshape(*x.shape[:-1], o) if _opt(op, "keepNumDims", False) else out]


def _int16_safe(op, index, bound):
    """LiteRT's vectorized ADD/SUB/MUL narrow the rescaled result to int16 (saturating) and add
    the output zero point in int16 (wrapping), its scalar tail does not; the two agree only when
    |result| + 128 stays in int16, so a model whose scales allow more is refused."""
    if bound + 130 >= 1 << 15:
        raise UnsupportedOperator(f"reference interpreter cannot run quantized {op.kind} whose input/output "
                                  f"scales allow results beyond int16 (op {index})")


def _q_add_sub(sign):
    def kernel(interp, op, index, args):
        """Each input: (x - zp) * 2**20, rescaled by s_i / (2 max(s1, s2)); the sum (difference)
        rescaled by 2 max(s1, s2) / (2**20 s_out); + zp_out, clamped."""
        a_t, b_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
        _check_integer(op, index, a_t, b_t, out_t)
        (sa, za, _), (sb, zb, _), (so, _, _) = _qparams(a_t), _qparams(b_t), _qparams(out_t)
        _int16_safe(op, index, 256 * (np.float64(sa[0]) + np.float64(sb[0])) / np.float64(so[0]))
        twice_max = np.float64(2 * max(sa[0], sb[0]))
        left = 20
        ma, sha = quantize_multiplier(np.float64(sa[0]) / twice_max)
        mb, shb = quantize_multiplier(np.float64(sb[0]) / twice_max)
        mo, sho = quantize_multiplier(twice_max / np.float64(np.float32((1 << left) * so[0])))
        a = _rescale((args[0].astype(np.int64) - za[0]) << left, ma, sha)
        b = _rescale((args[1].astype(np.int64) - zb[0]) << left, mb, shb)
        fused = ACTIVATIONS[_opt(op, "fusedActivationFunction", 0)]
        return [_requantize(a + sign * b, mo, sho, out_t, fused)]
    return kernel


def q_mul(interp, op, index, args):
    """(a - zp_a)(b - zp_b) rescaled by s_a s_b / s_out; + zp_out, clamped."""
    a_t, b_t, out_t = op.inputs[0], op.inputs[1], op.outputs[0]
    _check_integer(op, index, a_t, b_t, out_t)
    (sa, za, _), (sb, zb, _), (so, _, _) = _qparams(a_t), _qparams(b_t), _qparams(out_t)
    real = np.float64(sa[0]) * np.float64(sb[0]) / np.float64(so[0])
    _int16_safe(op, index, 256 * 256 * real)
    m, shift = quantize_multiplier(real)
    prod = (args[0].astype(np.int64) - za[0]) * (args[1].astype(np.int64) - zb[0])
    fused = ACTIVATIONS[_opt(op, "fusedActivationFunction", 0)]
    return [_requantize(prod, m, shift, out_t, fused)]


def _q_relu(fused):
    def kernel(interp, op, index, args):
        """(x - zp_in) rescaled by s_in / s_out; + zp_out, clamped to the activation's range."""
        x_t, out_t = op.inputs[0], op.outputs[0]
        _check_integer(op, index, x_t, out_t)
        (si, zi, _), (so, _, _) = _qparams(x_t), _qparams(out_t)
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
        k = _positive(op, index, "filterHeight", "filterWidth")
        s = _positive(op, index, "strideH", "strideW")
        padding = _opt(op, "padding", 0)
        if kind == "max":
            out = windows(x, k, s, (1, 1), padding, fill=INT32_MIN).max(axis=(3, 4))
        else:
            total = windows(x, k, s, (1, 1), padding).sum(axis=(3, 4))
            count = windows(np.ones((1, *x.shape[1:3], 1), np.int64), k, s, (1, 1), padding).sum(axis=(3, 4))
            half = count // 2
            num = np.where(total > 0, total + half, total - half)
            out = np.sign(num) * (np.abs(num) // count)  # C division truncates toward zero
        lo, hi = _qrange(out_t, ACTIVATIONS[_opt(op, "fusedActivationFunction", 0)])
        return [np.clip(out, lo, hi).astype(NUMPY_DTYPES[out_t.dtype])]
    return kernel


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
}


# ---- the interpreter -------------------------------------------------------------------------

def _integer_quantized(t) -> bool:
    """A tensor holding quantized integers (whose arithmetic the float kernels must not do)."""
    return t is not None and t.is_quantized and t.dtype not in ("FLOAT32", "FLOAT16", "FLOAT64")


class Interpreter:
    """Runs the subgraphs of one Model. Stateless between calls."""

    def __init__(self, model: Model):
        self.model = model

    def run(self, inputs: list[np.ndarray], graph_index: int = 0) -> list[np.ndarray]:
        """Outputs of subgraph `graph_index` for `inputs` (in the subgraph's input order)."""
        graph = self.model.graphs[graph_index]
        if len(inputs) != len(graph.inputs):
            raise ModelError(f"model has {len(graph.inputs)} inputs, {len(inputs)} given")
        cast = [np.asarray(x, dtype=NUMPY_DTYPES.get(t.dtype, None)) for x, t in zip(inputs, graph.inputs)]
        return [np.array(v) for v in self.run_graph(graph, cast)]

    def run_graph(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        values: dict[int, np.ndarray] = {id(t): x for t, x in zip(graph.inputs, inputs)}
        remaining = self._last_uses(graph)
        for index, op in enumerate(graph.ops):
            kernel = KERNELS.get(op.kind)
            if kernel is None:
                name = op.kind if op.kind != "CUSTOM" else f"CUSTOM({(op.opcode.custom_code or b'').decode(errors='replace')})"
                raise UnsupportedOperator(f"reference interpreter cannot run {name} (op {index})")
            if op.kind not in ("DEQUANTIZE", "QUANTIZE") and any(_integer_quantized(t) for t in (*op.inputs, *op.outputs)):
                kernel = QUANTIZED_KERNELS.get(op.kind)
                if kernel is None:
                    raise UnsupportedOperator(f"reference interpreter cannot run quantized {op.kind} (op {index})")
            args = [None if t is None else self._value(t, values, op, index) for t in op.inputs]
            outs = kernel(self, op, index, args)
            for t, v in zip(op.outputs, outs):
                dtype = NUMPY_DTYPES.get(t.dtype)
                values[id(t)] = v if dtype is None or v.dtype == dtype else v.astype(dtype)
            for t in remaining.get(index, ()):
                values.pop(id(t), None)
        return [self._value(t, values, None, None) for t in graph.outputs]

    @staticmethod
    def _last_uses(graph: Graph) -> dict[int, list]:
        """op index -> activations no later op or graph output needs (freed to bound memory)."""
        last: dict[int, tuple[int, object]] = {}
        for index, op in enumerate(graph.ops):
            for t in op.inputs:
                if t is not None and not t.is_const:
                    last[id(t)] = (index, t)
        keep = {id(t) for t in graph.outputs}
        out: dict[int, list] = {}
        for key, (index, t) in last.items():
            if key not in keep:
                out.setdefault(index, []).append(t)
        return out

    @staticmethod
    def _value(t, values, op, index) -> np.ndarray:
        v = values.get(id(t))
        if v is not None:
            return v
        if t.is_const:
            data = t.data
            if data.dtype == np.uint8 and t.dtype not in NUMPY_DTYPES:
                where = f" (op {index})" if index is not None else ""
                raise UnsupportedOperator(f"reference interpreter cannot read {t.dtype} tensor {t.name!r}{where}")
            return data
        where = f"{op.kind} (op {index})" if op is not None else "a graph output"
        raise ModelError(f"tensor {t.name!r} read by {where} has no value")


def run(model: Model, inputs: list[np.ndarray], graph_index: int = 0) -> list[np.ndarray]:
    """Run subgraph `graph_index` of `model` on `inputs` with the reference interpreter."""
    return Interpreter(model).run(inputs, graph_index)


def unsupported_kinds(model: Model) -> list[str]:
    """Operator kinds of `model` the reference interpreter has no kernel for."""
    return sorted({op.kind for g in model.graphs for op in g.ops if op.kind not in KERNELS})
