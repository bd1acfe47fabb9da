"""Output shapes recomputed from an operator's inputs and options: the rule of each kind.

`ir/ops.py`'s `shape` column names the rule of each kind it knows; `output_shapes(op)` applies
it. The result is what LiteRT's kernels would compute in Prepare from the recorded input shapes
(their resize rules, written here from the schema's semantics); the gate (ir/invariants.py:
`check_changes`) compares it with the shapes the output file records for every operator a pass
created or changed, so a rewrite that leaves a SQUEEZE squeezing a non-unit axis, a RESHAPE of
another element count or a concatenation of mismatched shapes is bnfold's bug, never a file.

A rule returns the output shapes, or None where it cannot decide (a shape, axis or permutation
input that is not a constant, a STRIDED_SLICE with an ellipsis or new axis); it raises
ShapeProblem when the options contradict the input shapes. A kind without a rule (None in the
table: BATCH_MATMUL, GATHER_ND, SPACE_TO_BATCH_ND, WHILE, custom operators, ...) is not checked,
nor an op with an empty tensor (a zero dimension): unknown is never a refusal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

Shape = tuple[int, ...]
PADDING_SAME = 0  # ops.PADDINGS.index("SAME"), spelled here so ops.py can import this module


class ShapeProblem(Exception):
    """The operator's options or inputs contradict its input shapes (one line: what and where)."""


def _shape(t) -> Shape:
    """A present input's shape (validate_model has checked the kind's required inputs are there)."""
    return tuple(t.shape)


def _values(t) -> list[int] | None:
    """A constant integer input's values, flattened (None when it is not a constant)."""
    if t is None or not t.is_const or t.data is None:
        return None
    return [int(v) for v in np.asarray(t.data).reshape(-1)]


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ShapeProblem(f"{what} {axis} is outside the {rank} axes of its input")
    return axis % rank


def _opt(op, name: str, default=0):
    value = getattr(op.options, name, None) if op.options is not None else None
    return default if value is None else value


# ---- rules ----------------------------------------------------------------------------------


def same(op) -> list[Shape]:
    return [_shape(op.inputs[0])]


def broadcast(op) -> list[Shape]:
    shapes = [t.shape for t in op.inputs if t is not None]
    try:
        return [tuple(int(d) for d in np.broadcast_shapes(*shapes))]
    except ValueError:
        raise ShapeProblem(f"input shapes {[list(s) for s in shapes]} do not broadcast") from None


def reduce(op) -> list[Shape] | None:
    x, axes = _shape(op.inputs[0]), _values(op.input(1))
    if axes is None:
        return None
    gone = {_axis(a, len(x), "reduction axis") for a in axes}
    if _opt(op, "keepDims", False):
        return [tuple(1 if i in gone else d for i, d in enumerate(x))]
    return [tuple(d for i, d in enumerate(x) if i not in gone)]


def arg_reduce(op) -> list[Shape] | None:
    x, axis = _shape(op.inputs[0]), _values(op.input(1))
    if not axis:
        return None
    gone = _axis(axis[0], len(x), "axis")
    return [tuple(d for i, d in enumerate(x) if i != gone)]


def transpose(op) -> list[Shape] | None:
    x, perm = _shape(op.inputs[0]), _values(op.input(1))
    if perm is None:
        return None
    if sorted(perm) != list(range(len(x))):
        raise ShapeProblem(f"permutation {perm} is not one of the {len(x)} axes of its input")
    return [tuple(x[p] for p in perm)]


def reshape(op) -> list[Shape] | None:
    x, stated = _shape(op.inputs[0]), _values(op.input(1))
    if not stated:  # no shape input (or an empty one): the option, as LiteRT falls back to it
        option = _opt(op, "newShape", None)
        if option is not None and len(option):
            stated = [int(d) for d in option]
        elif stated is None:
            return None
    size = math.prod(x)
    unknown = [i for i, d in enumerate(stated) if d == -1]
    known = math.prod(d for d in stated if d != -1)
    if len(unknown) > 1 or any(d < -1 for d in stated):
        raise ShapeProblem(f"new shape {stated} is not a shape")
    if unknown:
        if known == 0 or size % known:
            raise ShapeProblem(f"new shape {stated} cannot hold the {size} elements of {list(x)}")
        stated[unknown[0]] = size // known
    elif known != size:
        raise ShapeProblem(f"new shape {stated} holds {known} elements, its input {list(x)} holds {size}")
    return [tuple(stated)]


def squeeze(op) -> list[Shape]:
    x = _shape(op.inputs[0])
    stated = _opt(op, "squeezeDims", None)  # a numpy array when read: never test its truth
    dims = [] if stated is None else [int(d) for d in stated]
    if not dims:
        return [tuple(d for d in x if d != 1)]
    gone = {_axis(d, len(x), "squeeze dim") for d in dims}
    for i in sorted(gone):
        if x[i] != 1:
            raise ShapeProblem(f"squeeze dims {dims} name axis {i} of {list(x)}, which is not 1")
    return [tuple(d for i, d in enumerate(x) if i not in gone)]


def expand_dims(op) -> list[Shape] | None:
    x, axis = _shape(op.inputs[0]), _values(op.input(1))
    if not axis:
        return None
    at = _axis(axis[0], len(x) + 1, "axis")
    return [x[:at] + (1,) + x[at:]]


def concatenation(op) -> list[Shape]:
    shapes = [t.shape for t in op.inputs if t is not None]
    rank = len(shapes[0])
    axis = _axis(_opt(op, "axis"), rank, "axis")
    for s in shapes[1:]:
        if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, shapes[0], strict=True)) if i != axis):
            raise ShapeProblem(f"inputs {[list(s) for s in shapes]} differ outside axis {axis}")
    return [shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1 :]]


def pad(op) -> list[Shape] | None:
    x, rows = _shape(op.inputs[0]), _values(op.input(1))
    if rows is None:
        return None
    if len(rows) != 2 * len(x):
        raise ShapeProblem(f"paddings have {len(rows) // 2} rows for {len(x)} axes")
    return [tuple(d + rows[2 * i] + rows[2 * i + 1] for i, d in enumerate(x))]


def tile(op) -> list[Shape] | None:
    x, multiples = _shape(op.inputs[0]), _values(op.input(1))
    if multiples is None:
        return None
    if len(multiples) != len(x):
        raise ShapeProblem(f"multiples {multiples} for {len(x)} axes")
    return [tuple(d * m for d, m in zip(x, multiples, strict=True))]


def broadcast_to(op) -> list[Shape] | None:
    x, target = _shape(op.inputs[0]), _values(op.input(1))
    if target is None:
        return None
    try:
        return [tuple(int(d) for d in np.broadcast_shapes(x, tuple(target)))]
    except ValueError:
        raise ShapeProblem(f"{list(x)} does not broadcast to {target}") from None


def slice_(op) -> list[Shape] | None:
    x, begin, size = _shape(op.inputs[0]), _values(op.input(1)), _values(op.input(2))
    if begin is None or size is None:
        return None
    if len(begin) != len(x) or len(size) != len(x):
        raise ShapeProblem(f"begin {begin} and size {size} for {len(x)} axes")
    out = tuple(d - b if s == -1 else s for d, b, s in zip(x, begin, size, strict=True))
    if any(b < 0 or s < 0 or b + s > d for d, b, s in zip(x, begin, out, strict=True)):
        raise ShapeProblem(f"begin {begin} and size {size} reach outside {list(x)}")
    return [out]


def strided_slice(op) -> list[Shape] | None:
    x = _shape(op.inputs[0])
    begin, end, strides = (_values(op.input(i)) for i in (1, 2, 3))
    if begin is None or end is None or strides is None or _opt(op, "ellipsisMask") or _opt(op, "newAxisMask"):
        return None
    begin_mask, end_mask, shrink = _opt(op, "beginMask"), _opt(op, "endMask"), _opt(op, "shrinkAxisMask")
    out = []
    for i, d in enumerate(x):
        if i >= len(begin):
            out.append(d)
            continue
        step = strides[i]
        if step == 0:
            raise ShapeProblem(f"stride 0 on axis {i}")
        if shrink >> i & 1:
            continue
        start = None if begin_mask >> i & 1 else begin[i]
        stop = None if end_mask >> i & 1 else end[i]
        if _opt(op, "offset", False) and start is not None and stop is not None:
            stop = start + stop
        out.append(len(range(d)[slice(start, stop, step)]))
    return [tuple(out)]


def split(op) -> list[Shape] | None:
    axis, data = _values(op.input(0)), op.input(1)
    if not axis or data is None:
        return None
    x = _shape(data)
    at, n = _axis(axis[0], len(x), "axis"), len(op.outputs)
    if x[at] % n:
        raise ShapeProblem(f"axis {at} of {list(x)} does not split into {n}")
    return [x[:at] + (x[at] // n,) + x[at + 1 :]] * n


def split_v(op) -> list[Shape] | None:
    x, sizes, axis = _shape(op.inputs[0]), _values(op.input(1)), _values(op.input(2))
    if sizes is None or not axis:
        return None
    at = _axis(axis[0], len(x), "axis")
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = x[at] - (sum(sizes) + 1)
    if sum(sizes) != x[at] or len(sizes) != len(op.outputs):
        raise ShapeProblem(f"sizes {sizes} do not split axis {at} of {list(x)} into {len(op.outputs)}")
    return [x[:at] + (s,) + x[at + 1 :] for s in sizes]


def gather(op) -> list[Shape]:
    params, indices = _shape(op.inputs[0]), _shape(op.inputs[1])
    at, batch = _axis(_opt(op, "axis"), len(params), "axis"), _opt(op, "batchDims")
    batch = batch + len(indices) if batch < 0 else batch
    return [params[:at] + indices[batch:] + params[at + 1 :]]


def out_size(size: int, k: int, stride: int, dilation: int, padding: int) -> int:
    """TFLite's output length of a convolution or pool along one axis of `size`, for a window of
    `k` taps `dilation` apart moved by `stride`: SAME (padding 0) ceil(size / stride), VALID
    (padding 1) ceil((size - reach + 1) / stride), which is <= 0 when the window does not fit.
    The one statement of the rule: the shape rules, the passes and the reference kernels ask it."""
    reach = (k - 1) * dilation + 1
    if padding == PADDING_SAME:
        return -(-size // stride)
    return -(-(size - reach + 1) // stride)


def pads(size: int, k: int, stride: int, dilation: int, padding: int) -> tuple[int, int]:
    """(before, after) padding along one axis, TFLite's rule: none for VALID; for SAME what the
    windows of out_size need past the input, the odd one after."""
    if padding != PADDING_SAME:
        return 0, 0
    out = out_size(size, k, stride, dilation, padding)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _window(size: int, filter_size: int, stride: int, dilation: int, padding: int) -> int:
    """One spatial output size (out_size; none when the window does not fit)."""
    return max(0, out_size(size, filter_size, stride, dilation, padding))


# the stride and dilation fields of each spatial axis, in the order of the input's axes
SPATIAL_FIELDS = {
    "HW": (("strideH", "dilationHFactor"), ("strideW", "dilationWFactor")),
    "DHW": (("strideD", "dilationDFactor"), ("strideH", "dilationHFactor"), ("strideW", "dilationWFactor")),
}


def _spatial(op, x: Shape, filters: Sequence[int], axes: str) -> tuple[int, ...]:
    """Output sizes along spatial axes named by `axes` ("HW" or "DHW") of the NHWC/NDHWC input."""
    options = op.options
    padding = getattr(options, "padding", 0)
    return tuple(
        _window(x[1 + i], filters[i], getattr(options, stride, 1) or 1, getattr(options, dilation, 1) or 1, padding)
        for i, (stride, dilation) in enumerate(SPATIAL_FIELDS[axes])
    )


def window_spans(size: int, filter_size: int, stride: int, padding: int) -> list[tuple[int, int]]:
    """The [start, stop) of the input each output position of a pool (no dilation) reads along one
    axis, the SAME padding clipped away (a pool's padding is no element: TFLite's pools skip it)."""
    count = _window(size, filter_size, stride, 1, padding)
    before = 0
    if padding == PADDING_SAME:
        before = max((count - 1) * stride + filter_size - size, 0) // 2
    starts = (i * stride - before for i in range(count))
    return [(max(start, 0), min(start + filter_size, size)) for start in starts]


def pool(op) -> list[Shape]:
    x = _shape(op.inputs[0])
    filters = (_opt(op, "filterHeight", 1), _opt(op, "filterWidth", 1))
    padding = _opt(op, "padding")
    hw = tuple(_window(x[1 + i], filters[i], _opt(op, f"stride{a}", 1), 1, padding) for i, a in enumerate("HW"))
    return [(x[0], *hw, x[3])]


def conv_2d(op) -> list[Shape]:
    x, w = _shape(op.inputs[0]), _shape(op.inputs[1])
    if len(x) != 4 or x[3] % w[3]:
        raise ShapeProblem(f"input {list(x)} does not fit weights {list(w)}")
    return [(x[0], *_spatial(op, x, w[1:3], "HW"), w[0])]


def depthwise_conv_2d(op) -> list[Shape]:
    x, w = _shape(op.inputs[0]), _shape(op.inputs[1])
    if len(x) != 4 or w[3] % max(x[3], 1):
        raise ShapeProblem(f"input {list(x)} does not fit depthwise weights {list(w)}")
    return [(x[0], *_spatial(op, x, w[1:3], "HW"), w[3])]


def conv_3d(op) -> list[Shape]:
    x, w = _shape(op.inputs[0]), _shape(op.inputs[1])
    if len(x) != 5 or x[4] % w[3]:
        raise ShapeProblem(f"input {list(x)} does not fit weights {list(w)}")
    return [(x[0], *_spatial(op, x, w[0:3], "DHW"), w[4])]


def given_shape(op) -> list[Shape] | None:
    """TRANSPOSE_CONV, CONV_3D_TRANSPOSE: the output shape is input 0's values."""
    stated = _values(op.inputs[0])
    return None if stated is None else [tuple(stated)]


def fully_connected(op) -> list[Shape]:
    x, w = _shape(op.inputs[0]), _shape(op.inputs[1])
    size, depth = math.prod(x), w[1]
    if depth == 0 or size % depth:
        raise ShapeProblem(f"input {list(x)} does not fit weights {list(w)}")
    if _opt(op, "keepNumDims", False):
        return [x[:-1] + (w[0],)]
    return [(size // depth, w[0])]


RULES: dict[str, Callable] = {
    "same": same,
    "broadcast": broadcast,
    "reduce": reduce,
    "arg_reduce": arg_reduce,
    "transpose": transpose,
    "reshape": reshape,
    "squeeze": squeeze,
    "expand_dims": expand_dims,
    "concatenation": concatenation,
    "pad": pad,
    "tile": tile,
    "broadcast_to": broadcast_to,
    "slice": slice_,
    "strided_slice": strided_slice,
    "split": split,
    "split_v": split_v,
    "gather": gather,
    "pool": pool,
    "conv_2d": conv_2d,
    "depthwise_conv_2d": depthwise_conv_2d,
    "conv_3d": conv_3d,
    "given_shape": given_shape,
    "fully_connected": fully_connected,
}


def _holds_empty(op) -> bool:
    """An input or output with a zero dimension: a -1 or a batch size has no unique value then,
    and the reader exempts such tensors too (they hold no values)."""
    return any(0 in t.shape for t in (*op.inputs, *op.outputs) if t is not None)


def shape_problem(op, rule: str | None) -> str | None:
    """Why `op`'s recorded output shapes are not what `rule` computes from its inputs and options
    (None: they are, or the rule cannot decide, or there is no rule)."""
    compute = RULES.get(rule) if rule is not None else None
    if compute is None or not op.inputs or (op.inputs[0] is None and rule != "split") or _holds_empty(op):
        return None
    try:
        expected = compute(op)
    except ShapeProblem as e:
        return str(e)
    if expected is None:
        return None
    recorded = [tuple(t.shape) for t in op.outputs]
    if len(expected) != len(recorded):
        return f"has {len(recorded)} outputs, its inputs make {len(expected)}"
    for t, want in zip(op.outputs, expected, strict=True):
        if tuple(t.shape) != tuple(want):
            return f"output {t.name!r} is recorded as {list(t.shape)}, its inputs and options make {list(want)}"
    return None
