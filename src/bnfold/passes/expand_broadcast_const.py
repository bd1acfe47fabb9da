"""expand_broadcast_const: a float32 constant operand of ADD, MUL or DIV that broadcasts along the
last axis only is written out in full (ONE's pass of that name: for backends whose binary kernels
do not broadcast the depth).

    before:  x [N, H, W, D] -> ADD(x, c [N, H, W, 1]) -> y
    after:   x -> ADD(x, c' [N, H, W, D]) -> y,   c'[..., d] = c[..., 0]

Exact, bit for bit: broadcasting repeats c along the axis, and c' holds those very repetitions, so
every element of y is computed from the same two floats. The file grows by the copies (D times c).
Guards (ONE's): c is a float32 constant of x's rank, equal to x's shape but for the last axis,
where c has 1 and x more; x is the other operand (not a constant). c' is a new tensor (c stays
for any other reader).
"""

from __future__ import annotations

import numpy as np

from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor

KINDS = frozenset({"ADD", "MUL", "DIV"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        if len(op.inputs) != 2 or any(t is None for t in op.inputs):
            continue
        for index in (0, 1):
            c, x = op.operand(index), op.operand(1 - index)
            if not _depth_broadcast(c, x):
                continue
            reason = _refusal(c, x)
            if reason is None:
                _expand(graph, result, op, index, c, x)
            else:
                result.refuse_value(op, reason)
            break
    return result


def _depth_broadcast(c: Tensor, x: Tensor) -> bool:
    """c broadcasts along x's last axis only: x's shape but 1 there, where x has more."""
    if not c.is_const or x.is_const or len(c.shape) != len(x.shape) or not c.shape:
        return False
    return c.shape[-1] == 1 and x.shape[-1] != 1 and c.shape[:-1] == x.shape[:-1]


def _refusal(c: Tensor, x: Tensor) -> str | None:
    if c.dtype != "FLOAT32" or c.is_quantized:
        return (
            f"{c.name!r} is {c.dtype}{' quantized' if c.is_quantized else ''}: only float32 constants are written out"
        )
    if -1 in x.signature:
        return f"{x.name!r} has a dynamic shape"
    return None


def _expand(graph: Graph, result: PassResult, op: Op, index: int, c: Tensor, x: Tensor) -> None:
    expanded = np.ascontiguousarray(np.broadcast_to(c.const_data, x.shape))
    result.fold(op, [], constant=c.name, shape=list(x.shape))
    graph.set_input(op, index, graph.add_const(graph.unique_name(f"{c.name}/expanded"), expanded))
