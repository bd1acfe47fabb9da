"""fuse_gelu: GELU written out with TensorFlow's Erf (a CUSTOM op) becomes one GELU (ONE's pass of
that name; TF/Keras exports of gelu(approximate=False)).

    gelu(x) = 0.5 · x · (1 + erf(x / √2))

    x ─┬─> MUL(x, 1/√2) -> CUSTOM(Erf) -> e -> ADD(e, 1) -> a ─┐
       │    (or DIV(x, √2))                                    ├─> the product 0.5 · x · a -> y
       └───────────────────────────────────────────────────────┘
    after:  x -> GELU(approximate=false) -> y

The product may be written MUL(MUL(x, a), 0.5) (ONE's pattern), MUL(x, MUL(a, 0.5)) or
MUL(MUL(x, 0.5), a). Exact up to float rounding: each form is the same function, LiteRT's GELU
computes it with its own erf (max |difference| / max |output| below 2e-7 in the recipe's check).
The constants must be exactly float32(1/√2) (or float32(√2) for the DIV), 1 and 0.5: ONE takes
any 1/√2 within 1e-5, which is a different function by up to that much.

Guards: float32 throughout, none quantized, all of x's shape; no fused activations; every
intermediate read only inside the pattern and no graph output (x may have any readers). GELU is
a builtin of both formats; the target must run it (engine/targets.py: LiteRT and onert do).
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import targets
from ..engine.match import (
    collapse,
    const_operand,
    format_has,
    no_activation,
    not_plain_float,
    only_reader,
    read_elsewhere,
    scalar,
)
from ..engine.report import PassResult
from ..ir.custom import custom_code
from ..ir.graph import Graph, Op, Options, Tensor

INV_SQRT2 = float(np.float32(math.sqrt(0.5)))
SQRT2 = float(np.float32(math.sqrt(2.0)))


def run(graph: Graph) -> PassResult:
    result = PassResult()
    if not format_has(graph, "GELU"):
        return result
    for erf in [op for op in graph.ops if custom_code(op) == "Erf"]:
        match = _match(graph, erf)
        if match is None:
            continue
        if isinstance(match, str):
            result.refuse_value(erf, match)
            continue
        x, ops = match
        unsupported = targets.refusal(graph, "GELU")
        if unsupported:
            result.not_for_target(ops[-1], unsupported)
            continue
        collapse(graph, result, ops, [x], "GELU", Options("GeluOptions", approximate=False), activation="GELU")
    return result


def _match(graph: Graph, erf: Op) -> tuple[Tensor, list[Op]] | str | None:
    """(x, the ops computing gelu(x), in order) for the pattern around `erf`; None when the ops are
    not the pattern, or why a pattern found cannot be fused."""
    if len(erf.inputs) != 1 or len(erf.outputs) != 1 or erf.inputs[0] is None:
        return None
    scale = erf.inputs[0].producer
    x = _scaled_by_inv_sqrt2(scale)
    add = only_reader(graph, erf.outputs[0])
    if scale is None or x is None:
        return None
    if only_reader(graph, scale.outputs[0]) is not erf:
        return read_elsewhere(graph, scale.outputs[0], "CUSTOM")
    if add is None or add.kind != "ADD":
        return None if add is not None else read_elsewhere(graph, erf.outputs[0], "ADD")
    pair = const_operand(add)
    if pair is None or pair[1] is not erf.outputs[0] or scalar(pair[0]) != 1.0:
        return None
    tail = _product(graph, x, add.outputs[0])
    if tail is None:
        return None
    ops = [scale, erf, add, *tail]
    active = next((op for op in ops if not no_activation(op)), None)
    if active is not None:
        return f"{active.kind} {active.outputs[0].name!r} has a fused {active.fused_activation}"
    return not_plain_float(x, (x, *(op.outputs[0] for op in ops))) or (x, ops)


def _scaled_by_inv_sqrt2(op: Op | None) -> Tensor | None:
    """x for an op computing x / √2 (MUL by float32(1/√2), DIV by float32(√2))."""
    if op is None or op.kind not in ("MUL", "DIV"):
        return None
    if op.kind == "DIV":
        return op.operand(0) if not op.operand(0).is_const and scalar(op.input(1)) == SQRT2 else None
    pair = const_operand(op)
    return pair[1] if pair is not None and scalar(pair[0]) == INV_SQRT2 else None


def _product(graph: Graph, x: Tensor, a: Tensor) -> list[Op] | None:
    """The two MULs computing 0.5 · x · a, in order, in any of the three groupings."""
    first = only_reader(graph, a)
    if first is None or first.kind != "MUL":
        return None
    if set(first.inputs[:2]) == {x, a}:  # (x · a) · 0.5
        second = only_reader(graph, first.outputs[0])
        return [first, second] if second is not None and _halves(second, first.outputs[0]) else None
    if _halves(first, a):  # x · (a · 0.5)
        second = only_reader(graph, first.outputs[0])
        return [first, second] if second is not None and set(second.inputs[:2]) == {x, first.outputs[0]} else None
    for half in graph.consumers(x):  # (x · 0.5) · a
        h = half.outputs[0]
        if (
            half.kind == "MUL"
            and _halves(half, x)
            and set(first.inputs[:2]) == {h, a}
            and only_reader(graph, h) is first
        ):
            return [half, first]
    return None


def _halves(op: Op | None, v: Tensor) -> bool:
    """op is v · 0.5 (either operand order)."""
    if op is None or op.kind != "MUL":
        return False
    pair = const_operand(op)
    return pair is not None and pair[1] is v and scalar(pair[0]) == 0.5
