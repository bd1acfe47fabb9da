"""forward_reshape_to_unaryop: a RESHAPE before an elementwise op of one tensor moves after it
(ONE's pass of that name), so it can meet the RESHAPEs further on and merge with them.

    before:  x [3,28] -> RESHAPE([3,4,7]) -> y -> NEG -> z [3,4,7]
    after:   x [3,28] -> NEG -> z' [3,28] -> RESHAPE([3,4,7]) -> z

The elementwise ops: ABS, NEG, LOGISTIC, and MUL or DIV by one float constant (either side).

Exact: an elementwise op computes each element from the element at the same memory position, and a
RESHAPE moves no element, so both orders compute the same buffer. Guards: the RESHAPE's output read
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
KINDS = UNARY_KINDS | SCALAR_KINDS


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
        if x is None or (shape is not None and not shape.is_const) or z.signature != y.signature:
            continue
        if any(len(t.shape) > len(x.shape) for t in op.inputs if t is not y):  # a scalar must not broadcast x up
            continue
        result.fold(reshape, [reshape], into=[op], moved_after=z.name)
        _swap(graph, reshape, op, slot, x, z)
    return result


def _reshaped_input(op: Op) -> int | None:
    """The input the op is elementwise in (None when it is not one of this pass's forms)."""
    if op.kind in UNARY_KINDS:
        return 0 if len(op.inputs) == 1 and op.inputs[0] is not None else None
    if len(op.inputs) != 2 or op.fused_activation != "NONE" or None in op.inputs:
        return None
    for data, scalar in ((0, 1), (1, 0)):
        c = op.inputs[scalar]
        if c.is_const and c.dtype == "FLOAT32" and c.data.size == 1 and not op.inputs[data].is_const:
            return data
    return None


def _swap(graph: Graph, reshape: Op, op: Op, slot: int, x: Tensor, z: Tensor) -> None:
    """x -> RESHAPE -> y -> op -> z  becomes  x -> op -> z' -> RESHAPE -> z."""
    before = graph.add_tensor(
        f"{z.name}/before_reshape", z.dtype, x.shape, shape_signature=x.shape_signature, quantization=z.quantization
    )
    graph.remove_op(reshape)
    graph.set_input(op, slot, x)
    graph.set_output(op, 0, before)
    add_reshape(graph, before, z, after=op)
