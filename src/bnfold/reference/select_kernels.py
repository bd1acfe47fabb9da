"""Kernels of the reference interpreter that select or resample elements: RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR, STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, PACK, UNPACK, GATHER, GATHER_ND,
EMBEDDING_LOOKUP, ARG_MAX, ARG_MIN, TILE, BROADCAST_TO, SELECT_V2 (the interpreter joins their table with kernels.py's).
Same contract as kernels.py: f(interp, op, index, args) -> list of outputs. The gathers refuse an
index outside [0, dim) of the axis it addresses with RunFailed, as LiteRT fails the run
(index_inputs.py draws random indices in range).
Each resize follows TFLite's sampling rule, stated in its axis function's docstring.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import RunFailed
from ..ir.const import NUMPY_DTYPES
from .kernels import UnsupportedOperator, float32_only, opt


def _resize_scale(size_in: int, size_out: int, align_corners: bool) -> np.float32:
    if align_corners and size_out > 1:
        return np.float32(size_in - 1) / np.float32(size_out - 1)
    return np.float32(size_in) / np.float32(size_out)


def _bilinear_axis(size_in, size_out, align_corners, half_pixel):
    """(lower index, upper index, weight of the upper one) per output position, TFLite's rule:
    src = (i + 0.5) * scale - 0.5 with half-pixel centers, else i * scale; lower = max(floor, 0),
    upper = min(ceil, size - 1), weight = src - lower (all in float32)."""
    scale = _resize_scale(size_in, size_out, align_corners)
    i = np.arange(size_out, dtype=np.float32)
    src = (i + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else i * scale
    lower = np.maximum(np.floor(src), 0).astype(np.int64)
    upper = np.minimum(np.ceil(src), size_in - 1).astype(np.int64)
    return lower, upper, (src - lower.astype(np.float32)).astype(np.float32)


def _nearest_axis(size_in, size_out, align_corners, half_pixel):
    """Source index per output position: floor((i + offset) * scale), rounded half away from zero
    instead when align_corners; offset 0.5 with half-pixel centers; clamped to [0, size - 1]."""
    scale = _resize_scale(size_in, size_out, align_corners)
    src = (np.arange(size_out, dtype=np.float32) + np.float32(0.5 if half_pixel else 0.0)) * scale
    index = np.sign(src) * np.floor(np.abs(src) + np.float32(0.5)) if align_corners else np.floor(src)
    index = np.minimum(index.astype(np.int64), size_in - 1)
    return np.maximum(index, 0) if half_pixel else index


def _resize_options(op):
    return bool(opt(op, "alignCorners", False)), bool(opt(op, "halfPixelCenters", False))


def k_resize_bilinear(interp, op, index, args):
    x = float32_only(args[0], op, index)
    out_h, out_w = (int(v) for v in np.asarray(args[1]).reshape(-1))
    align, half = _resize_options(op)
    y0, y1, dy = _bilinear_axis(x.shape[1], out_h, align, half)
    x0, x1, dx = _bilinear_axis(x.shape[2], out_w, align, half)
    dy, dx = dy[None, :, None, None], dx[None, None, :, None]
    one = np.float32(1)
    top = x[:, y0][:, :, x0] * (one - dx) + x[:, y0][:, :, x1] * dx
    bottom = x[:, y1][:, :, x0] * (one - dx) + x[:, y1][:, :, x1] * dx
    return [(top * (one - dy) + bottom * dy).astype(np.float32)]


def k_resize_nearest(interp, op, index, args):
    x = args[0]
    out_h, out_w = (int(v) for v in np.asarray(args[1]).reshape(-1))
    align, half = _resize_options(op)
    rows, cols = _nearest_axis(x.shape[1], out_h, align, half), _nearest_axis(x.shape[2], out_w, align, half)
    return [np.ascontiguousarray(x[:, rows][:, :, cols])]


def k_strided_slice(interp, op, index, args):
    x = args[0]
    begin, end, strides = (np.asarray(a).reshape(-1).astype(np.int64) for a in args[1:4])
    if opt(op, "ellipsisMask", 0) or opt(op, "newAxisMask", 0):
        raise UnsupportedOperator(
            f"reference interpreter cannot run STRIDED_SLICE with ellipsis or new-axis masks (op {index})"
        )
    begin_mask, end_mask, shrink = (int(opt(op, n, 0)) for n in ("beginMask", "endMask", "shrinkAxisMask"))
    offset = bool(opt(op, "offset", False))
    index_: list[slice | int] = []
    squeeze: list[int] = []
    for axis in range(x.ndim):
        if axis >= len(begin):
            index_.append(slice(None))
            continue
        b, e, s = int(begin[axis]), int(end[axis]), int(strides[axis])
        if shrink >> axis & 1:
            index_.append(b + x.shape[axis] if b < 0 else b)
            squeeze.append(axis)
            continue
        if offset:
            e = b + e
        index_.append(slice(None if begin_mask >> axis & 1 else b, None if end_mask >> axis & 1 else e, s))
    return [np.asarray(x[tuple(index_)], order="C")]


def k_slice(interp, op, index, args):
    x = args[0]
    begin, size = (np.asarray(a).reshape(-1).astype(np.int64) for a in args[1:3])
    return [
        np.ascontiguousarray(
            x[tuple(slice(int(b), x.shape[i] if s == -1 else int(b + s)) for i, (b, s) in enumerate(zip(begin, size)))]
        )
    ]


def k_split(interp, op, index, args):
    axis, x = int(np.asarray(args[0]).reshape(-1)[0]), args[1]
    return [
        np.ascontiguousarray(p) for p in np.split(x, int(opt(op, "numSplits", len(op.outputs))), axis=axis % x.ndim)
    ]


def k_split_v(interp, op, index, args):
    x, sizes, axis = args[0], np.asarray(args[1]).reshape(-1), int(np.asarray(args[2]).reshape(-1)[0]) % args[0].ndim
    sizes = np.where(sizes < 0, x.shape[axis] - sizes[sizes >= 0].sum(), sizes)  # one -1: the rest
    return [np.ascontiguousarray(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]


def _arg(select):
    def kernel(interp, op, index, args):
        axis = int(np.asarray(args[1]).reshape(-1)[0]) % args[0].ndim
        return [select(args[0], axis=axis).astype(NUMPY_DTYPES[op.outputs[0].dtype])]

    return kernel


def k_tile(interp, op, index, args):
    return [np.tile(args[0], np.asarray(args[1]).reshape(-1))]


def k_broadcast_to(interp, op, index, args):
    return [np.broadcast_to(args[0], [int(d) for d in np.reshape(args[1], -1)]).copy()]


def k_select_v2(interp, op, index, args):
    return [np.where(args[0].astype(bool), args[1], args[2])]


def k_pack(interp, op, index, args):
    axis = int(opt(op, "axis", 0))
    return [np.stack(args, axis=axis if axis >= 0 else axis + args[0].ndim + 1)]


def k_unpack(interp, op, index, args):
    x, axis = args[0], int(opt(op, "axis", 0)) % args[0].ndim
    return [np.asarray(np.take(x, i, axis=axis), order="C") for i in range(x.shape[axis])]


def _in_range(indices: np.ndarray, dims, op, index) -> np.ndarray:
    """`indices` as int64 when each is in [0, dim) of the axis it addresses (`dims` broadcasts
    against them); RunFailed naming the first that is not, as LiteRT fails the run."""
    indices = indices.astype(np.int64)
    dims = np.broadcast_to(np.asarray(dims, dtype=np.int64), indices.shape)
    bad = (indices < 0) | (indices >= dims)
    if bad.any():
        raise RunFailed(
            f"reference interpreter failed to run the model: {op.kind} (op {index}) index "
            f"{int(indices[bad][0])} out of range [0, {int(dims[bad][0])})"
        )
    return indices


def k_gather(interp, op, index, args):
    params, indices = args
    if opt(op, "batchDims", 0):
        raise UnsupportedOperator(f"reference interpreter cannot run GATHER with batch_dims (op {index})")
    axis = int(opt(op, "axis", 0)) % params.ndim
    return [np.take(params, _in_range(indices, params.shape[axis], op, index), axis=axis)]


def k_gather_nd(interp, op, index, args):
    """out[i...] = params[indices[i..., 0], ..., indices[i..., k-1], ...] (k = indices.shape[-1])."""
    params, indices = args
    k = indices.shape[-1]
    indices = _in_range(indices, params.shape[:k], op, index)
    return [params[tuple(np.moveaxis(indices, -1, 0))]]


def k_embedding_lookup(interp, op, index, args):
    ids, table = args
    return [np.take(table, _in_range(ids, table.shape[0], op, index), axis=0)]


SELECT_KERNELS: dict[str, Callable] = {
    "RESIZE_BILINEAR": k_resize_bilinear,
    "RESIZE_NEAREST_NEIGHBOR": k_resize_nearest,
    "STRIDED_SLICE": k_strided_slice,
    "SLICE": k_slice,
    "SPLIT": k_split,
    "SPLIT_V": k_split_v,
    "PACK": k_pack,
    "UNPACK": k_unpack,
    "GATHER": k_gather,
    "GATHER_ND": k_gather_nd,
    "EMBEDDING_LOOKUP": k_embedding_lookup,
    "ARG_MAX": _arg(np.argmax),
    "ARG_MIN": _arg(np.argmin),
    "TILE": k_tile,
    "BROADCAST_TO": k_broadcast_to,
    "SELECT_V2": k_select_v2,
}
