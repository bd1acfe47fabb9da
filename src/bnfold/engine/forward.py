"""Forward folding: a per-channel scale (and shift) *before* layers goes into their input channels.

Used by fuse_batchnorm_forward (y = s·x + t before the layers) and fuse_preactivation_batchnorm
(relu(s·x + t) = s·relu(x + t/s) for s > 0, so s moves forward across the ReLU). ir/ops.py says
which weight axis carries the input channels of each layer kind and how the data's C channels lie
along it ("exact", "repeat" for depthwise, "tile" for an FC reading a flattened NHWC map).

* Scale, into the input-channel axis of every reader's weights — exact for any padding, because
  padded zeros stay zero under scaling:
      CONV_2D            W'[o,h,w,i]     = W[o,h,w,i]·s[i]
      DEPTHWISE_CONV_2D  W'[0,h,w,iM+m]  = W[0,h,w,iM+m]·s[i]
      FULLY_CONNECTED    W'[o,k]         = W[o,k]·s[k mod C]
* A per-channel constant c reaching the layer's input adds Σ W·c to each output channel:
      b'[o] = b[o] + Σ_{h,w,i} W[o,h,w,i]·c[i]
  exact only where no zero padding reaches the input (the padded zeros would have been c):
  VALID padding, SAME padding whose geometry pads nothing (a 1×1 kernel always), an FC, and no
  zero PAD on the way (`Sink.padding` says why not).

`find_sinks` finds the layers that read a tensor — directly, through a RESHAPE that flattens into
a FULLY_CONNECTED, and (when asked) through ops that commute with a positive per-channel scale
and keep the channel last (pools with NONE/RELU, MEAN over other axes, zero PAD) — or refuses.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..ir.const import Scaled
from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import ACTIVATION_KINDS, INDEX_DTYPES, LAYERS, PADDINGS, Layer, info
from .affine import scale_along
from .backward import weights_refusal
from .layout import map_axis
from .report import Refusal

# ---- the math ---------------------------------------------------------------------------------


def along_input(weights: np.ndarray | Scaled, spec: Layer, per_channel: np.ndarray, inner: int = 1) -> np.ndarray:
    """A per-channel vector laid out as the weights' input-channel axis holds the channels; `inner`
    is how many consecutive entries of a flattened FC row share a channel (NCHW flattens: H·W)."""
    n = weights.shape[spec.in_axis]
    if spec.input_channels == "repeat":
        return np.repeat(per_channel, n // len(per_channel))
    if spec.input_channels == "tile":
        return np.tile(np.repeat(per_channel, inner), n // (len(per_channel) * inner))
    return per_channel


def fold_input_scale(weights: np.ndarray | Scaled, spec: Layer, scale: np.ndarray, inner: int = 1) -> Scaled:
    """W' with every input channel i scaled by s[i] (in the weights' dtype, one rounding; pending:
    affine.scale_along)."""
    return scale_along(weights, along_input(weights, spec, scale, inner), spec.in_axis)


def constant_input_response(
    weights: np.ndarray | Scaled, spec: Layer, constant: np.ndarray, inner: int = 1
) -> np.ndarray:
    """What a constant per-channel input adds to each output channel (float64): Σ W·c over the
    kernel taps and input channels."""
    w = np.asarray(weights, dtype=np.float64)
    v = along_input(weights, spec, constant, inner)
    shape = [1] * w.ndim
    shape[spec.in_axis] = len(v)
    return (w * v.reshape(shape)).sum(axis=tuple(i for i in range(w.ndim) if i != spec.out_axis))


# ---- the IR: which layers read a tensor -------------------------------------------------------


class Sink(NamedTuple):
    """A layer that takes a scale into its input channels. `root` is the op reading the batch
    norm's result on the way to it (the layer itself, or the first layout/pool/pad op), `via` a
    flattening RESHAPE right before an FC, `inner` how many consecutive FC inputs share a channel.
    `padding` says why zero padding would see a constant added to its input (None: it would not)."""

    layer: Op
    spec: Layer
    root: Op
    via: Op | None
    padding: Refusal | None
    inner: int = 1
    channels: int = 0  # how many channels of data the layer reads

    @property
    def name(self) -> str:
        return self.layer.outputs[0].name

    def per_channel(self, values: np.ndarray) -> np.ndarray:
        """`values` for this layer's channels: as they are, or the one value a UNIFORM chain has
        repeated for every channel the layer reads."""
        return values if len(values) == self.channels else np.full(self.channels, values[0])


def padding_refusal(layer: Op, x: Tensor) -> Refusal | None:
    """None when no implicit zero padding reaches `layer`'s input `x`, else why it does.

    VALID padding and FULLY_CONNECTED never pad; SAME pads only when the kernel's reach
    (out−1)·stride + (k−1)·dilation + 1 exceeds the input size (so 1×1 kernels never do).
    """
    if layer.kind == "FULLY_CONNECTED":
        return None
    options = layer.options
    if getattr(options, "padding", None) == PADDINGS.index("VALID"):
        return None
    w = layer.input(1)
    out = layer.outputs[0]
    sig_in, sig_out = x.signature, out.signature
    if (
        w is None
        or len(w.shape) != 4
        or len(x.shape) != 4
        or len(out.shape) != 4
        or len(sig_in) != 4
        or len(sig_out) != 4
    ):
        return Refusal(f"{layer.kind} is not a 4-D NHWC layer with a 4-D filter")
    if min(sig_in[1:3]) < 0 or min(sig_out[1:3]) < 0:
        return Refusal(f"{layer.kind} has SAME padding and a dynamic spatial size")
    strides = (getattr(options, "strideH", 1) or 1, getattr(options, "strideW", 1) or 1)
    dilations = (getattr(options, "dilationHFactor", 1) or 1, getattr(options, "dilationWFactor", 1) or 1)
    for d in range(2):
        size, out_size, k = x.shape[1 + d], out.shape[1 + d], w.shape[1 + d]
        if (out_size - 1) * strides[d] + (k - 1) * dilations[d] + 1 > size:
            return Refusal(
                f"{layer.kind} {out.name!r} has SAME padding that pads its {w.shape[1]}x{w.shape[2]} kernel's input"
            )
    return None


PADDED_ON_THE_WAY = Refusal("a zero PAD on the way turns the constant into 0 at the border")
ZERO_PADS = ("PAD", "PADV2")


class Crossing(NamedTuple):
    """What the value travelling forward may cross on its way to the layers: ops whose fused
    activation is one of `activations` (NONE for an affine value s·x + t; NONE or RELU for a
    scale alone, s ≥ 0), and MAX_POOL_2D only when every scale is ≥ 0 (max(s·v) = s·max(v))."""

    activations: frozenset
    nonnegative: bool


# The axis of a value that is the same for every channel (a scalar batch norm, keras' Rescaling,
# a hard-swish's /6): it crosses any layout op and reaches a layer along any axis.
UNIFORM = -1


def find_sinks(graph: Graph, y: Tensor, axis: int, crossing: Crossing) -> list[Sink] | Refusal:
    """Every layer reading `y` (per channel on `axis`, or UNIFORM) as a Sink — directly, through
    layout ops that keep the channel a whole axis, through ops that commute with a per-channel scale
    (pools, MEAN over other axes, zero PAD), through a flatten into a FULLY_CONNECTED — or why some
    reader of y cannot take a scale."""
    sinks: list[Sink] = []
    frontier: list[tuple[Tensor, int, bool, Op | None]] = [
        (y, axis, False, None)
    ]  # (tensor, channel axis, a zero PAD on the way, root)
    while frontier:
        v, a, padded, root = frontier.pop()
        users = graph.consumers(v)
        if not users:
            return Refusal(f"{v.name!r} has no reader")
        for u in users:
            step_root = root or u
            if u.input(0) is not v or any(t is v for t in u.inputs[1:]):
                return Refusal(f"{v.name!r} is read by {u.kind} as something other than its data input")
            moved = _cross(graph, u, a, crossing)
            if isinstance(moved, int):
                frontier.append((u.outputs[0], moved, padded or u.kind in ZERO_PADS, step_root))
                continue
            if u.kind == "RESHAPE" and a != UNIFORM:  # a flatten (the channel no whole axis) into an FC
                fc, flat = _flattened_reader(graph, u)
                if fc is None:
                    return (
                        moved
                        if moved is not None
                        else Refusal(
                            "a RESHAPE of the batch norm's result feeds something other than a single FULLY_CONNECTED"
                        )
                    )
                sink = _sink(fc, flat, v.shape[a], _inner(v, a), u, step_root, padded)
            elif moved is not None:
                return moved
            else:
                sink = _direct_sink(u, v, a, step_root, padded)
            if isinstance(sink, Refusal):
                return sink
            sinks.append(sink)
    return sinks


def _inner(v: Tensor, axis: int) -> int:
    return int(np.prod(v.shape[axis + 1 :], dtype=np.int64))


def _cross(graph: Graph, op: Op, axis: int, crossing: Crossing) -> int | Refusal | None:
    """The channel axis of op's output when the travelling value may cross op; a Refusal when op
    is an op values travel through but this one cannot be crossed; None when op is no such op."""
    facts = info(op.kind)
    if not (facts.moves_elements or facts.commutes_with_scale):
        return None
    where = f"{op.kind} -> {op.outputs[0].name}"
    out = op.outputs[0]
    if len(op.outputs) != 1 or graph.is_observed(out):
        return Refusal(f"{where}: its output is a graph output and would change")
    if facts.moves_elements:
        moved = UNIFORM if axis == UNIFORM else map_axis(op, axis)
        return moved.prefixed(f"{where}: ") if isinstance(moved, Refusal) else moved
    if op.has_fused_activation_slot and op.fused_activation not in crossing.activations:
        return Refusal(f"{where}: its fused {op.fused_activation} does not commute with the batch norm")
    x = op.input(0)
    if x is None:
        return Refusal(f"{where}: it has no data input")
    rank = len(x.shape)
    if axis == UNIFORM:  # the same value everywhere: any reduction, pool or zero pad keeps it so
        refusal = _pad_refusal(op, None, where) if op.kind in ZERO_PADS else None
        if op.kind == "MAX_POOL_2D" and not crossing.nonnegative:
            refusal = Refusal(f"{where}: a negative scale does not commute with max")
        return refusal or UNIFORM
    if op.kind == "MEAN":
        return _mean_axis(op, axis, rank, where)
    if op.kind in ZERO_PADS:
        return _pad_refusal(op, axis, where) or axis
    # pools: NHWC only, and max commutes with a scale only when it is not negative
    if rank != 4 or axis != 3:
        return Refusal(f"{where}: pools the channel on axis {axis}, not its channel axis")
    if op.kind == "MAX_POOL_2D" and not crossing.nonnegative:
        return Refusal(f"{where}: a negative scale does not commute with max")
    return axis


def _mean_axis(op: Op, axis: int, rank: int, where: str) -> int | Refusal:
    axes = op.input(1)
    if axes is None or not axes.is_const or axes.dtype not in INDEX_DTYPES:
        return Refusal(f"{where}: the reduction axes are not an int32/int64 constant")
    values = [int(a) for a in np.asarray(axes.data).reshape(-1)]
    if not all(-rank <= a < rank for a in values):
        return Refusal(f"{where}: a reduction axis is outside -{rank} .. {rank - 1}")
    reduced = {a % rank for a in values}
    if axis in reduced:
        return Refusal(f"{where}: it reduces over the channel axis")
    keep = bool(getattr(op.options, "keepDims", False))
    return axis if keep else axis - sum(1 for r in reduced if r < axis)


def _pad_refusal(op: Op, axis: int | None, where: str) -> Refusal | None:
    """Why a zero pad is not crossed (None if it is): paddings not an integer constant, padding
    the channel `axis` (when one is given), or a non-zero pad value."""
    pads = op.input(1)
    if pads is None or not pads.is_const or pads.dtype not in INDEX_DTYPES:
        return Refusal(f"{where}: the paddings are not an int32/int64 constant")
    if axis is not None and np.any(np.asarray(pads.data).reshape(-1, 2)[axis] != 0):
        return Refusal(f"{where}: it pads the channel axis")
    value = op.input(2) if op.kind == "PADV2" else None
    if value is not None and (not value.is_const or np.any(np.asarray(value.data) != 0)):
        return Refusal(f"{where}: pads with a non-zero value, which a scale changes")
    return None


def _flattened_reader(graph: Graph, reshape: Op) -> tuple[Op | None, Tensor]:
    """The single FULLY_CONNECTED reading a RESHAPE's output (None if there is none)."""
    r = reshape.outputs[0]
    readers = graph.consumers(r)
    if graph.is_observed(r) or len(readers) != 1 or readers[0].kind != "FULLY_CONNECTED":
        return None, r
    return readers[0], r


def _direct_sink(layer: Op, v: Tensor, axis: int, root: Op, padded: bool) -> Sink | Refusal:
    """A layer reading v itself: the channel must be on its channel axis (the last), or an FC
    flattens v itself (then `inner` entries of a row share a channel)."""
    spec = LAYERS.get(layer.kind)
    inner = 1
    if axis == UNIFORM:
        w = layer.input(spec.weights) if spec is not None and spec.input_channels == "tile" else None
        channels = w.shape[spec.in_axis] if w is not None and spec is not None else (v.shape[-1] if v.shape else 1)
        return _sink(layer, v, channels, 1, None, root, padded)
    if spec is not None and spec.forward and axis != len(v.shape) - 1:
        if spec.input_channels != "tile":
            return Refusal(
                f"{layer.kind} {layer.outputs[0].name!r} reads the channel on axis {axis}, not its channel axis"
            )
        inner = _inner(v, axis)
    return _sink(layer, v, v.shape[axis], inner, None, root, padded)


def _sink(layer: Op, v: Tensor, channels: int, inner: int, via: Op | None, root: Op, padded: bool) -> Sink | Refusal:
    if layer.kind in ACTIVATION_KINDS:
        return Refusal(f"an activation ({layer.kind}) sits between the batch norm and the layer")
    spec = LAYERS.get(layer.kind)
    if spec is None or not spec.forward:
        return Refusal(f"{v.name!r} is also read by {layer.kind}, which cannot absorb the batch norm")
    if layer.input(0) is not v or any(t is v for t in layer.inputs[1:]):
        return Refusal(f"{v.name!r} is read by {layer.kind} as something other than its data input")
    refusal = _weights_refusal(layer, spec, channels, inner)
    if refusal:
        return refusal.prefixed(f"{layer.kind} {layer.outputs[0].name!r}: ")
    return Sink(layer, spec, root, via, PADDED_ON_THE_WAY if padded else padding_refusal(layer, v), inner, channels)


def _weights_refusal(layer: Op, spec: Layer, channels: int, inner: int) -> Refusal | None:
    refusal = weights_refusal(layer, spec)
    if refusal:
        return refusal
    w = layer.input(spec.weights)
    assert w is not None  # weights_refusal passed
    n = w.shape[spec.in_axis]
    if channels * inner == 0:  # an empty tensor (a zero dimension): nothing to scale
        return Refusal("the data has no channels (a zero dimension)")
    if spec.input_channels == "exact" and n != channels:
        return Refusal(f"grouped convolution (the filter has {n} input channels, the data {channels})")
    if spec.input_channels == "repeat" and n % channels:
        return Refusal(f"the filter's {n} channels are not a multiple of the data's {channels}")
    if spec.input_channels == "tile":
        if getattr(layer.options, "weightsFormat", 0):
            return Refusal("the weights are in a shuffled format")
        if n % (channels * inner):
            return Refusal(f"its rows of {n} values do not start on a channel boundary ({channels} channels)")
    return None
