"""What the passes on quantized graphs share: a tensor's quantization parameters, when a
requantization (QUANTIZE, or a layer writing another scale) is the identity or can be merged
without changing an integer, and taking a quantize/dequantize op out of the graph.

LiteRT's integer arithmetic (reference/quantized.py reproduces it bit for bit): real = s·(q - z);
QUANTIZE from float is clamp(round(x / s) + z); from integers (a requantization) it is
clamp(z_out + MBQM(q - z_in, s_in / s_out)), MBQM the fixed-point multiply of reference/quantized.py,
and DEQUANTIZE is s·(q - z) in float32.

Two facts every exactness argument here rests on:

1. DEQUANTIZE then QUANTIZE with the same (dtype, scale, zero point) gives back every integer:
   f = s·(q - z) is float32 within a relative 2^-24 of the real product, so f / s is within
   2^-23·|q - z| <= 2^-23·65535 < 1/2 of the integer q - z and rounds back to it (8- and 16-bit
   types; 32-bit ones are not taken).
2. A requantization whose input and output scales are the same float32 number multiplies by
   exactly 1: LiteRT's multiplier for 1.0 is 2^30 with shift 1, and MBQM(v, 2^30, 1) = v for
   every int32 v. It only shifts the zero point and clamps to the output type: integers in, the
   same integers (moved by z_out - z_in) out, as long as nothing is clamped.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import ACTIVATION_BOUNDS

INTEGER_TYPES = frozenset({"INT8", "UINT8", "INT16"})  # the types fact 1 covers


class PerTensor(NamedTuple):
    dtype: str
    scale: np.float32
    zero_point: int

    @property
    def range(self) -> tuple[int, int]:
        info = np.iinfo(NUMPY_DTYPES[self.dtype])
        return int(info.min), int(info.max)

    def __str__(self) -> str:
        return f"{self.dtype} scale {float(self.scale):.9g} zero point {self.zero_point}"


def scale_count(quantization) -> int:
    """How many scales a quantization holds (0 when none; above 1 when per channel). The reader
    gives numpy arrays, whose truth value is no test of emptiness."""
    scale = getattr(quantization, "scale", None)
    return 0 if scale is None else len(scale)


def per_tensor(t: Tensor | None) -> PerTensor | str:
    """`t`'s one scale and zero point, or why it has none (not quantized, per-channel, 32-bit)."""
    if t is None or not t.is_quantized:
        return f"{'a missing tensor' if t is None else repr(t.name)} is not quantized"
    q = t.quantization
    scale, zero = np.asarray(q.scale, np.float32).reshape(-1), np.asarray(q.zeroPoint, np.int64).reshape(-1)
    if scale.size != 1 or zero.size > 1:
        return f"{t.name!r} is quantized per channel ({scale.size} scales)"
    if t.dtype not in INTEGER_TYPES:
        return f"{t.name!r} is {t.dtype}, not an 8- or 16-bit integer type"
    return PerTensor(t.dtype, scale[0], int(zero[0]) if zero.size else 0)


def same_parameters(a: Tensor, b: Tensor) -> str | None:
    """None when `a` and `b` hold integers of one type read with one scale and zero point (fact 1
    applies to them); else why not."""
    pa, pb = per_tensor(a), per_tensor(b)
    for p in (pa, pb):
        if isinstance(p, str):
            return p
    if pa != pb:
        return f"{a.name!r} is {pa}, {b.name!r} is {pb}"
    return None


def merged_requantize(first: PerTensor, second: PerTensor) -> str | None:
    """None when requantizing to `first` and then to `second` gives, for every input and in every
    LiteRT kernel, what requantizing straight to `second` gives; else why not.

    With one scale (fact 2), the first gives clamp(r + z1) to its type's range [a1, b1], r the
    value its kernel rounds to, and the second moves that to z2 and clamps to [a2, b2]: in all,
    r + z2 clamped to [max(a1 - z1 + z2, a2), min(b1 - z1 + z2, b2)], which is the direct [a2, b2]
    exactly when the first's range, moved to the second's zero point, covers it. But the direct
    QUANTIZE must round as the first did, and only a kernel of the same input and output types is
    sure to: XNNPACK (LiteRT's default) converts uint8 -> int8 otherwise than uint8 -> uint8 (one
    step apart on seed 507 of the quantized fuzz), has no int16 kernel at all, and rounds ties
    to even where the builtin kernels round them away from zero. So the types must be one, which
    with one scale leaves equal parameters: the second QUANTIZE changes nothing. Two scales round
    twice: refused."""
    if first.scale != second.scale:
        return (
            f"two scales ({float(first.scale):.9g} then {float(second.scale):.9g}) round twice; "
            "one requantization rounds once, which can differ by a step"
        )
    if first.dtype != second.dtype:
        return (
            f"the merged QUANTIZE would round to {second.dtype} where the first rounded to {first.dtype}: "
            "another kernel, and LiteRT's kernels for the two do not round alike (XNNPACK's and the builtin "
            "ones differ at ties; XNNPACK has no int16 kernel)"
        )
    (a1, b1), (a2, b2) = first.range, second.range
    shift = second.zero_point - first.zero_point
    if a1 + shift > a2 or b1 + shift < b2:
        return (
            f"the first ({first}) clamps to [{a1 + shift}, {b1 + shift}] in the second's terms, inside "
            f"its range [{a2}, {b2}]"
        )
    return None


def activation_range(p: PerTensor, fused: str) -> tuple[int, int] | None:
    """The integers a layer writing `p` with fused activation `fused` clamps to (LiteRT's
    CalculateActivationRangeQuantized: z + round-half-away(float32(bound) / scale), within the
    type's range); None for an activation quantized kernels do not clamp to a range."""
    if fused not in ACTIVATION_BOUNDS:
        return None
    low, high = p.range
    bound_low, bound_high = ACTIVATION_BOUNDS[fused]

    def level(bound: float) -> int:
        v = np.float32(bound) / p.scale
        return p.zero_point + int(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)))

    if bound_low is not None:
        low = max(low, level(bound_low))
    if bound_high is not None:
        high = min(high, level(bound_high))
    return low, high


def output_requantize(layer: PerTensor, requantized: PerTensor, fused: str) -> str | None:
    """None when a layer writing `layer` with activation `fused`, then a QUANTIZE to
    `requantized`, gives the integers the layer writes when it writes `requantized` itself (with
    the same activation); else why not.

    The layer computes r = MBQM(acc, s_in·s_w / s_out) once whatever its zero point; with one
    scale (fact 2) the QUANTIZE adds z2 - z1 and clamps: r + z2 clamped to the layer's range at
    z1 moved to z2, then to the type's. Writing (s, z2) clamps r + z2 to the range at z2. Equal
    when the two intervals are."""
    if layer.dtype != requantized.dtype:
        return f"the QUANTIZE converts {layer.dtype} to {requantized.dtype}: the layer computes one type"
    if layer.scale != requantized.scale:
        return (
            f"the QUANTIZE rescales ({float(layer.scale):.9g} to {float(requantized.scale):.9g}): LiteRT rounds the "
            "layer's accumulator, then the requantized value; one multiplier rounds once, which can differ by a step"
        )
    first, direct = activation_range(layer, fused), activation_range(requantized, fused)
    if first is None or direct is None:
        return f"a quantized layer does not clamp its {fused} activation to a range"
    shift = requantized.zero_point - layer.zero_point
    low, high = requantized.range
    through = (max(first[0] + shift, low), min(first[1] + shift, high))
    if through != direct:
        return (
            f"the layer clamps to [{first[0]}, {first[1]}] (at zero point {layer.zero_point}), which after the "
            f"QUANTIZE is [{through[0]}, {through[1]}], not the [{direct[0]}, {direct[1]}] it would clamp to at "
            f"zero point {requantized.zero_point}"
        )
    return None


def channel_axis_after(t: Tensor, layout: Op) -> int | None | str:
    """Where the per-channel axis of `t` (input 0 of a TRANSPOSE or RESHAPE `layout`) lies in the
    op's output: None when `t` has one scale for all (nothing to move), the axis, or why it
    cannot be said (a RESHAPE that splits or merges the channel axis with others)."""
    q = t.quantization
    if scale_count(q) <= 1:
        return None
    axis, out = int(q.quantizedDimension or 0), layout.outputs[0].shape
    if layout.kind == "TRANSPOSE":
        perm = [int(p) for p in layout.operand(1).const_data.reshape(-1)]
        return perm.index(axis % len(perm))
    before = math.prod(t.shape[:axis])
    for k, size in enumerate(out):  # the channel's elements keep their index when the axis and all before it do
        if size == t.shape[axis] and math.prod(out[:k]) == before:
            return k
    return f"the RESHAPE to {list(out)} merges or splits {t.name!r}'s channel axis {axis} ({t.shape[axis]} channels)"


def quantization_like(template, scales, zero_points, axis: int = 0):
    """A copy of the quantization record `template` holding `scales` and `zero_points` along
    `axis` (its min/max dropped: they described the template's values)."""
    import copy

    q = copy.copy(template)
    q.scale = np.asarray(scales, np.float32).reshape(-1)
    q.zeroPoint = np.asarray(zero_points, np.int64).reshape(-1)
    q.quantizedDimension = axis
    q.min = q.max = None
    return q


def stand_in(graph: Graph, y: Tensor, x: Tensor, chain: list[Op]) -> str | None:
    """Make `x` stand for `y` (they hold the same values): y's readers read x. When the outside sees
    y, the ops of `chain` (from x's readers to y's producer) go and x's producer writes y instead,
    which needs x to have a producer and every tensor of the chain but y to be read only inside it.
    None when done, else why not (nothing changed)."""
    if not graph.is_observed(y):
        graph.replace_uses(y, x)
        return None
    inside = {id(op) for op in chain}
    producer = x.producer
    middle = [x, *(t for op in chain for t in op.outputs if t is not y)]
    if producer is None or any(
        graph.is_observed(t) or any(id(u) not in inside for u in graph.consumers(t)) for t in middle
    ):
        return f"{y.name!r} is a model output and {x.name!r} cannot be renamed to it (read elsewhere or no producer)"
    for op in reversed(chain):
        graph.remove_op(op)
    graph.set_output(producer, producer.outputs.index(x), y)
    return None
