"""Batch-norm candidates: which ops could be a batch norm left in a model, defined once.

A *candidate* is a MUL, ADD, SUB or DIV with two operands, exactly one of which is a constant of
real values and the other is not a constant:

* the constant is float (FLOAT32, FLOAT16, ...) or quantized, stored in the model — or it is
  computed by a DEQUANTIZE of a stored constant (the TFLite converter's float16 weights);
* broadcast onto the other operand (the data) it is a scalar or varies along exactly one axis
  of it, and never grows it: after right-alignment every dimension is 1 or the data's.

That is the form an inference-time batch norm (y = s·x + t per channel) takes once converted.
Ops without a constant operand — a swish or gating MUL of two activations, a residual ADD — are
not candidates, nor is an op whose constant varies along several axes of the data.

A *chain* here is what a fold would take as one batch norm: MUL/ADD/SUB/DIV ops with one constant
operand joined through tensors with one reader that nothing outside sees (like
affine.match_chain, whatever the axis). The report speaks about chains (a pass refuses a chain at
its first op, or at the op that stops it), see leftovers.py.
"""

from __future__ import annotations

from typing import NamedTuple

from ..ir.graph import Graph, Op, Tensor, float_source
from ..ir.ops import AFFINE_KINDS, LAYOUT_KINDS

FLOAT_TYPES = frozenset({"FLOAT32", "FLOAT16", "FLOAT64", "BFLOAT16"})


class Candidate(NamedTuple):
    op: Op
    data: Tensor  # the non-constant operand
    constant: Tensor  # the constant operand as the op reads it
    stored: Tensor  # the constant as stored: `constant` itself, or the input of its DEQUANTIZE
    axis: int | None  # the axis of the data the constant varies along; None for a scalar

    @property
    def dequantized(self) -> bool:
        return self.stored is not self.constant


def dtype_refusal(c: Candidate) -> str | None:
    """Why no fold takes the candidate whatever its neighbours: its constant is neither float32
    nor float16 behind a DEQUANTIZE (what folds read, ir.graph.float_source), or its data is not
    float32 (None when both are fine)."""
    stored, data = c.stored, c.data
    if float_source(c.constant) is None:
        how = " behind a DEQUANTIZE" if c.dequantized else ""
        quantized = " (quantized)" if stored.is_quantized else ""
        lossy = (
            " (an int8 MUL -> ADD by per-channel constants: the lossy "
            "replace_quantized_mul_add_with_depthwise_conv may take it)"
            if stored.is_quantized and not c.dequantized
            else ""
        )
        return (
            f"its constant {stored.name!r} is {stored.dtype}{quantized}{how}; folds read float32 constants "
            f"(or float16 ones behind a DEQUANTIZE) only{lossy}"
        )
    if data.dtype != "FLOAT32" or data.is_quantized:
        return f"its data {data.name!r} is {data.dtype}{' (quantized)' if data.is_quantized else ''}, not float32"
    return None


def _stored_constant(t: Tensor | None) -> Tensor | None:
    """The stored constant behind `t` when t is a constant of real values (itself, or the input
    of the DEQUANTIZE making it); None otherwise."""
    if t is None:
        return None
    if t.is_const:
        return t if t.dtype in FLOAT_TYPES or t.is_quantized else None
    p = t.producer
    if p is not None and p.kind == "DEQUANTIZE" and (stored := p.input(0)) is not None and stored.is_const:
        return stored
    return None


def _is_constant(t: Tensor | None) -> bool:
    return t is not None and (
        t.is_const
        or (
            t.producer is not None
            and t.producer.kind == "DEQUANTIZE"
            and (stored := t.producer.input(0)) is not None
            and stored.is_const
        )
    )


def broadcast_axis(const_shape: tuple[int, ...], data_shape: tuple[int, ...]) -> int | None | bool:
    """The one data axis a constant of `const_shape` varies along (None for a scalar), or False
    when it varies along several, grows the data or has more dimensions than it."""
    rank = len(data_shape)
    if len(const_shape) > rank:
        return False
    aligned = (1,) * (rank - len(const_shape)) + tuple(const_shape)
    varying = [i for i, d in enumerate(aligned) if d != 1]
    if len(varying) > 1 or any(aligned[i] != data_shape[i] for i in varying):
        return False
    return varying[0] if varying else None


def _operands(op: Op) -> tuple[Tensor, Tensor, Tensor] | None:
    """(data, constant, stored constant) of a binary MUL/ADD/SUB/DIV with exactly one constant
    operand of real values; None for any other op."""
    if op.kind not in AFFINE_KINDS or len(op.inputs) != 2 or len(op.outputs) != 1:
        return None
    a, b = op.inputs
    if a is None or b is None or a is b or _is_constant(a) == _is_constant(b):
        return None
    data, constant = (b, a) if _is_constant(a) else (a, b)
    stored = _stored_constant(constant)
    return None if stored is None else (data, constant, stored)


def candidate(op: Op) -> Candidate | None:
    """`op` as a batch-norm candidate, or None when it is not one."""
    operands = _operands(op)
    if operands is None:
        return None
    data, constant, stored = operands
    axis = broadcast_axis(constant.shape, data.shape)
    return None if axis is False else Candidate(op, data, constant, stored, axis)


def candidates(graph: Graph) -> list[Candidate]:
    """Every candidate of the graph, in execution order."""
    found = (candidate(op) for op in graph.ops)
    return [c for c in found if c is not None]


def chains(graph: Graph) -> list[list[Op]]:
    """The graph's chains that hold a candidate, each in order. A chain's ops are MUL/ADD/SUB/DIV
    with one constant operand joined through single-reader tensors, candidates or not (a
    constant varying along two axes ends no chain: a fold refuses the chain because of it); a
    fused activation ends one, as in affine.match_chain."""
    steps = {id(op): d for op in graph.ops if (d := _operands(op)) is not None}

    def follows(op: Op) -> bool:  # op continues the chain its data's producer is in (a fused activation ends it)
        data = steps[id(op)][0]
        return (
            data.producer is not None
            and id(data.producer) in steps
            and data.producer.fused_activation == "NONE"
            and graph.has_single_use(data, op)
        )

    found = []
    for op in graph.ops:
        if id(op) not in steps or follows(op):
            continue
        chain = [op]
        while True:
            out = chain[-1].outputs[0]
            users = graph.consumers(out)
            if len(users) != 1 or id(users[0]) not in steps or not follows(users[0]):
                break
            chain.append(users[0])
        if any(candidate(o) is not None for o in chain):
            found.append(chain)
    return found


# ---- where a candidate sits -------------------------------------------------------------------


def source(graph: Graph, chain: list[Op]) -> tuple[Op | None, bool]:
    """What makes the chain's data, looking back through layout ops: (that op, None for a graph
    input; whether a tensor on the way has another reader or is seen outside)."""
    operands = _operands(chain[0])
    assert operands is not None  # a chain starts at an affine op (chains)
    t = operands[0]
    shared = graph.is_observed(t) or len(graph.consumers(t)) > 1
    while t.producer is not None and t.producer.kind in LAYOUT_KINDS and (before := t.producer.input(0)) is not None:
        t = before
        shared = shared or graph.is_observed(t) or len(graph.consumers(t)) > 1
    return t.producer, shared


def sinks(graph: Graph, chain: list[Op]) -> tuple[list[Op], bool]:
    """Who reads the chain's result, looking through single-reader layout ops: (the readers,
    whether a graph output or signature sees it on the way)."""
    t = chain[-1].outputs[0]
    observed = graph.is_observed(t)
    users = graph.consumers(t)
    while len(users) == 1 and users[0].kind in LAYOUT_KINDS and len(users[0].outputs) == 1:
        t = users[0].outputs[0]
        observed = observed or graph.is_observed(t)
        users = graph.consumers(t)
    return users, observed


def name_op(op: Op | None) -> str:
    if op is None:
        return "a graph input"
    return f"{op.kind} #{op.index}" if op.index is not None else f"{op.kind} -> {op.outputs[0].name!r}"
