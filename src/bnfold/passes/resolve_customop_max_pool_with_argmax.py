"""resolve_customop_max_pool_with_argmax: TensorFlow's MaxPoolWithArgmax left as a CUSTOM op becomes
builtins (ONE's pass of that name): MAX_POOL_2D for the maxima, and for the indices a comparison
of every window tap with the maximum that picks the first tap holding it.

    before:  x [N, H, W, C] -> CUSTOM(MaxPoolWithArgmax, ksize, strides, padding) -> m, idx
    after:   x -> MAX_POOL_2D -> m
             x -> [PADV2(lowest float) for SAME] -> xp;   for each tap t = (ky, kx) of the window:
                  v_t = STRIDED_SLICE(xp, [0, ky, kx, 0], stride) (the tap's value in every window)
             idx = SELECT_V2(v_0 == m, I_0, SELECT_V2(v_1 == m, I_1, ... I_last))

I_t is a constant: the flat index ((b·H + y)·W + x)·C + c of tap t in each window (b·H·W·C only
with include_batch_in_index), in idx's type. Exact: MAX_POOL_2D is the same maximum; the indices
are comparisons and constants, the first tap in the window's row-major order wins, as TF's
kernel does. ONE builds the indices another way (a 1-hot CONV_2D, ARG_MAX, casts to float and
back, FLOOR), which goes through float and, it says, needs a rounding adjustment.

Guards: x float32, rank 4, static shape, not quantized; ksize and strides [1, kh, kw, 1] and
[1, sh, sw, 1]; padding SAME or VALID; idx INT32 or INT64; readable custom options; the target
keeps the maximum when it is a graph output that the EQUALs read (onert may not: engine/targets.py).
Where no window reaches past the input (no padding), no PADV2 is made; with padding, a window of
-inf inputs only would give a padded tap's index (TF's kernel skips the padding). LiteRT runs the result; onert
0.1.0 fails its inference (NNFW_STATUS_ERROR, measured), and crashes on the CUSTOM original.
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np

from ..engine import targets
from ..engine.match import is_plain_float
from ..engine.report import PassResult
from ..ir.const import NUMPY_DTYPES
from ..ir.custom import custom_code, custom_options
from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import PADDINGS
from ..ir.shapes import out_size, pads


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if custom_code(op) == "MaxPoolWithArgmax"]:
        window = _window(op)
        if window is None:
            continue
        if isinstance(window, str):
            result.refuse_value(op, window)
            continue
        unsupported = _refusal(graph) or targets.unkept_output(graph, [(op.outputs[0], "EQUAL")])
        if unsupported:
            result.not_for_target(op, unsupported)
            continue
        result.fold(op, [op], into=[], resolved="MaxPoolWithArgmax")
        graph.remove_op(op)
        _resolve(graph, result, op, *window)
    return result


# what the resolution may make (_resolve): the pool, its padding, and the argmax's taps
MADE_KINDS = ("MAX_POOL_2D", "PADV2", "EQUAL", "SELECT_V2", "STRIDED_SLICE", "RESHAPE")


def _refusal(graph: Graph) -> str | None:
    """Why the target cannot run one of the kinds the resolution makes (checked all at once: the
    resolution is one rewrite)."""
    return targets.first_refusal(graph, MADE_KINDS)


def _window(op: Op) -> tuple[tuple[int, int], tuple[int, int], int] | str | None:
    """((kh, kw), (sh, sw), padding index) when the op is one this pass resolves; None when it is
    not the op's form at all, else why not."""
    options = custom_options(op)
    if options is None or len(op.inputs) != 1 or len(op.outputs) != 2 or op.inputs[0] is None:
        return None
    x, (m, idx) = op.operand(0), op.outputs
    if not (is_plain_float(x) and is_plain_float(m)) or len(x.shape) != 4 or min(x.signature) < 1:
        return "the input or the maximum is no float32 NHWC tensor of static shape"
    if idx.dtype not in ("INT32", "INT64") or idx.is_quantized:
        return f"the indices {idx.name!r} are {idx.dtype}, not INT32 or INT64"
    ksize, strides, padding = options.get("ksize"), options.get("strides"), options.get("padding")
    if isinstance(padding, bytes):
        padding = padding.decode(errors="replace")
    if padding not in PADDINGS or not _four(ksize) or not _four(strides):
        return f"ksize {ksize}, strides {strides}, padding {padding!r}: not four integers each and VALID or SAME"
    kh, kw, sh, sw = ksize[1], ksize[2], strides[1], strides[2]
    if min(kh, kw, sh, sw) < 1 or ksize[0] != 1 or ksize[3] != 1 or strides[0] != 1 or strides[3] != 1:
        return f"ksize {ksize}, strides {strides}: the window spans the batch or channel axis (MAX_POOL_2D's does not)"
    kind = PADDINGS.index(padding)
    n, h, w, c = x.shape
    if m.shape != (n, out_size(h, kh, sh, 1, kind), out_size(w, kw, sw, 1, kind), c) or idx.shape != m.shape:
        return "the outputs' shapes are not the pool's"
    return (kh, kw), (sh, sw), kind


def _four(v: object) -> TypeGuard[list[int]]:
    return isinstance(v, list) and len(v) == 4 and all(isinstance(i, int) and not isinstance(i, bool) for i in v)


def _resolve(graph: Graph, result: PassResult, op: Op, kernel: tuple, strides: tuple, padding: int) -> None:
    x, (m, idx) = op.operand(0), op.outputs
    (kh, kw), (sh, sw) = kernel, strides
    pool_options = Options(
        "Pool2DOptions",
        padding=padding,
        strideW=sw,
        strideH=sh,
        filterWidth=kw,
        filterHeight=kh,
        fusedActivationFunction=0,
    )
    last = graph.add_op("MAX_POOL_2D", [x], [m], pool_options, after=op)
    result.made(last)
    n, h, w, c = x.shape
    (top, bottom), (left, right) = pads(h, kh, sh, 1, padding), pads(w, kw, sw, 1, padding)
    xp = x
    if top or bottom or left or right:
        xp = graph.add_tensor(
            graph.unique_name(f"{idx.name}/padded"), "FLOAT32", (n, h + top + bottom, w + left + right, c)
        )
        paddings = graph.add_const(
            graph.unique_name(f"{idx.name}/paddings"),
            np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32),
            "INT32",
        )
        lowest = graph.add_const(
            graph.unique_name(f"{idx.name}/lowest"), np.array([np.finfo(np.float32).min], np.float32)
        )
        last = graph.add_op("PADV2", [x, paddings, lowest], [xp], Options("PadV2Options"), after=last)
        result.made(last)
    options = custom_options(op)
    assert options is not None  # _window read them
    include_batch = bool(options.get("include_batch_in_index", False))
    taps = [(ky, kx) for ky in range(kh) for kx in range(kw)]
    chosen: Tensor | None = None
    for ky, kx in reversed(taps):  # the first tap holding the maximum is selected last
        flat = _tap_indices(x.shape, m.shape, (ky - top, kx - left), strides, include_batch, NUMPY_DTYPES[idx.dtype])
        index_t = graph.add_const(graph.unique_name(f"{idx.name}/tap{ky}_{kx}"), flat, idx.dtype)
        if chosen is None:
            chosen = index_t
            continue
        value = _tap_values(graph, result, xp, m.shape, (ky, kx), strides, idx, last)
        strided_slice = value.producer
        assert strided_slice is not None  # _tap_values made it
        last = strided_slice
        equal = graph.add_tensor(graph.unique_name(f"{idx.name}/is_max{ky}_{kx}"), "BOOL", m.shape)
        last = graph.add_op("EQUAL", [value, m], [equal], Options("EqualOptions"), after=last)
        result.made(last)
        out = (
            idx
            if (ky, kx) == taps[0]
            else graph.add_tensor(graph.unique_name(f"{idx.name}/upto{ky}_{kx}"), idx.dtype, m.shape)
        )
        last = graph.add_op("SELECT_V2", [equal, index_t, chosen], [out], Options("SelectV2Options"), after=last)
        result.made(last)
        chosen = out
    if chosen is not idx:  # a 1x1 window: every index is its tap's, a constant in idx's shape
        result.made(
            graph.add_op(
                "RESHAPE",
                [chosen, _shape(graph, idx)],
                [idx],
                Options("ReshapeOptions", newShape=list(idx.shape)),
                after=last,
            )
        )


def _shape(graph: Graph, t: Tensor) -> Tensor:
    return graph.add_const(graph.unique_name(f"{t.name}/shape"), np.array(t.shape, np.int32), "INT32")


def _tap_values(
    graph: Graph, result: PassResult, xp: Tensor, shape: tuple, tap: tuple, strides: tuple, idx: Tensor, after: Op
) -> Tensor:
    """STRIDED_SLICE of the padded input: the value of tap (ky, kx) in every window."""
    n, oh, ow, c = shape
    (ky, kx), (sh, sw) = tap, strides
    begin = np.array([0, ky, kx, 0], np.int32)
    end = np.array([n, ky + (oh - 1) * sh + 1, kx + (ow - 1) * sw + 1, c], np.int32)
    consts = [
        graph.add_const(graph.unique_name(f"{idx.name}/tap{ky}_{kx}/{what}"), v, "INT32")
        for what, v in (("begin", begin), ("end", end), ("strides", np.array([1, sh, sw, 1], np.int32)))
    ]
    out = graph.add_tensor(graph.unique_name(f"{idx.name}/tap{ky}_{kx}/value"), "FLOAT32", shape)
    options = Options(
        "StridedSliceOptions", beginMask=0, endMask=0, ellipsisMask=0, newAxisMask=0, shrinkAxisMask=0, offset=False
    )
    result.made(graph.add_op("STRIDED_SLICE", [xp, *consts], [out], options, after=after))
    return out


def _tap_indices(x_shape: tuple, shape: tuple, offset: tuple, strides: tuple, include_batch: bool, dtype) -> np.ndarray:
    """TF's flat input index of tap `offset` (relative to the unpadded input) in every window."""
    n, h, w, c = x_shape
    _, oh, ow, _ = shape
    ys = (np.arange(oh) * strides[0] + offset[0])[:, None, None]
    xs = (np.arange(ow) * strides[1] + offset[1])[None, :, None]
    flat = (ys * w + xs) * c + np.arange(c)[None, None, :]
    batch = (np.arange(n) * h * w * c)[:, None, None, None] if include_batch else np.zeros((n, 1, 1, 1), np.int64)
    return (flat[None] + batch).astype(dtype)
