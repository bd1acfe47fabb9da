"""Layout ops between a layer and its batch norm: following the output channel through them.

Exporters wrap layers in ops that only move data. A PyTorch model exported by TICO is NCHW on the
outside and NHWC inside, so its batch norm follows a TRANSPOSE:

    before:  CONV_2D(W, b) -> TRANSPOSE(0,3,1,2) -> MUL([1,C,1,1]) -> ADD([1,C,1,1]) -> y
    after:   CONV_2D(W', b') -> TRANSPOSE(0,3,1,2) -> y

and an atrous (dilated) convolution written by TF 1.x is SPACE_TO_BATCH_ND -> conv ->
BATCH_TO_SPACE_ND -> batch norm. A layout op L only moves elements: L(s·z + t) = s'·L(z) + t'
whenever the per-channel (s, t) along the layer's channel axis a is the same per-channel (s', t')
along the axis L sends a to. So a chain found on L's output, per channel on exactly that axis, is
a chain on the layer's output and folds backward (engine/backward.py) with the layout ops left in place;
the chain's fused activation commutes with L too (it is elementwise).

How each op moves the channel axis a (rank r input shape `i`, output shape `o`):

    TRANSPOSE(perm)         a -> perm.index(a)  (perm must be a constant)
    RESHAPE / SQUEEZE /     a -> the output axis b with prod(o[:b]) = prod(i[:a]) and o[b] = i[a],
      EXPAND_DIMS              i.e. the channel stays a whole axis with the same elements before it;
                               none exists when the reshape merges or splits the channel axis
    BATCH_TO_SPACE_ND       a must be the last axis (channels); it stays the last axis. The op
                               moves spatial positions between batch and space and crops, nothing
                               crosses channels.

SPACE_TO_BATCH_ND is deliberately *not* a layout op here: it pads with zeros, and a shift t
folded into the bias before it would leave the padding at 0 where the original has t.

Guards: every tensor on the way (the layer's output and each layout op's output) must have exactly
one reader and not be a graph output or signature tensor, because after the fold they carry the
scaled values. Reshape-like ops need static shapes (a leading dynamic batch on both sides is
allowed; the mapping is then proved on the remaining axes).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import INDEX_DTYPES, LAYOUT_KINDS
from .report import Refusal
from .reshapes import same_quantization


class LayoutPath(NamedTuple):
    """`tensor` is what the layer's output becomes after `ops`; the channel is on its `axis`."""

    tensor: Tensor
    axis: int | None  # None: no channel followed (follow)
    ops: list[Op]

    def describe(self) -> str:
        return " -> ".join(op.kind for op in self.ops)


def follow(graph: Graph, start: Tensor, axis: int | None) -> LayoutPath | Refusal:
    """Walk from `start` (channel on `axis`) through single-reader layout ops as far as they go;
    a Refusal at the layout op the channel cannot be followed through. With `axis` None no
    channel is followed (a value that is the same for every channel crosses any layout op)."""
    path = LayoutPath(start, axis, [])
    while True:
        users = graph.consumers(path.tensor)
        if len(users) != 1 or users[0].kind not in LAYOUT_KINDS or graph.is_observed(path.tensor):
            return path
        op = users[0]
        if op.input(0) is not path.tensor or not graph.has_single_use(path.tensor, op) or len(op.outputs) != 1:
            return path
        moved = None if path.axis is None else map_axis(op, path.axis)
        if isinstance(moved, Refusal):
            return Refusal(moved.reason, op)
        path = LayoutPath(op.outputs[0], moved, path.ops + [op])


def layout_source(graph: Graph, tensor: Tensor, axis: int) -> tuple[Tensor, int, Op | None]:
    """Walk back from `tensor` (channel on `axis`) through the layout ops producing it, as far as
    each one's input has no other reader and is not observed (a shift added before them reaches
    `tensor` and nothing else; whether `tensor` itself has other readers is the caller's to check):
    (the tensor reached, its channel axis, the layout op reading it — None when `tensor` itself is
    not made by a layout op)."""
    via = None
    while tensor.producer is not None and tensor.producer.kind in LAYOUT_KINDS:
        op = tensor.producer
        source = op.input(0)
        if source is None or not graph.has_single_use(source, op) or len(op.outputs) != 1:
            break
        back = [b for b in range(len(source.shape)) if map_axis(op, b) == axis]
        if len(back) != 1:
            break
        tensor, axis, via = source, back[0], op
    return tensor, axis, via


def concatenation_axis(concat: Op) -> int:
    """The axis a CONCATENATION joins, counted from 0 (its option may be negative)."""
    rank = len(concat.outputs[0].shape)
    axis = int(getattr(concat.options, "axis", 0) or 0)
    return axis + rank if axis < 0 else axis


def map_axis(op: Op, axis: int) -> int | Refusal:
    """The axis of op's output holding what `axis` of its input held, or why there is none."""
    x, y = op.input(0), op.outputs[0]
    if op.kind == "TRANSPOSE":
        return _transpose_axis(op, axis)
    if x is None:
        return Refusal(f"the {op.kind} has no data input")
    if op.kind == "BATCH_TO_SPACE_ND":
        if axis != len(x.shape) - 1 or len(y.shape) != len(x.shape) or y.shape[-1] != x.shape[axis]:
            return Refusal(
                f"BATCH_TO_SPACE_ND keeps only the last axis (channels) in place, the channel is on axis {axis}"
            )
        return len(y.shape) - 1
    return _reshape_axis(op.kind, x, y, axis)


def transpose_perm(op: Op) -> tuple[int, ...] | None:
    """The permutation of a TRANSPOSE that only permutes: its permutation a valid constant
    (negative entries counted from the end) and its output read with its input's quantization (a
    TRANSPOSE whose output has another scale or zero point also changes the values: moving or
    removing it would lose that). None otherwise."""
    perm, x = op.input(1), op.input(0)
    if op.kind != "TRANSPOSE" or perm is None or not perm.is_const or perm.dtype not in INDEX_DTYPES or x is None:
        return None
    if not same_quantization(x, op.outputs[0]):
        return None
    rank = len(x.shape)
    values = [v + rank if v < 0 else v for v in np.asarray(perm.data).reshape(-1).tolist()]
    return tuple(values) if sorted(values) == list(range(rank)) and len(op.outputs) == 1 else None


def _transpose_axis(op: Op, axis: int) -> int | Refusal:
    perm_t = op.input(1)
    if perm_t is None or not perm_t.is_const or perm_t.dtype not in INDEX_DTYPES:
        return Refusal("the TRANSPOSE permutation is not an int32/int64 constant")
    perm = transpose_perm(op)
    if perm is None:
        return Refusal(
            f"the TRANSPOSE permutation {np.asarray(perm_t.data).reshape(-1).tolist()} is not a "
            f"permutation of {len(x.shape) if (x := op.input(0)) is not None else 0} axes"
        )
    return perm.index(axis)


def _reshape_axis(kind: str, x: Tensor, y: Tensor, axis: int) -> int | Refusal:
    shapes = _static_shapes(x, y)
    if isinstance(shapes, Refusal):
        return shapes.prefixed(f"{kind}: ")
    i, o, offset = shapes
    a = axis - offset
    if a < 0:
        return Refusal(f"{kind}: the channel is on the dynamic batch axis")
    before, channels = int(np.prod(i[:a], dtype=np.int64)), i[a]
    for b in range(len(o)):
        if int(np.prod(o[:b], dtype=np.int64)) == before and o[b] == channels:
            return b + offset
    return Refusal(
        f"{kind} from {list(x.shape)} to {list(y.shape)} merges or splits the channel axis {axis} "
        f"({channels} channels) with others, so the constant is not per layer channel"
    )


def _static_shapes(x: Tensor, y: Tensor) -> tuple[tuple, tuple, int] | Refusal:
    """(input shape, output shape, leading axes left out) with every dimension static."""
    sx = x.signature
    sy = y.signature
    if all(d >= 0 for d in sx) and all(d >= 0 for d in sy):
        return x.shape, y.shape, 0
    if (
        sx
        and sy
        and sx[0] < 0
        and sy[0] < 0
        and all(d >= 0 for d in sx[1:])
        and all(d >= 0 for d in sy[1:])
        and np.prod(sx[1:], dtype=np.int64) == np.prod(sy[1:], dtype=np.int64)
    ):
        return x.shape[1:], y.shape[1:], 1
    return Refusal("shapes with dynamic dimensions other than a leading batch")
