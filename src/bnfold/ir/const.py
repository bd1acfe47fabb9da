"""Constant data: buffers that stay zero-copy views of the input until something replaces them.

A `Buffer` never changes its bytes. A pass that wants different weights assigns a new array to a
tensor (`Tensor.data = ...`), which gives that tensor a fresh Buffer; every other tensor that
referenced the old Buffer keeps it. That is the whole copy-on-write rule, and it is why a shared
filter can never be corrupted by a fold.

Folded weights are not computed when the fold happens: a fold assigns a `Scaled` (weights times
a per-channel vector), and the Buffer holding it computes the bytes only when someone reads them
(`Buffer.data`, once, then kept). The writer never reads them: it streams the product block by
block through one small scratch array straight into the output file (`Scaled.chunks`), so tens
of megabytes of folded weights are never resident at once, nor page-faulted in fresh.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from types import EllipsisType

import numpy as np

# TensorType name -> numpy dtype, for the types whose bytes numpy can interpret directly.
NUMPY_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(kind)
    for name, kind in {
        "FLOAT32": "<f4",
        "FLOAT16": "<f2",
        "FLOAT64": "<f8",
        "INT8": "i1",
        "INT16": "<i2",
        "INT32": "<i4",
        "INT64": "<i8",
        "UINT8": "u1",
        "UINT16": "<u2",
        "UINT32": "<u4",
        "UINT64": "<u8",
        "BOOL": "?",
        "COMPLEX64": "<c8",
        "COMPLEX128": "<c16",
    }.items()
}


class Scaled:
    """weights · vector along `axis`, in the weights' own dtype (float32, or float16: never
    widened), computed only when asked for: each product is taken in float64 and rounded once.

    Scaling a Scaled again adds a step, rounded after it exactly as if the first product had been
    computed and then scaled: step k takes the dtype-rounded result of step k-1. The weights are
    referenced, not copied: callers pass arrays nothing writes to (the IR's are read-only views of
    the input's mapping or of a Buffer). The vectors are copied, so nothing can change the values
    after the fold decided on them.
    """

    __slots__ = ("weights", "steps")

    def __init__(self, weights: np.ndarray | Scaled, vector: np.ndarray, axis: int):
        base, steps = (weights.weights, weights.steps) if isinstance(weights, Scaled) else (weights, ())
        vector = np.array(vector, dtype=np.float64).reshape(-1)
        if not 0 <= axis < base.ndim or len(vector) != base.shape[axis]:
            raise ValueError(f"a vector of {len(vector)} cannot scale axis {axis} of {list(base.shape)}")
        self.weights: np.ndarray = base
        self.steps: tuple[tuple[np.ndarray, int], ...] = (*steps, (vector, axis))

    shape = property(lambda self: self.weights.shape)
    dtype = property(lambda self: self.weights.dtype)
    size = property(lambda self: self.weights.size)
    ndim = property(lambda self: self.weights.ndim)
    nbytes = property(lambda self: self.weights.nbytes)

    def reshape(self, *shape) -> Scaled | np.ndarray:
        """Itself for its own shape (what Graph.set_const_input asks for); computed otherwise."""
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self if shape == self.shape else self.values().reshape(shape)

    def values(self) -> np.ndarray:
        """The product as a new array (not kept: Buffer keeps what it computes)."""
        out = np.empty(self.shape, self.dtype)
        self._product(self.weights, self._multipliers(), out)
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        values = self.values()
        return values if dtype is None else values.astype(dtype, copy=False)

    def chunks(self, scratch: np.ndarray) -> Iterator[memoryview]:
        """The product's bytes in order, as consecutive blocks computed into `scratch` (a uint8
        array of at least one element's size; each block is valid until the next is asked for)."""
        itemsize = self.dtype.itemsize
        typed = scratch[: len(scratch) // itemsize * itemsize].view(self.dtype)
        if 0 < self.size <= len(typed):  # one block (most weights): each vector broadcasts by its shape
            out = typed[: self.size].reshape(self.shape)
            self._product(self.weights, [v.reshape(self._laid(axis)) for v, axis in self.steps], out)
            yield memoryview(out.reshape(-1).view(np.uint8))
            return
        multipliers = self._multipliers()
        for key in _blocks(self.shape, len(typed)):
            block = self.weights[key]
            out = typed[: block.size].reshape(block.shape)
            self._product(block, [m[key] for m in multipliers], out)
            yield memoryview(out.reshape(-1).view(np.uint8))

    def _multipliers(self) -> list[np.ndarray]:
        """Each step's vector broadcast to the weights' shape (views: nothing is allocated), so
        that any block of the weights finds its multipliers under the same index."""
        return [np.broadcast_to(vector.reshape(self._laid(axis)), self.shape) for vector, axis in self.steps]

    def _laid(self, axis: int) -> tuple[int, ...]:
        """The shape a step's vector takes along `axis` of the weights (1 on every other axis)."""
        return tuple(self.shape[axis] if i == axis else 1 for i in range(self.ndim))

    @staticmethod
    def _product(weights: np.ndarray, multipliers: list[np.ndarray], out: np.ndarray) -> None:
        """weights times each multiplier in turn into `out`, rounding to out's dtype after each.
        The ufunc casts in small internal buffers, so no float64 copy is ever made."""
        source = weights
        with np.errstate(over="ignore", invalid="ignore"):
            for multiplier in multipliers:
                np.multiply(source, multiplier, out=out, dtype=np.float64, casting="same_kind")
                source = out

    def provably_finite(self) -> bool:
        """True when every value of the product is certainly finite, decided without computing it.

        Let B0 = max|w| (exact: the larger of -min and max, both finite, else False: min and max
        propagate NaN), and B_k = round(fl64(B_{k-1} · max|v_k|)) with `round` the cast to the
        weights' dtype (float32, float16). Each element is x_k = round(fl64(x_{k-1} · v_k[c])),
        and |x_k| = round(fl64(|x_{k-1}| · |v_k[c]|)) since both roundings are symmetric. Both are
        monotone (round to nearest never swaps the order of two values), so |x_{k-1}| <= B_{k-1}
        gives |x_k| <= B_k. A finite B_n thus bounds every value: none overflows to inf (in float16
        too, whose largest finite value 65504 is where its rounding overflows), and none is NaN
        (the weights are finite and so are the vectors, else some B_k is NaN or inf). False means
        only "not proven": the caller then checks the computed values themselves.
        """
        if self.size == 0:
            return True
        low, high = self.weights.min(), self.weights.max()
        if not (math.isfinite(low) and math.isfinite(high)):
            return False
        bound = max(-float(low), float(high))
        with np.errstate(over="ignore", invalid="ignore"):
            for vector, _ in self.steps:
                bound = float(self.dtype.type(bound * float(np.abs(vector).max())))
        return math.isfinite(bound)

    def __repr__(self) -> str:
        return f"Scaled({self.dtype}{list(self.shape)}, {len(self.steps)} step{'s' * (len(self.steps) > 1)})"


def _blocks(shape: tuple[int, ...], limit: int) -> Iterator[tuple | EllipsisType]:
    """Index keys cutting an array of `shape` into consecutive (C-order) blocks of at most `limit`
    elements: runs along the outermost axis whose sub-arrays fit, for each index of the axes
    before it. At most 3·size/limit + 1 blocks: a full run holds at least half the limit, and
    each of the (fewer than size/limit) leading indices adds at most one shorter run."""
    if math.prod(shape) == 0:
        return
    inner = math.prod(shape)
    for axis, length in enumerate(shape):
        inner //= length
        if inner <= limit:
            step = limit // inner
            for lead in np.ndindex(*shape[:axis]):
                for start in range(0, length, step):
                    yield (*lead, slice(start, start + step))
            return
    yield ...  # a 0-d array: one element


def as_stored(values, dtype: np.dtype) -> np.ndarray | Scaled:
    """`values` as a constant of `dtype` holds them: a pending product of that dtype as it is,
    anything else as an array (a Scaled of another dtype is computed, then cast)."""
    if isinstance(values, Scaled) and values.dtype == dtype:
        return values
    return np.asarray(values, dtype=dtype)


class Buffer:
    """Raw bytes of one flatbuffer Buffer entry.

    `data` is a 1-D uint8 array (often a read-only view of the memory-mapped input) or None
    when the entry has no data vector at all. `source` is the byte offset of that data in the
    input file while the bytes are the input's own, which lets the writer copy them file to file
    without touching them in Python. `pending` is a Scaled whose bytes are not computed yet:
    reading `data` computes them (once); `nbytes` and `has_data` never do.

    `data` and `nbytes` are plain attributes, set once (a buffer's bytes never change), so
    `Tensor.is_const` and `Tensor.data`, which passes ask of every operand, call nothing; `data`
    stays unset while a product is pending, which is when `__getattr__` is reached.
    """

    __slots__ = ("data", "source", "pending", "nbytes")

    def __init__(self, data: np.ndarray | None = None, source: int | None = None, pending: Scaled | None = None):
        self.source = source
        self.pending = pending
        if pending is None:
            self.data = data
            self.nbytes = 0 if data is None else int(data.size)
        else:
            self.nbytes = pending.nbytes

    def __getattr__(self, name: str):
        if name != "data" or self.pending is None:
            raise AttributeError(f"'Buffer' object has no attribute {name!r}")
        self.data, self.pending = _read_only_bytes(self.pending.values()), None
        return self.data

    @classmethod
    def from_array(cls, array: np.ndarray) -> Buffer:
        return cls(_read_only_bytes(array))

    @classmethod
    def holding(cls, values: np.ndarray | Scaled) -> Buffer:
        """A Buffer of `values` (as_stored's): a Scaled stays pending."""
        return cls(pending=values) if isinstance(values, Scaled) else cls.from_array(values)

    @property
    def has_data(self) -> bool:
        """Whether the entry has a data vector (an empty one too)."""
        return self.pending is not None or self.data is not None

    def __repr__(self) -> str:
        where = f" @{self.source}" if self.source is not None else ""
        return f"Buffer({self.nbytes} bytes{where}{', pending' if self.pending is not None else ''})"


def _read_only_bytes(array: np.ndarray) -> np.ndarray:
    raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    raw.flags.writeable = False
    return raw
