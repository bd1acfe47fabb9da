"""fuse_rope: a rotary position embedding written out becomes one Circle ROPE (ONE's pass of that
name; ONE matches the half-rotation form only, here the interleaved one is recognized too).

    y = x · cos + rotate(x) · sin          along the last axis of x [B, H, S, D], D even

    half-rotation (GPT-NeoX, Llama's rotate_half; ROPE mode 0):
        rotate(x) = CONCATENATION(NEG(x[..., D/2:]), x[..., :D/2])            (axis -1; NEG or
                                                                         MUL by -1, litert-torch's)
    interleaved (GPT-J; ROPE mode 1):
        rotate(x) = RESHAPE(PACK(NEG(x[..., 1::2]), x[..., 0::2]))           (axis -1, back to D)
    then:   ADD(MUL(x, cos), MUL(rotate(x), sin))    (either operand order anywhere)
    after:  x -> ROPE(sin, cos, mode) -> y

The slices (SLICE or STRIDED_SLICE, any masks) are not read from their index operands: the chain
from x to rotate(x) is run by the value check's kernels on x = 1, 2, .., n, and must give exactly
the signed positions the mode's rotation gives. Exact up to float rounding: the kernel computes
each output as x_i·cos_i ± x_j·sin_i with the same products and one sum, as the written-out form
does (onert 0.1.0: identical on the probe).

Guards: x float32 of rank 4 with D even and known; cos and sin float32 (constants or computed),
broadcasting to x with D values along the last axis; every intermediate read only inside the
pattern and no graph output; no fused activation. ROPE exists only in Circle (a TFLite model keeps
the written-out form: the report's `not_folded`), and the target must run the form (engine/targets.py,
the runtime table's probes): a table of several rows that differ — one per position, as a prefill
export's — is the form "tables_of_several_rows" (onert 0.1.0 computes it wrong), mode 1 is
"interleaved"; LiteRT has no ROPE. Such a candidate stays, the report's `target.refused` saying why
and which tables. A constant table whose rows are bit for bit its first row is one row (a decode
step's, or tables broadcast to every position): the ROPE reads that row alone, the same values
broadcast, so it fuses for onert too. Constant tables of lower rank are given rank 4.

A MUL by a one-element constant c that alone reads the result (PyTorch's SDPA export scales q and k
by d^-1/4 each, right after their RoPE) joins the tables: x·(c·cos) + rotate(x)·(c·sin) — made
whether or not the ROPE is (the written-out form loses the MUL too); the new tables are computed
once in float32, float rounding only (c a power of two, as for d = 16, leaves every bit).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..engine import targets
from ..engine.match import const_operand, format_lacks, is_plain_float, only_reader, scalar
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options, Tensor

MODES = {"half": 0, "interleaved": 1}
SLICES = ("SLICE", "STRIDED_SLICE")


class Match(NamedTuple):
    x: Tensor
    cos: Tensor
    sin: Tensor
    ops: list[Op]  # the rotation's ops, the two MULs, the ADD
    mode: str  # "half" or "interleaved"


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for add in [op for op in graph.ops if op.kind == "ADD"]:
        match = _match(graph, add)
        if match is None:
            continue
        scale = _scale_after(graph, match)
        if scale is not None and match.cos.is_const and match.sin.is_const:
            match = _scaled_tables(graph, result, match, scale)  # the MUL goes into the tables either way
        refusal = _refusal(graph, match)
        if refusal:
            result.refuse_value(match.ops[-1], f"the RoPE stays: {refusal}")
            continue
        several_rows = max(_distinct_rows(match.cos), _distinct_rows(match.sin)) > 1
        form = "interleaved" if match.mode == "interleaved" else "tables_of_several_rows" if several_rows else None
        unsupported = targets.refusal(graph, "ROPE", form=form)
        if unsupported:
            tables = f"cos {list(match.cos.shape)}, sin {list(match.sin.shape)}"
            result.not_for_target(match.ops[-1], f"{unsupported}; {tables}" if several_rows else unsupported)
            continue
        _fuse(graph, result, match)
    return result


def _scale_after(graph: Graph, match: Match) -> Op | None:
    """The MUL by a one-element float32 constant that alone reads the RoPE's output (the attention's
    1/√d, split between q and k as PyTorch's SDPA export writes it), or None."""
    add = match.ops[-1]
    mul = only_reader(graph, add.outputs[0])
    pair = None if mul is None or mul.kind != "MUL" else const_operand(mul)
    if mul is None or pair is None or pair[1] is not add.outputs[0] or scalar(pair[0]) is None:
        return None
    y = mul.outputs[0]
    if mul.fused_activation != "NONE" or not is_plain_float(y) or y.signature != add.outputs[0].signature:
        return None
    return mul


def _scaled_tables(graph: Graph, result: PassResult, match: Match, mul: Op) -> Match:
    """x·(c·cos) + rotate(x)·(c·sin) for (x·cos + rotate(x)·sin)·c: the scale joins both tables (new
    constants, computed once in float32; each output element is rounded in another order, float
    rounding only), and the MUL goes; the ADD writes its output."""
    add, mul_cos, mul_sin = match.ops[-1], match.ops[-3], match.ops[-2]
    pair = const_operand(mul)
    assert pair is not None and match.cos.data is not None and match.sin.data is not None  # _scale_after
    c = np.float32(scalar(pair[0]))
    y = mul.outputs[0]
    cos = graph.add_const(graph.unique_name(f"{y.name}/cos"), (match.cos.data * c).astype(np.float32))
    sin = graph.add_const(graph.unique_name(f"{y.name}/sin"), (match.sin.data * c).astype(np.float32))
    graph.set_input(mul_cos, mul_cos.inputs.index(match.cos), cos)
    graph.set_input(mul_sin, mul_sin.inputs.index(match.sin), sin)
    result.fold(mul, [mul], into=[mul_cos, mul_sin], scale=float(c))
    graph.remove_op(mul)
    graph.set_output(add, 0, y)
    return match._replace(cos=cos, sin=sin)


def _match(graph: Graph, add: Op) -> Match | None:
    """ADD(MUL(x, cos), MUL(rotate(x), sin)) from its ADD, or None."""
    if len(add.inputs) != 2 or add.fused_activation != "NONE":
        return None
    producers = [t.producer if t is not None else None for t in add.inputs]
    for mul_cos, mul_sin in (producers, producers[::-1]):
        if mul_cos is None or mul_sin is None or mul_cos.kind != "MUL" or mul_sin.kind != "MUL":
            continue
        for r, sin in _pairs(mul_sin):
            rotation = _rotation(graph, r)
            if rotation is None:
                continue
            x, ops, mode = rotation
            cos = next((t for t, other in _pairs(mul_cos) if other is x), None)
            if cos is not None:
                return Match(x, cos, sin, [*ops, mul_cos, mul_sin, add], mode)
    return None


def _pairs(op: Op) -> list[tuple[Tensor, Tensor]]:
    a, b = op.inputs[:2]
    return [(a, b), (b, a)] if a is not None and b is not None and a is not b else []


def _rotation(graph: Graph, r: Tensor) -> tuple[Tensor, list[Op], str] | None:
    """x, the ops and the mode when r = rotate(x) in one of the two forms (checked by running them)."""
    last = _producer(r)
    if last is None:
        return None
    pack = _producer(last.input(0)) if last.kind == "RESHAPE" else None
    if last.kind == "CONCATENATION" and len(last.inputs) == 2:
        mode, joined, ops = "half", last, [last]
    elif pack is not None and pack.kind == "PACK" and len(pack.inputs) == 2:
        if only_reader(graph, pack.outputs[0]) is not last:
            return None
        mode, joined, ops = "interleaved", pack, [pack, last]
    else:
        return None
    neg, kept = _producer(joined.inputs[0]), _producer(joined.inputs[1])
    negated = _producer(_negated(neg)) if neg is not None else None
    if neg is None or kept is None or negated is None:
        return None
    x = kept.input(0)
    if kept.kind not in SLICES or negated.kind not in SLICES or x is None or negated.input(0) is not x:
        return None
    chain = [kept, negated, neg, *ops]
    return (x, chain, mode) if _rotates(graph, x, chain, r, mode) else None


def _negated(op: Op) -> Tensor | None:
    """x for NEG(x), or for MUL(x, -1) (litert-torch's negation; -1 · x is -x exactly)."""
    if op.kind == "NEG":
        return op.input(0)
    pair = const_operand(op) if op.kind == "MUL" and op.fused_activation == "NONE" else None
    return pair[1] if pair is not None and scalar(pair[0]) == -1.0 else None


def _producer(t: Tensor | None) -> Op | None:
    return None if t is None else t.producer


def _rotates(graph: Graph, x: Tensor, chain: list[Op], r: Tensor, mode: str) -> bool:
    """Running `chain` on x = 1 .. n (float32, exact) gives the mode's signed rotation of x."""
    from ..errors import RunFailed
    from ..reference.interpreter import Interpreter, kernel_for

    if -1 in x.signature or len(x.shape) != 4 or x.shape[-1] % 2 or graph.model is None:
        return False
    values: dict[int, np.ndarray] = {id(x): np.arange(1, math.prod(x.shape) + 1, dtype=np.float32).reshape(x.shape)}
    interp = Interpreter(graph.model)
    for op in chain:
        kernel = kernel_for(op)
        if kernel is None or any(t is not None and not t.is_const and id(t) not in values for t in op.inputs):
            return False
        args = [None if t is None else values[id(t)] if id(t) in values else t.data for t in op.inputs]
        try:
            outs = kernel(interp, op, None, args)
        except (RunFailed, ValueError, IndexError):
            return False
        values.update({id(t): v for t, v in zip(op.outputs, outs)})
    got = values.get(id(r))
    return got is not None and got.shape == tuple(x.shape) and bool(np.array_equal(got, _rotate(values[id(x)], mode)))


def _rotate(x: np.ndarray, mode: str) -> np.ndarray:
    if mode == "half":
        half = x.shape[-1] // 2
        return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)


def _refusal(graph: Graph, match: Match) -> str | None:
    x, y = match.x, match.ops[-1].outputs[0]
    lacks = format_lacks(graph, "ROPE")
    if lacks:
        return lacks
    inner = [t for op in match.ops[:-1] for t in op.outputs]
    if any(only_reader(graph, t) is None for t in inner):
        return "an intermediate of it is read elsewhere or is a graph output"
    if any(op.has_fused_activation_slot and op.fused_activation != "NONE" for op in match.ops):
        return "an op of it carries a fused activation"
    if not all(is_plain_float(t) for t in (x, match.cos, match.sin, *inner, y)) or y.signature != x.signature:
        return "not float32 throughout, or the output's shape is not x's"
    for name, table in (("cos", match.cos), ("sin", match.sin)):
        if table.shape[-1:] != x.shape[-1:] or len(table.shape) > 4 or _broadcast(table.shape, x.shape) != x.shape:
            return f"the {name} table {list(table.shape)} does not broadcast along x's last axis {list(x.shape)}"
        if len(table.shape) < 4 and not table.is_const:
            return f"the {name} table is computed and of rank {len(table.shape)}, not 4"
    return None


def _broadcast(a, b) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return None


def _distinct_rows(table: Tensor) -> int:
    """The rows (vectors along the last axis) of a table, counting a constant's as one when every row
    is its first bit for bit (broadcasting that one row gives the same values)."""
    rows = math.prod(table.shape[:-1])
    if rows > 1 and table.data is not None:
        flat = np.ascontiguousarray(table.data).reshape(rows, -1).view(np.uint32)
        if bool((flat == flat[:1]).all()):
            return 1
    return rows


def _as_read(graph: Graph, table: Tensor) -> Tensor:
    """The table as the ROPE reads it: of rank 4, a constant of one distinct row as that row alone (a
    new constant: the old one may have other readers)."""
    if math.prod(table.shape[:-1]) > 1 and _distinct_rows(table) == 1:
        assert table.data is not None  # _distinct_rows: only a constant's rows are compared
        row = table.data.reshape(-1, table.shape[-1])[:1].reshape(1, 1, 1, -1)
        return graph.add_const(graph.unique_name(f"{table.name}/row"), np.array(row, dtype=np.float32))
    if len(table.shape) == 4:
        return table
    assert table.data is not None  # _refusal: a table of lower rank is a constant
    data = table.data.reshape((1,) * (4 - len(table.shape)) + tuple(table.shape))
    return graph.add_const(graph.unique_name(f"{table.name}/rank4"), data)


def _fuse(graph: Graph, result: PassResult, match: Match) -> None:
    add = match.ops[-1]
    y = add.outputs[0]
    sin, cos = _as_read(graph, match.sin), _as_read(graph, match.cos)
    result.fold(add, match.ops, into=[], mode=match.mode)
    for op in match.ops:
        graph.remove_op(op)
    options = Options("RoPEOptions", mode=MODES[match.mode])
    result.made(graph.add_op("ROPE", [match.x, sin, cos], [y], options, after=add))
