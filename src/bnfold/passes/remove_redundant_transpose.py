"""remove_redundant_transpose: TRANSPOSE pairs that cancel go (ONE's pass of that name), also across
elementwise ops left between them — what folding a batch norm out of TICO's NCHW wrapping leaves.

    before:  x -> TRANSPOSE(p) -> RELU -> ADD(c) -> TRANSPOSE(q) -> y       p[q[i]] = i for every i
    after:   x -> RELU -> ADD(c') -> y                                       c' = c moved back by p
    and:     x -> TRANSPOSE(p) -> TRANSPOSE(q) -> y   becomes   x -> TRANSPOSE(p[q]) -> y

Exact: a transpose only moves elements, and an elementwise op commutes with moving them — a unary
activation as it is, a binary op with a constant operand when the constant's broadcast moves the
same way: transpose(c', p) = c, i.e. c' = transpose(c, argsort(p)) (a new constant; the old one is
left to whoever else reads it). TICO exports keep a batch norm on the NCHW tensor between two
transposes; once it is folded, the ReLU left between them moves back onto the conv (then
fuse_activation_function fuses it) and the two transposes disappear.

Guards: every tensor between the transposes has one reader and is not a graph output; the
permutations are constant; the ops between are unary activations (not PRELU, whose slope is per
channel) or MUL/ADD/SUB/DIV/MAXIMUM/MINIMUM with one constant operand.
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import ACTIVATION_KINDS
from .report import PassResult

UNARY = ACTIVATION_KINDS - {"PRELU"}
WITH_CONSTANT = frozenset({"MUL", "ADD", "SUB", "DIV", "MAXIMUM", "MINIMUM"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for first in [op for op in graph.ops if op.kind == "TRANSPOSE"]:
        if not graph.contains(first) or _perm(first) is None:
            continue
        between, second = _walk(graph, first)
        if second is None:
            continue
        p, q = _perm(first), _perm(second)
        composed = [p[i] for i in q]
        if composed == list(range(len(p))):
            if not between and graph.is_observed(second.outputs[0]):
                continue
            result.fold(first, [first, second], into=between, between=[op.kind for op in between], output=second.outputs[0].name)
            _remove_pair(graph, first, between, second)
        elif not between:
            result.fold(first, [first, second], into=[second], merged_permutation=composed, output=second.outputs[0].name)
            _merge_pair(graph, first, second, composed)
    return result


def _perm(op: Op) -> list[int] | None:
    perm = op.input(1)
    x = op.input(0)
    if perm is None or not perm.is_const or x is None or len(op.outputs) != 1:
        return None
    rank = len(x.shape)
    values = [int(v) + rank if int(v) < 0 else int(v) for v in np.asarray(perm.data).reshape(-1)]
    return values if sorted(values) == list(range(rank)) else None


def _walk(graph: Graph, first: Op) -> tuple[list[Op], Op | None]:
    """The elementwise ops after `first` and the TRANSPOSE that ends them (None if there is none)."""
    between, v = [], first.outputs[0]
    while True:
        users = graph.consumers(v)
        if len(users) != 1 or graph.is_observed(v):
            return between, None
        u = users[0]
        if u.kind == "TRANSPOSE" and u.input(0) is v and _perm(u) is not None:
            return between, u
        if not _elementwise(u, v):
            return between, None
        between.append(u)
        v = u.outputs[0]


def _elementwise(op: Op, v: Tensor) -> bool:
    if len(op.outputs) != 1 or op.outputs[0].shape != v.shape:
        return False
    if op.kind in UNARY:
        return op.input(0) is v
    if op.kind in WITH_CONSTANT and len(op.inputs) == 2:
        a, b = op.inputs
        other = b if a is v else a if b is v else None
        return other is not None and other is not v and other.is_const and len(other.shape) <= len(v.shape)
    return False


def _remove_pair(graph: Graph, first: Op, between: list[Op], second: Op) -> None:
    x, y = first.inputs[0], second.outputs[0]
    undo = list(np.argsort(_perm(first)))
    if not between:
        graph.replace_uses(y, x)
        graph.remove_op(second)
        graph.remove_op(first)
        return
    graph.replace_uses(first.outputs[0], x, only=[between[0]])
    for op in between:
        for index, t in enumerate(op.inputs):
            if t is not None and t.is_const and t.data.ndim:
                graph.set_input(op, index, _moved_constant(graph, t, len(x.shape), undo))
        out = op.outputs[0]
        out.shape = x.shape
        out.shape_signature = None if x.shape_signature is None else x.shape_signature
    graph.set_output(between[-1], 0, y)
    graph.remove_op(second)
    graph.remove_op(first)


def _moved_constant(graph: Graph, const: Tensor, rank: int, undo: list[int]) -> Tensor:
    """The constant broadcast over the layout before the first transpose."""
    aligned = const.data.reshape((1,) * (rank - const.data.ndim) + const.data.shape)
    return graph.add_const(f"{const.name}/moved", np.transpose(aligned, undo), const.dtype)


def _merge_pair(graph: Graph, first: Op, second: Op, composed: list[int]) -> None:
    perm = graph.add_const(f"{second.outputs[0].name}/perm", np.array(composed, dtype=np.int32), "INT32")
    graph.set_input(second, 0, first.inputs[0])
    graph.set_input(second, 1, perm)
    graph.remove_op(first)
