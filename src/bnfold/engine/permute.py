"""How a permutation of a tensor's axes crosses an operator: its attributes remapped, one small
function per kind of layout behaviour (the `layout` column of ir/ops.py says which an op has).

Convention: a tensor t *carries* the permutation p when t = transpose(t', p) for the tensor t'
the rewritten graph computes instead (numpy's transpose: t.shape[j] = t'.shape[p[j]]). Axis j of
t is axis p[j] of t'; t' = transpose(t, argsort(p)). An op crosses p when running it on t' (with
its attributes remapped) gives its outputs in a layout that is again a permutation of the
original ones, `Crossing.outputs` (None for an output left exactly as it was: a reduction or a
reshape that ends the permutation).

    unary, elementwise   same op; constant operands (right-aligned broadcast) permuted; output p
    reduce               axes a -> p[a]; keep_dims: output p; else the kept axes' order
    concat, split(_v)    axis a -> p[a]
    slice, strided_slice begin/size/end/strides per axis moved with the axes (masks bit by bit)
    pad                  row a of input 1 (paddings, multiples, shape) -> row p[a]; a PADV2 value
                         is one scalar: any layout
    last_axis            only when p keeps the last axis last
    reshape              axes it merges or splits stay adjacent and in order in t' (unit axes
                         anywhere): the same reshape of t', its groups in t' order

Every function returns a `Crossing` or the reason the op cannot take the other layout.

A permutation moves elements: an elementwise kernel that computes an element by where it lies (a
vectorized body and a scalar tail rounding apart: LiteRT's per-tensor QUANTIZE to or from 8-bit
integers and DEQUANTIZE of them), or an integer reduction whose kernel path depends on the axes it reduces (LiteRT's
int8/uint8 MEAN), may then give a moved element another value, a step at an integer output
(ir/runtimes.py's BY_POSITION). No permutation crosses such an op (by_position).
"""

from __future__ import annotations

import numpy as np

from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Op, Tensor
from ..ir.ops import INDEX_DTYPES, info
from .layout import concatenation_axis

Perm = tuple[int, ...]


class Crossing:
    """`op` run on the permuted data: which inputs are data (each must carry `perm`), the new
    values of its constant inputs, the option fields that change, what each output carries."""

    __slots__ = ("perm", "data", "outputs", "consts", "options")

    def __init__(
        self,
        perm: Perm,
        data: list[int],
        outputs: list[Perm | None],
        *,
        consts: dict[int, np.ndarray] | None = None,
        options: dict | None = None,
    ):
        self.perm, self.data, self.outputs = perm, data, outputs
        self.consts = {} if consts is None else consts
        self.options = {} if options is None else options


def inverse(p: Perm) -> Perm:
    """The permutation undoing p (its argsort; in Python, as numpy's argsort of a short tuple
    costs ~15 us and this is asked ~1000 times a model)."""
    return tuple(sorted(range(len(p)), key=p.__getitem__))


def is_identity(p: Perm | None) -> bool:
    return p is not None and all(i == a for i, a in enumerate(p))


def compose(p: Perm, q: Perm) -> Perm:
    """The permutation of transpose(transpose(x, p), q): transpose(x, compose(p, q))."""
    return tuple(p[i] for i in q)


def moved_shape(shape, p: Perm) -> tuple[int, ...]:
    """The shape of t' for a tensor t of `shape` carrying p."""
    return tuple(shape[i] for i in inverse(p))


def moved_constant(values: np.ndarray, p: Perm) -> np.ndarray:
    """A constant broadcast onto a tensor carrying p, as it must be broadcast onto t': aligned to
    the right, permuted, and leading unit axes dropped back to its own rank."""
    rank = len(p)
    aligned = values.reshape((1,) * (rank - values.ndim) + values.shape)
    moved = np.transpose(aligned, inverse(p))
    while moved.ndim > values.ndim and moved.shape[0] == 1:
        moved = moved.reshape(moved.shape[1:])
    return moved


def crosses(kind: str) -> bool:
    """A permutation can cross an op of `kind` (its `layout` behaviour, ir/ops.py): not for none, nor for a
    TRANSPOSE (it composes with it) or a BATCH_MATMUL (it absorbs a last-two-axes swap: region.py)."""
    return info(kind).layout not in (None, "transpose", "adjoint")


def cross(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    """How `op`, reading `t` which carries `p`, takes the other layout — or why it cannot."""
    behaviour = info(op.kind).layout
    if behaviour is None or not crosses(op.kind):
        return f"{op.kind} cannot take the other layout"
    if len(p) != len(t.shape):
        return f"{op.kind} reads a tensor of rank {len(t.shape)}"
    if op.kind in POSITION_KINDS:
        problem = by_position(op)
        if problem:
            return problem
    return CROSSINGS[behaviour](op, t, p)


# ir/runtimes.py's POSITION_PROBED kinds
POSITION_KINDS = frozenset({"QUANTIZE", "DEQUANTIZE", "MEAN", "SUM", "ADD", "SUB", "MUL"})


def position_variant(op: Op) -> str | None:
    """op's variant among ir/runtimes.py's POSITION_PROBED, or None when it computes on floats alone
    (a float reduction whose sums run in another order rounds within float32: any exact rewrite's)."""
    x, y = op.input(0), op.outputs[0] if op.outputs else None
    if x is None or y is None:
        return "without its input or output"
    if op.kind in ("MEAN", "SUM"):
        return f"of {x.dtype} over moved axes" if x.is_quantized else None
    if op.kind in ("ADD", "SUB", "MUL"):
        return f"of {y.dtype}" if y.is_quantized else None
    channels = max(len(t.quantization.scale) if t.is_quantized else 1 for t in (x, y))
    if channels > 1:
        return f"from {x.dtype} to {y.dtype} per channel"
    symmetric = op.kind == "DEQUANTIZE" and x.is_quantized and not np.any(x.quantization.zeroPoint)
    return f"from {x.dtype} to {y.dtype}{' zero point 0' if symmetric else ''}"


def by_position(op: Op) -> str | None:
    """Why no permutation may cross `op`: a runtime computes an element by where it lies, or an
    integer reduction by which axes it reduces (or it was never asked); None when every runtime
    computes each element alike after the move."""
    from ..ir.runtimes import BY_POSITION, POSITION_PROBED  # only when a (de)quantization is crossed

    variant = position_variant(op)
    if variant is None:
        return None
    if (op.kind, variant) not in POSITION_PROBED:
        return f"{op.kind} {variant}: not known to compute each element alike once it is moved"
    runtimes = [runtime for runtime, probes in BY_POSITION.items() if (op.kind, variant) in probes]
    if runtimes:
        how = (
            "by which axes it reduces (another kernel path)"
            if op.kind in ("MEAN", "SUM")
            else ("by where an element lies (a vectorized body and a scalar tail round apart)")
        )
        return f"{op.kind} {variant}: {' and '.join(runtimes)} compute it {how}, so a moved element could change"
    return None


def _axis_values(op: Op, index: int) -> np.ndarray | str:
    x = op.input(index)
    if x is None or not x.is_const or x.dtype not in INDEX_DTYPES:
        return f"{op.kind} input {index} is not an int32/int64 constant"
    return np.asarray(x.data).reshape(-1).astype(np.int64)


def _accepted_data(op: Op, index: int) -> np.ndarray:
    """The values of input `index` of `op`, a constant _axis_values has accepted."""
    x = op.input(index)
    data = x.data if x is not None else None
    assert data is not None  # _axis_values refused anything else
    return data


def _normalized(axes, rank: int) -> list[int] | str:
    out = [int(a) + rank if int(a) < 0 else int(a) for a in axes]
    return out if all(0 <= a < rank for a in out) else f"axes {[int(a) for a in axes]} out of range for rank {rank}"


def _unary(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    if op.input(0) is not t or len(op.outputs) != 1 or len(op.outputs[0].shape) != len(p):
        return f"{op.kind} reads it in another slot"
    return Crossing(p, [0], [p])


def _elementwise(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    rank = len(p)
    if len(op.outputs) != 1 or len(op.outputs[0].shape) != rank:
        return f"{op.kind} broadcasts it to another rank"
    crossing = Crossing(p, [], [p])
    for index, x in enumerate(op.inputs):
        if x is None:
            continue
        if x.is_const and x.dtype not in NUMPY_DTYPES:
            return f"its constant {x.name!r} is {x.dtype}, which bnfold does not move"
        if x.is_const and len(x.shape) <= rank:
            crossing.consts[index] = moved_constant(np.asarray(x.data), p)
        elif x is not t and len(x.shape) <= rank and all(d == 1 for d in x.signature):
            continue  # one value (a computed scale, say): the same in every layout
        elif len(x.shape) == rank and not x.is_const:
            crossing.data.append(index)
        else:
            return f"{op.kind} broadcasts {x.name!r} of rank {len(x.shape)} against rank {rank}"
    return crossing


def _reduce(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    axes = _axis_values(op, 1)
    if isinstance(axes, str):
        return axes
    rank = len(p)
    old = _normalized(axes, rank)
    if isinstance(old, str):
        return old
    new = sorted({p[a] for a in old})
    crossing = Crossing(p, [0], [p], consts={1: np.array(new, dtype=_accepted_data(op, 1).dtype)})
    if getattr(op.options, "keepDims", False):
        return crossing
    kept_old = [j for j in range(rank) if j not in old]
    kept_new = [i for i in range(rank) if i not in new]
    q = tuple(kept_new.index(p[j]) for j in kept_old)
    crossing.outputs = [None if is_identity(q) or not q else q]
    return crossing


def _concat(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    rank = len(p)
    inputs = [x for x in op.inputs if x is not None]
    if len(inputs) != len(op.inputs) or any(len(x.shape) != rank for x in inputs + list(op.outputs)):
        return "CONCATENATION of tensors of other ranks"
    crossing = Crossing(p, [], [p], options={"axis": p[concatenation_axis(op)]})
    for index, x in enumerate(inputs):
        if x.is_const and x.dtype not in NUMPY_DTYPES:
            return f"its constant {x.name!r} is {x.dtype}, which bnfold does not move"
        if x.is_const:
            crossing.consts[index] = np.transpose(np.asarray(x.data), inverse(p))
        else:
            crossing.data.append(index)
    return crossing


def _split(op: Op, t: Tensor, p: Perm, data: int, axis_index: int) -> Crossing | str:
    if op.input(data) is not t:
        return f"{op.kind} reads it in another slot"
    axis = _axis_values(op, axis_index)
    if isinstance(axis, str) or axis.size != 1:
        return axis if isinstance(axis, str) else f"{op.kind} axis is not a scalar"
    a = _normalized(axis, len(p))
    if isinstance(a, str):
        return a
    stored = _accepted_data(op, axis_index)
    values = np.array(p[a[0]], dtype=stored.dtype).reshape(stored.shape)
    return Crossing(p, [data], [p] * len(op.outputs), consts={axis_index: values})


def _per_axis(op: Op, p: Perm, indices: tuple[int, ...]) -> dict[int, np.ndarray] | str:
    """The per-axis constant vectors (or [rank, 2] rows) at `indices` with their rows moved."""
    consts = {}
    for index in indices:
        x = op.input(index)
        if x is None or not x.is_const or x.dtype not in INDEX_DTYPES or x.shape[:1] != (len(p),):
            return f"{op.kind} input {index} is not a constant with one row per axis"
        consts[index] = np.asarray(x.data)[list(inverse(p))]
    return consts


def _slice(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    if op.input(0) is not t:
        return f"{op.kind} reads it in another slot"
    consts = _per_axis(op, p, (1, 2))
    return consts if isinstance(consts, str) else Crossing(p, [0], [p], consts=consts)


def _strided_slice(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    if op.input(0) is not t:
        return f"{op.kind} reads it in another slot"
    options = op.options
    for mask in ("ellipsisMask", "newAxisMask", "shrinkAxisMask"):
        if getattr(options, mask, 0):
            return f"STRIDED_SLICE with a {mask} changes the rank"
    consts = _per_axis(op, p, (1, 2, 3))
    if isinstance(consts, str):
        return consts
    masks = {m: _moved_bits(int(getattr(options, m, 0) or 0), p) for m in ("beginMask", "endMask")}
    return Crossing(p, [0], [p], consts=consts, options=masks)


def _moved_bits(mask: int, p: Perm) -> int:
    return sum(1 << p[a] for a in range(len(p)) if mask >> a & 1)


def _pad(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    if op.input(0) is not t or len(op.outputs) != 1 or len(op.outputs[0].shape) != len(p):
        return f"{op.kind} reads it in another slot or changes its rank"
    consts = _per_axis(op, p, (1,))
    return consts if isinstance(consts, str) else Crossing(p, [0], [p], consts=consts)


def _last_axis(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    if p[-1] != len(p) - 1:
        return f"{op.kind} works along the last axis, which the permutation {list(p)} moves"
    return _unary(op, t, p)


def _reshape(op: Op, t: Tensor, p: Perm) -> Crossing | str:
    if op.input(0) is not t or len(op.outputs) != 1:
        return f"{op.kind} reads it in another slot"
    out = op.outputs[0]
    if any(d < 0 for d in t.signature + out.signature):
        return f"{op.kind} with dynamic dimensions"
    mixes = (
        f"{op.kind} from {list(t.shape)} to {list(out.shape)} merges or splits axes the permutation {list(p)} separates"
    )
    order = moved_groups(t.shape, p, out.shape)
    if order is None:
        return mixes
    source, options = moved_shape(t.shape, p), {}
    if op.kind == "SQUEEZE":
        stated = squeeze_dims(op)
        if isinstance(stated, str):
            return f"SQUEEZE {stated}"
        dims = [p[d] for d in stated]
        target = tuple(d for i, d in enumerate(source) if (source[i] != 1 or (dims and i not in dims)))
        options = {"squeezeDims": sorted(dims)} if dims else {}
    elif op.kind == "EXPAND_DIMS":
        axis = _axis_values(op, 1)
        if isinstance(axis, str):
            return axis
        a = int(axis[0]) + len(source) + 1 if int(axis[0]) < 0 else int(axis[0])
        target = source[:a] + (1,) + source[a:]
    else:
        target = _reshape_target(out.shape, order)
    q = _output_perm(out.shape, target, order)
    if q is None:
        return mixes
    crossing = Crossing(p, [0], [None if is_identity(q) else q], options=options)
    if op.kind == "RESHAPE":
        crossing.consts, crossing.options = reshape_target(op, target)
    return crossing


def squeeze_dims(op: Op) -> list[int] | str:
    """A SQUEEZE's squeeze_dims as non-negative axes; [] (squeeze every unit axis) when the
    option is absent or empty. The reader hands a vector as a numpy array, whose truth value is
    no test for emptiness ([0] is falsy, [0, 1] ambiguous): only its length is."""
    stated = getattr(op.options, "squeezeDims", None) if op.options is not None else None
    rank = len(op.operand(0).shape)
    return [] if stated is None or len(stated) == 0 else _normalized(list(stated), rank)


def reshape_target(op: Op, shape) -> tuple[dict[int, np.ndarray], dict]:
    """The new shape constant and options of a RESHAPE made to produce `shape`."""
    stated = getattr(op.options, "newShape", None) if op.options is not None else None
    options = {"newShape": list(shape)} if stated is not None and len(stated) else {}
    shape_input = op.input(1)
    stored = shape_input.data if shape_input is not None else None  # None unless a constant
    consts = {1: np.array(shape, dtype=stored.dtype)} if stored is not None else {}
    return consts, options


def keeps_data_order(shape, p: Perm) -> bool:
    """transpose(x, p) moves only unit axes of x (shape): its elements stay in order, a reshape."""
    nonunit = [a for a in p if shape[a] != 1]
    return nonunit == sorted(nonunit)


def _nonunit(shape) -> list[int]:
    return [i for i, d in enumerate(shape) if d != 1]


def moved_groups(shape, p: Perm, out_shape) -> list[list[int]] | None:
    """How reshape(t, out_shape) regroups t's axes, for t carrying p: the output's non-unit axes in
    groups (each group is what one run of input axes became, merged or split), in the order t'
    holds those runs — or None when a run is not adjacent and in order in t' as well (then no
    reshape of t' gives the same groups). Unit axes belong to no group: they go anywhere."""
    ins, outs = _nonunit(shape), _nonunit(out_shape)
    rank_in_moved = {j: r for r, j in enumerate(sorted(ins, key=lambda j: p[j]))}
    groups, i, k = [], 0, 0
    while i < len(ins) and k < len(outs):
        run, group, a, b = [ins[i]], [outs[k]], shape[ins[i]], out_shape[outs[k]]
        i, k = i + 1, k + 1
        while a != b and (i < len(ins) if a < b else k < len(outs)):
            if a < b:
                run.append(ins[i])
                a, i = a * shape[ins[i]], i + 1
            else:
                group.append(outs[k])
                b, k = b * out_shape[outs[k]], k + 1
        ranks = [rank_in_moved[j] for j in run]
        if a != b or ranks != list(range(ranks[0], ranks[0] + len(ranks))):
            return None
        groups.append((ranks[0], group))
    if i != len(ins) or k != len(outs):
        return None
    return [group for _, group in sorted(groups)]


def _reshape_target(out_shape, order: list[list[int]]) -> tuple[int, ...]:
    """The reshape's output in the layout of t': the groups in t's order on the output's non-unit
    positions, the unit axes where they are."""
    target = list(out_shape)
    for k, axis in zip(_nonunit(out_shape), [axis for group in order for axis in group]):
        target[k] = out_shape[axis]
    return tuple(target)


def _output_perm(out_shape, target, order: list[list[int]]) -> Perm | None:
    """q with out = transpose(out', q), out' of shape `target` holding the groups in `order`."""
    sequence = [axis for group in order for axis in group]
    placed = _nonunit(target)
    units = [k for k in range(len(out_shape)) if k not in sequence]
    target_units = [k for k in range(len(target)) if k not in placed]
    if len(placed) != len(sequence) or len(units) != len(target_units):
        return None
    q = [0] * len(out_shape)
    for k, position in zip(sequence + units, placed + target_units):
        if target[position] != out_shape[k]:
            return None
        q[k] = position
    return tuple(q)


CROSSINGS = {
    "unary": _unary,
    "elementwise": _elementwise,
    "reduce": _reduce,
    "concat": _concat,
    "split": lambda op, t, p: _split(op, t, p, data=1, axis_index=0),
    "split_v": lambda op, t, p: _split(op, t, p, data=0, axis_index=2),
    "slice": _slice,
    "strided_slice": _strided_slice,
    "pad": _pad,
    "last_axis": _last_axis,
    "reshape": _reshape,
}
