"""forward_reshape_to_unaryop: a RESHAPE before an elementwise op of one tensor moves after it
(ONE's pass of that name), so it can meet the RESHAPEs further on and merge with them.

    before:  x [3,28] -> RESHAPE([3,4,7]) -> y -> NEG -> z [3,4,7]
    after:   x [3,28] -> NEG -> z' [3,28] -> RESHAPE([3,4,7]) -> z

The elementwise ops: ABS, NEG, LOGISTIC, and MUL or DIV by one float constant (either side). And
a MEAN with keep_dims over one constant axis a of y when x has an axis b of the same length and
the same stride (the product of the dims after it; static shapes) that the same axis constant
names: the RESHAPE keeps the dims up to a, or the dims from a on (ONE's Net_Reshape_Mean_000, a
ViT's [3,197,197] -> [1,591,197]):

    before:  x [2,6,4,5] -> RESHAPE([2,6,10,2]) -> y -> MEAN(axis 1, keep_dims) -> z [2,1,10,2]
    after:   x [2,6,4,5] -> MEAN(axis 1, keep_dims) -> z' [2,1,4,5] -> RESHAPE([2,1,10,2]) -> z
    before:  x [3,7,5] -> RESHAPE([1,-1,5]) -> y [1,21,5] -> MEAN(axis -1, keep_dims) -> z [1,21,1]
    after:   x [3,7,5] -> MEAN(axis -1, keep_dims) -> z' [3,7,1] -> RESHAPE([1,21,1]) -> z

Exact: an elementwise op computes each element from the element at the same memory position, and a
RESHAPE moves no element, so both orders compute the same buffer. For the MEAN: an axis of length n
and stride s splits the flat index into (outer, k < n, inner < s) the same way in x and in y, so
the mean over b in x averages the same elements, in the same order, as the mean over a in y, and
writes them in the same order. (ONE's own test, dims 0..a equal, misses its recipe's shape: 3
against 1.) The axis constant stays as it is, so it must name b in x too (-1 for both when the
rank changes). Guards: the RESHAPE's output read only by that op and seen by no one (so no op is
added: ONE copies the RESHAPE when it has other readers, which adds one), a constant new shape if
it has one, the op's output of the RESHAPE's shape; z keeps its name and readers.
"""

from __future__ import annotations

import math

from ..engine.report import PassResult
from ..engine.reshapes import add_reshape
from ..ir.graph import Graph, Op, Tensor

UNARY_KINDS = frozenset({"ABS", "NEG", "LOGISTIC"})
SCALAR_KINDS = frozenset({"MUL", "DIV"})
KINDS = UNARY_KINDS | SCALAR_KINDS | {"MEAN"}


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        slot = _reshaped_input(op)
        if slot is None:
            continue
        y = op.operand(slot)  # _reshaped_input: present
        reshape = y.producer
        if reshape is None or reshape.kind != "RESHAPE":
            continue
        if not graph.has_single_use(y, op):
            result.refuse_value(reshape, f"{y.name!r} is read by more than the {op.kind} (or is a model output)")
            continue
        x, shape = reshape.input(0), reshape.input(1)
        z = op.outputs[0]
        if x is None:
            continue
        if shape is not None and not shape.is_const:
            result.refuse_value(reshape, "its shape is computed at run time")
            continue
        if op.kind == "MEAN":
            computed = _mean_shape(op, x, y, z)
        elif z.signature == y.signature and all(
            len(t.shape) <= len(x.shape) for t in op.inputs if t is not None and t is not y
        ):
            computed = x.signature  # (a scalar constant must not broadcast x up)
        else:
            computed = None
        if computed is None:
            result.refuse_value(
                reshape,
                "the MEAN does not reduce an axis the RESHAPE keeps (keep_dims, one constant axis)"
                if op.kind == "MEAN"
                else f"the {op.kind} broadcasts {y.name!r} to another shape",
            )
            continue
        result.fold(reshape, [reshape], into=[op], moved_after=z.name)
        _swap(graph, reshape, op, slot, x, z, computed)
    return result


def _mean_shape(op: Op, x: Tensor, y: Tensor, z: Tensor) -> tuple[int, ...] | None:
    """x's shape with axis b made 1, when the MEAN (keep_dims, one constant axis a) of
    y = RESHAPE(x) reads the same elements as a MEAN over x's axis b: b has a's length and stride
    (static shapes), and the axis constant names b in x."""
    axis = op.input(1)
    if not getattr(op.options, "keepDims", False) or axis is None or not axis.is_const or axis.const_data.size != 1:
        return None
    rank = len(y.signature)
    given = int(axis.const_data.reshape(-1)[0])
    a = given + rank if given < 0 else given
    if not 0 <= a < rank or -1 in x.signature or -1 in y.signature:
        return None
    if z.signature != (*y.signature[:a], 1, *y.signature[a + 1 :]):
        return None
    b = _axis_like(x.signature, y.signature[a], math.prod(y.signature[a + 1 :]))
    if b is None or b != (given + len(x.signature) if given < 0 else given):  # the constant names b in x
        return None
    return (*x.signature[:b], 1, *x.signature[b + 1 :])


def _axis_like(shape: tuple[int, ...], length: int, stride: int) -> int | None:
    """The axis of `shape` with that length and that stride (the product of the dims after it)."""
    after = 1
    for b in reversed(range(len(shape))):
        if shape[b] == length and after == stride:
            return b
        after *= shape[b]
    return None


def _reshaped_input(op: Op) -> int | None:
    """The input the op is elementwise in (None when it is not one of this pass's forms)."""
    if op.kind in UNARY_KINDS:
        return 0 if len(op.inputs) == 1 and op.inputs[0] is not None else None
    if op.kind == "MEAN":
        return 0 if op.inputs and op.inputs[0] is not None else None
    if len(op.inputs) != 2 or op.fused_activation != "NONE" or None in op.inputs:
        return None
    for data, scalar in ((0, 1), (1, 0)):
        c = op.operand(scalar)
        if c.is_const and c.dtype == "FLOAT32" and c.const_data.size == 1 and not op.operand(data).is_const:
            return data
    return None


def _swap(graph: Graph, reshape: Op, op: Op, slot: int, x: Tensor, z: Tensor, shape: tuple[int, ...]) -> None:
    """x -> RESHAPE -> y -> op -> z  becomes  x -> op -> z' (`shape`) -> RESHAPE -> z."""
    before = graph.add_tensor(f"{z.name}/before_reshape", z.dtype, shape, quantization=z.quantization)
    graph.remove_op(reshape)
    graph.set_input(op, slot, x)
    graph.set_output(op, 0, before)
    add_reshape(graph, before, z, after=op)
