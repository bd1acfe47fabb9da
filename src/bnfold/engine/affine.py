"""Affine chains: the form batch norm takes in a converted model, and the algebra of folding it.

Inference-time batch norm is y = s·x + t per channel (s = γ/√(σ²+ε), t = β − μ·s). Converters
lower it to elementwise ops with constant operands. A chain starting at tensor x is a run of
single-use ops, each combining the running value with a per-channel constant c:

    MUL(v, c) | MUL(c, v):  s ← s·c,  t ← t·c
    ADD(v, c) | ADD(c, v):  t ← t + c
    SUB(v, c):              t ← t − c
    SUB(c, v):              s ← −s,   t ← c − t
    DIV(v, c):              s ← s/c,  t ← t/c        (c ≠ 0)

so the whole chain is y = act(s·x + t) with the last op's fused activation `act`. The running
(s, t) is kept in float64 per channel; everything else (which layer, which axis) is the caller's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ..ir.const import Scaled
from ..ir.graph import Graph, Op, Tensor, float_source
from ..ir.ops import AFFINE_KINDS
from .report import Refusal

# Per-channel vectors are float64 [C]; a channel count beyond this comes from a corrupt shape, and
# matching it would allocate gigabytes for a file of kilobytes.
MAX_CHANNELS = 1 << 22


class AffineChain:
    """y = act(scale·x + shift) along `axis` of x; `ops` in order, `output` the last op's output;
    `scale` and `shift` float64 [C]."""

    __slots__ = ("input", "axis", "ops", "scale", "shift", "activation", "constants")

    def __init__(
        self,
        input: Tensor,
        axis: int,
        ops: list[Op],
        scale: np.ndarray,
        shift: np.ndarray,
        activation: str,
        constants: list[Tensor],
    ):
        self.input, self.axis, self.ops, self.scale, self.shift = input, axis, ops, scale, shift
        self.activation, self.constants = activation, constants

    @property
    def output(self) -> Tensor:
        return self.ops[-1].outputs[0]


def channel_vector(const: Tensor, x_shape: tuple[int, ...], axis: int) -> np.ndarray | Refusal:
    """The constant as a float64 vector over channels of `axis`, or why it is not per-channel.

    Accepted: any shape that broadcasts onto x without growing it and is 1 everywhere except
    (possibly) at `axis` after right-alignment: [], [1], [C], [1,C], [1,1,C], [1,1,1,C], [1,C,1,1]
    for axis 1 of a rank-4 x, and so on.
    """
    source = float_source(const)
    if source is None and not const.is_const:
        return Refusal(f"operand {const.name!r} is not a constant")
    if source is None:
        return Refusal(
            f"constant {const.name!r} is {const.dtype}{' (quantized)' if const.is_quantized else ''}, not float32"
        )
    shape, rank = const.shape, len(x_shape)
    channels = x_shape[axis]
    if len(shape) > rank:
        return Refusal(
            f"constant {const.name!r} of shape {list(shape)} has more dimensions than the data {list(x_shape)}"
        )
    aligned = (1,) * (rank - len(shape)) + tuple(shape)
    for i, d in enumerate(aligned):
        if i == axis:
            if d not in (1, channels):
                return Refusal(f"constant {const.name!r} of shape {list(shape)} does not match {channels} channels")
        elif d != 1:
            return Refusal(
                f"constant {const.name!r} of shape {list(shape)} varies along axis {i}, "
                f"not only the channel axis {axis}"
            )
    values = np.asarray(source.data, dtype=np.float64).reshape(-1)
    return np.broadcast_to(values, (channels,)).copy() if values.size == 1 else values.copy()


def _constant_operand(op: Op, value: Tensor) -> tuple[Tensor | None, bool]:
    """(the other operand, whether the running value is the first operand)."""
    a, b = op.input(0), op.input(1)
    if a is value and b is not value:
        return b, True
    if b is value and a is not value:
        return a, False
    return None, True


def _step(kind: str, value_first: bool, c: np.ndarray, s: np.ndarray, t: np.ndarray) -> tuple | Refusal:
    if kind == "MUL":
        return s * c, t * c
    if kind == "ADD":
        return s, t + c
    if kind == "SUB":
        return (s, t - c) if value_first else (-s, c - t)
    if kind == "DIV":
        if not value_first:
            return Refusal("DIV of a constant by the data is not affine")
        if np.any(c == 0):
            return Refusal("DIV by a constant containing zero")
        return s / c, t / c
    return Refusal(f"{kind} is not an affine op")


def match_chain(
    graph: Graph, x: Tensor, axis: int, *, start: Op | None = None, kinds: frozenset[str] = AFFINE_KINDS
) -> AffineChain | Refusal | None:
    """The longest affine chain reading `x` (None if x does not feed one), of ops of `kinds`
    only (the ONE passes that fold just a MUL or just an ADD end their chain at any other op).

    The first chain op must be x's only reader (checked by the caller as part of its own
    single-use guard), unless `start` names it: then the chain starts at that reader of x and x
    may have other readers (the caller decides what they mean). Every further tensor the chain
    consumes must have exactly one reader and not be a graph output. An activation may sit only
    on the last op: a fused activation ends the chain (conv -> ADD(3, RELU6) -> DIV(6), a hard
    sigmoid, folds the ADD and its RELU6 into the conv and leaves the DIV as a chain of its own).
    """
    channels = x.shape[axis] if 0 <= axis < len(x.shape) else None
    if channels is None or not 0 < channels <= MAX_CHANNELS:
        return None  # no channel axis, or one too large to be a real model's (a corrupt shape)
    ops: list[Op] = []
    constants: list[Tensor] = []
    s = np.ones(channels)
    t = np.zeros(channels)
    value = x
    activation = "NONE"
    while True:
        users = [start] if start is not None and not ops else graph.consumers(value)
        if len(users) != 1 or users[0].kind not in kinds:
            break
        op = users[0]
        if ops and not graph.has_single_use(value, op):
            break
        const, value_first = _constant_operand(op, value)
        if const is None or (float_source(const) is None and not const.is_const):
            break
        out = op.outputs[0]
        if (
            out.shape != value.shape
            or out.dtype != "FLOAT32"
            or value.dtype != "FLOAT32"
            or out.is_quantized
            or value.is_quantized
        ):
            refusal = Refusal("the elementwise op changes the shape or is not float32")
            return _at(refusal, op) if not ops else _finish(x, axis, ops, s, t, activation, constants)
        c = channel_vector(const, value.shape, axis)
        if isinstance(c, Refusal):
            return _at(c, op) if not ops else _finish(x, axis, ops, s, t, activation, constants)
        stepped = _step(op.kind, value_first, c, s, t)
        if isinstance(stepped, Refusal):
            return _at(stepped, op) if not ops else _finish(x, axis, ops, s, t, activation, constants)
        if activation != "NONE":
            break  # the previous op's activation ends the chain; what follows is a chain of its own
        s, t = stepped
        ops.append(op)
        constants.append(const)
        activation = op.fused_activation
        value = out
        if graph.is_observed(out):
            break  # the chain's result is visible outside: it must end here
    if not ops:
        return None
    return _finish(x, axis, ops, s, t, activation, constants)


def _at(refusal: Refusal, op: Op) -> Refusal:
    return Refusal(refusal.reason, op)


def _finish(x, axis, ops, s, t, activation, constants) -> AffineChain:
    return AffineChain(x, axis, ops, s, t, activation, constants)


def data_input(op: Op) -> Tensor | None:
    """The one non-constant operand of a binary op (None if there is not exactly one)."""
    data = [t for t in op.inputs[:2] if t is not None and not t.is_const and float_source(t) is None]
    return data[0] if len(data) == 1 and len(op.inputs) >= 2 else None


def _continues_chain(graph: Graph, x: Tensor, op: Op) -> bool:
    """op is the middle of a longer chain (x made by an activation-free affine op with a constant,
    read only by op): the chain is matched from its start instead."""
    p = x.producer
    return (
        p is not None
        and p.kind in AFFINE_KINDS
        and p.fused_activation == "NONE"
        and data_input(p) is not None
        and graph.has_single_use(x, op)
    )


def chains_from_starts(graph: Graph) -> Iterator[AffineChain | Refusal]:
    """Every affine chain matched from its first op, whatever produced its input, per channel on
    the axis its first constant varies along (channels last, or NCHW's axis 1 in PyTorch exports).

    Lazy, so a pass may rewrite the graph between chains: ops removed meanwhile are skipped.
    """
    for op in list(graph.ops):
        if not graph.contains(op) or op.kind not in AFFINE_KINDS:
            continue
        x = data_input(op)
        if x is None or not x.shape or _continues_chain(graph, x, op):
            continue
        chain = match_chain(graph, x, varying_axis(_constant_operand(op, x)[0], len(x.shape)), start=op)
        if chain is not None:
            yield chain


def varying_axis(const: Tensor | None, rank: int) -> int:
    """The one axis of data of `rank` along which `const` (broadcast onto it) varies; the last axis
    when it varies along none (a scalar) or several (match_chain then says why it is no chain)."""
    shape = () if const is None else const.shape
    if len(shape) > rank:
        return rank - 1
    aligned = (1,) * (rank - len(shape)) + tuple(shape)
    varying = [i for i, d in enumerate(aligned) if d != 1]
    return varying[0] if len(varying) == 1 else rank - 1


def remove_chain(graph: Graph, chain: AffineChain) -> None:
    """Make whatever produced the chain's input produce its output instead, and drop the chain."""
    producer = chain.input.producer
    assert producer is not None  # a chain is removed only after the layer making its input
    graph.set_output(producer, producer.outputs.index(chain.input), chain.output)
    for op in chain.ops:
        graph.remove_op(op)


def freed_constants(graph: Graph, chain: AffineChain) -> list[str]:
    """Names of the chain's constants that nothing else reads (freed once the chain goes)."""
    chain_ops = {id(op) for op in chain.ops}
    return [
        c.name
        for c in chain.constants
        if all(id(u) in chain_ops for u in graph.consumers(c)) and not graph.is_observed(c)
    ]


def finite(*arrays: np.ndarray | Scaled) -> bool:
    """Whether every value of every array is finite. min and max propagate NaN, so both finite
    means all are: two passes that allocate nothing, where isfinite would write a bool copy (a
    fold asks it of every layer's few weights: the two scalars are judged by math, not numpy).
    Folded weights not computed yet are judged by their bound (Scaled.provably_finite) and
    computed only when it cannot tell (values near the dtype's largest)."""
    return all(_finite(a) for a in arrays)


def _finite(a: np.ndarray | Scaled) -> bool:
    if isinstance(a, Scaled):
        return a.provably_finite() or _finite(a.values())
    return a.size == 0 or (math.isfinite(a.min()) and math.isfinite(a.max()))  # (math: ~1 us less a scalar)


def scale_along(weights: np.ndarray | Scaled, vector: np.ndarray, axis: int) -> Scaled:
    """weights · vector in the weights' own dtype (float32, or float16: never widened), the vector
    laid along `axis`: each product computed in float64 and rounded once, when the values are
    first needed (ir/const.py Scaled; the writer streams them without ever holding them whole).
    Weights that are themselves a pending Scaled get one more step, rounded as if computed."""
    return Scaled(weights, vector, axis)


def kept_constant(values: np.ndarray, chain: AffineChain) -> np.ndarray:
    """A per-channel constant a fold leaves in the graph in place of the chain's: shaped like the
    chain's own per-channel constant (runtimes pick their broadcast kernel by shape), and one
    value for every channel stays a scalar, so no scalar-broadcast op becomes a per-channel one."""
    if values.size and np.all(values == values.reshape(-1)[0]):
        return values.reshape(-1)[:1].reshape(())
    shape = next((c.shape for c in chain.constants if math.prod(c.shape) == len(values)), None)
    if shape is None:
        rank = len(chain.input.shape)
        shape = (1,) * chain.axis + (len(values),) + (1,) * (rank - 1 - chain.axis)
    return values.reshape(shape)


def as_float32(values: np.ndarray, like: np.ndarray | None = None) -> np.ndarray:
    """Round the float64 result once, to float32 or to the dtype of `like` (float16 weights stay
    float16); callers check `finite` on the result."""
    dtype = np.float32 if like is None else like.dtype
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(dtype)
