"""forward_reshape_to_unaryop: a RESHAPE before an elementwise op of one tensor moves after it
(ONE's pass of that name), so it can meet the RESHAPEs further on and merge with them.

    before:  x [3,28] -> RESHAPE([3,4,7]) -> y -> NEG -> z [3,4,7]
    after:   x [3,28] -> NEG -> z' [3,28] -> RESHAPE([3,4,7]) -> z

The elementwise ops: ABS, NEG, LOGISTIC, and MUL or DIV by one float constant (either side). And
a MEAN with keep_dims over one constant axis a, when the RESHAPE keeps the rank and the dims up to
a (static):

    before:  x [2,6,4,5] -> RESHAPE([2,6,10,2]) -> y -> MEAN(axis 1, keep_dims) -> z [2,1,10,2]
    after:   x [2,6,4,5] -> MEAN(axis 1, keep_dims) -> z' [2,1,4,5] -> RESHAPE([2,1,10,2]) -> z

Exact: an elementwise op computes each element from the element at the same memory position, and a
RESHAPE moves no element, so both orders compute the same buffer. For the MEAN: with the dims up to
a equal, axis a has the same stride in x and in y (the product of the dims after it), so the mean
over it averages the same elements, in the same order, at the same positions; its output differs
from the reshaped one only in that axis a is 1 on both sides. Guards: the RESHAPE's output read
only by that op and seen by no one (so no op is added: ONE copies the RESHAPE when it has other
readers, which adds one), a constant new shape if it has one, the op's output of the RESHAPE's
shape; z keeps its name and readers.
"""

from __future__ import annotations

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
        y = op.inputs[slot]
        reshape = y.producer
        if reshape is None or reshape.kind != "RESHAPE" or not graph.has_single_use(y, op):
            continue
        x, shape = reshape.input(0), reshape.input(1)
        z = op.outputs[0]
        if x is None or (shape is not None and not shape.is_const):
            continue
        if op.kind == "MEAN":
            computed = _mean_shape(op, x, y, z)
        elif z.signature == y.signature and all(len(t.shape) <= len(x.shape) for t in op.inputs if t is not y):
            computed = x.signature  # (a scalar constant must not broadcast x up)
        else:
            computed = None
        if computed is None:
            continue
        result.fold(reshape, [reshape], into=[op], moved_after=z.name)
        _swap(graph, reshape, op, slot, x, z, computed)
    return result


def _mean_shape(op: Op, x: Tensor, y: Tensor, z: Tensor) -> tuple[int, ...] | None:
    """x's shape with the MEAN's one axis made 1, when the MEAN (keep_dims, one constant axis a) of
    y = RESHAPE(x) reads the same elements from x: same rank, same static dims up to a (then axis a
    has the same stride in both, the dims after it the same product)."""
    axis = op.input(1)
    if not getattr(op.options, "keepDims", False) or axis is None or not axis.is_const or axis.data.size != 1:
        return None
    rank = len(y.signature)
    a = int(axis.data.reshape(-1)[0])
    a = a + rank if a < 0 else a
    if len(x.signature) != rank or not 0 <= a < rank or -1 in x.signature or -1 in y.signature:
        return None
    if x.signature[: a + 1] != y.signature[: a + 1] or z.signature != (*y.signature[:a], 1, *y.signature[a + 1 :]):
        return None
    return (*x.signature[:a], 1, *x.signature[a + 1 :])


def _reshaped_input(op: Op) -> int | None:
    """The input the op is elementwise in (None when it is not one of this pass's forms)."""
    if op.kind in UNARY_KINDS:
        return 0 if len(op.inputs) == 1 and op.inputs[0] is not None else None
    if op.kind == "MEAN":
        return 0 if op.inputs and op.inputs[0] is not None else None
    if len(op.inputs) != 2 or op.fused_activation != "NONE" or None in op.inputs:
        return None
    for data, scalar in ((0, 1), (1, 0)):
        c = op.inputs[scalar]
        if c.is_const and c.dtype == "FLOAT32" and c.data.size == 1 and not op.inputs[data].is_const:
            return data
    return None


def _swap(graph: Graph, reshape: Op, op: Op, slot: int, x: Tensor, z: Tensor, shape: tuple[int, ...]) -> None:
    """x -> RESHAPE -> y -> op -> z  becomes  x -> op -> z' (`shape`) -> RESHAPE -> z."""
    before = graph.add_tensor(f"{z.name}/before_reshape", z.dtype, shape, quantization=z.quantization)
    graph.remove_op(reshape)
    graph.set_input(op, slot, x)
    graph.set_output(op, 0, before)
    add_reshape(graph, before, z, after=op)
