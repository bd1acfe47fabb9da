"""Kernels of the reference interpreter for the TensorFlow operators a converter leaves as CUSTOM
ops (Select TF ops), which ONE's resolve_customop_* and GELU passes turn into builtins: AddV2,
BatchMatMulV2, MatMul, SplitV, BroadcastTo, MaxPoolWithArgmax and Erf (and the builtin GELU they
become), with TensorFlow's semantics and attributes read from the flexbuffer custom options.
LiteRT runs none of them without the Flex delegate, so these kernels are what checks a model
holding them, and each resolve pass's rewrite (values/local.py). Any other custom op is
unsupported. Same contract as kernels.py."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..ir.custom import custom_code, custom_options
from .kernels import UnsupportedOperator, float32_only, windows
from .select_kernels import k_broadcast_to


def _flag(options: dict, name: str) -> bool:
    """A boolean attribute (absent: false); any other value is not TensorFlow's, so not run."""
    value = options.get(name, False)
    if not isinstance(value, bool):
        raise UnsupportedOperator(f"reference interpreter cannot read attribute {name}={value!r} of a CUSTOM op")
    return value


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise, computed in float64 (numpy has none), in x's type. (On a
    rank-0 x, frompyfunc returns a Python float: asarray makes it an array again.)"""
    x = np.asarray(x)
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def k_gelu(interp, op, index, args):
    """The builtin GELU: x·Φ(x) = 0.5·x·(1 + erf(x/√2)), or with `approximate` the tanh form
    0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), each computed in float64 and rounded once."""
    x = float32_only(args[0], op, index).astype(np.float64)
    if getattr(op.options, "approximate", False):
        y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    else:
        y = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    return [y.astype(np.float32)]


def k_erf(op, args, options):
    return [erf(float32_only(args[0], op, 0))]


def k_add_v2(op, args, options):
    return [np.add(args[0], args[1])]


def k_batch_matmul_v2(op, args, options):
    a, b = args[0], args[1]
    if _flag(options, "adj_x"):
        a = np.swapaxes(a, -1, -2)
    if _flag(options, "adj_y"):
        b = np.swapaxes(b, -1, -2)
    return [np.matmul(a, b)]


def k_matmul(op, args, options):
    a, b = args[0], args[1]
    if _flag(options, "transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if _flag(options, "transpose_b"):
        b = np.swapaxes(b, -1, -2)
    return [np.matmul(a, b)]


def k_split_v(op, args, options):
    x, sizes, axis = args[0], [int(s) for s in np.reshape(args[1], -1)], int(np.reshape(args[2], -1)[0])
    axis %= x.ndim
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def k_max_pool_with_argmax(op, args, options):
    """TF's MaxPoolWithArgmax on NHWC: the max of each window and its flat index into the input,
    ((b·H + y)·W + x)·C + c, or without the batch term when include_batch_in_index is false; the
    first maximum in the window's row-major order wins. Padding SAME pads with -inf."""
    x = float32_only(args[0], op, 0)
    _, kh, kw, _ = (int(k) for k in options["ksize"])
    _, sh, sw, _ = (int(s) for s in options["strides"])
    same = options.get("padding", "VALID") in ("SAME", b"SAME")
    n, h, w, c = x.shape
    flat = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    if not _flag(options, "include_batch_in_index"):
        flat = flat % (h * w * c)
    padding = 0 if same else 1  # windows() takes the schema's Padding: SAME = 0, VALID = 1
    values = windows(x, (kh, kw), (sh, sw), (1, 1), padding, fill=-np.inf)  # [N, OH, OW, KH, KW, C]
    indices = windows(flat.astype(np.float64), (kh, kw), (sh, sw), (1, 1), padding, fill=-1.0)
    shape = values.shape
    values = values.reshape(*shape[:3], kh * kw, c)
    best = np.argmax(values, axis=3)[:, :, :, None, :]
    picked = np.take_along_axis(indices.reshape(*shape[:3], kh * kw, c), best, axis=3)[:, :, :, 0, :]
    dtype = np.int32 if options.get("Targmax") in (3, "DT_INT32") else np.int64
    return [np.take_along_axis(values, best, axis=3)[:, :, :, 0, :].astype(np.float32), picked.astype(dtype)]


CUSTOM_KERNELS: dict[str, Callable] = {
    "AddV2": k_add_v2,
    "Erf": k_erf,
    "BatchMatMulV2": k_batch_matmul_v2,
    "MatMul": k_matmul,
    "SplitV": k_split_v,
    "BroadcastTo": lambda op, args, options: k_broadcast_to(None, op, None, args),
    "MaxPoolWithArgmax": k_max_pool_with_argmax,
}


def k_custom(interp, op, index, args):
    code = custom_code(op)
    kernel = CUSTOM_KERNELS.get(code or "")
    options = custom_options(op)
    if kernel is None or options is None:
        raise UnsupportedOperator(f"reference interpreter cannot run CUSTOM({code}) (op {index})")
    return kernel(op, args, options)
