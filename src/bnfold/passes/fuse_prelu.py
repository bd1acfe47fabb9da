"""fuse_prelu: PReLU written out with ABS, as ONNX exporters and tflchef-reverse leave it, becomes one
PRELU (ONE's pass of that name, its recipe Net_Conv_PReluGraph_000).

    x ─┬─> RELU -> r ────────────────────────────────────────────┐
       ├─> ABS -> a ─┐                                           ├─> ADD -> y
       └────────────-┴─> SUB(x, a) -> s -> MUL(α) -> MUL(0.5) -> m┘   (the MULs in either order)
    after:  x -> PRELU(x, α) -> y

Algebra: x - |x| is 2x for x < 0 and 0 otherwise, so m = α·min(x, 0) and y = relu(x) + α·min(x, 0)
= prelu(x, α). Exact: x - |x| = 2x is exact, scaling by 0.5 is exact (away from the subnormal
range) and commutes with the rounding of the product by α, and one of the two terms of the ADD
is zero: the same float32 values as LiteRT's PRELU.

Guards: float32 throughout, none quantized, all of x's shape; α a float32 constant that
broadcasts to x without changing its shape (per channel [C], [1, .., C], or one value), the
other MUL by exactly 0.5; no fused activations; r, a, s and the MUL outputs read only inside the
pattern and no graph outputs. PRELU is a builtin of both formats; the target must run it
(engine/targets.py: LiteRT does; onert 0.1.0's cpu backend fails to prepare it, "KernelGenerator:
NYI for operation 'PReLU'", so for an onert target the written-out form stays and the report's
`target.refused` says why).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import (
    collapse,
    const_operand,
    float_const,
    format_has,
    no_activation,
    not_plain_float,
    only_reader,
    read_elsewhere,
    scalar,
)
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor


def run(graph: Graph) -> PassResult:
    result = PassResult()
    if not format_has(graph, "PRELU"):
        return result
    for abs_op in [op for op in graph.ops if op.kind == "ABS"]:
        match = _match(graph, abs_op)
        if match is None:
            continue
        if isinstance(match, str):
            result.refuse_value(abs_op, match)
            continue
        x, alpha, ops = match
        unsupported = targets.refusal(graph, "PRELU")
        if unsupported:
            result.not_for_target(ops[-1], unsupported)
            continue
        collapse(graph, result, ops, [x, alpha], "PRELU", None, activation="PRELU")
    return result


def _match(graph: Graph, abs_op: Op) -> tuple[Tensor, Tensor, list[Op]] | str | None:
    """(x, α, the ops) of the PReLU around `abs_op`; None when the ops are not the pattern, or why
    a pattern found cannot be fused."""
    x = abs_op.input(0)
    sub = only_reader(graph, abs_op.outputs[0])
    if x is None or sub is None or sub.kind != "SUB" or sub.inputs[:2] != (x, abs_op.outputs[0]):
        return None
    first = only_reader(graph, sub.outputs[0])
    if first is None:
        return read_elsewhere(graph, sub.outputs[0], "MUL")
    second = only_reader(graph, first.outputs[0])
    if second is None:
        return read_elsewhere(graph, first.outputs[0], "MUL")
    scales = _alpha_and_half(first, second, sub.outputs[0])
    if scales is None or first is None or second is None:  # (scales says both are there)
        return None
    alpha, _ = scales
    add = only_reader(graph, second.outputs[0])
    if add is None or add.kind != "ADD" or second.outputs[0] not in add.inputs[:2]:
        return None
    r = add.operand(1) if add.inputs[0] is second.outputs[0] else add.operand(0)
    relu = r.producer
    if relu is None or relu.kind != "RELU" or relu.input(0) is not x:
        return None
    if only_reader(graph, r) is not add:
        return read_elsewhere(graph, r, "ADD")
    ops = [relu, abs_op, sub, first, second, add]
    active = next((op for op in ops if not no_activation(op)), None)
    if active is not None:
        return f"{active.kind} {active.outputs[0].name!r} has a fused {active.fused_activation}"
    why = not_plain_float(x, (x, *(op.outputs[0] for op in ops)))
    if why:
        return why
    if np.broadcast_shapes(alpha.shape, x.shape) != x.shape:
        return f"α {list(alpha.shape)} broadcasts x {list(x.shape)}: PRELU's output has x's shape"
    return x, alpha, ops


def _alpha_and_half(first: Op | None, second: Op | None, s: Tensor) -> tuple[Tensor, Op] | None:
    """(α, the MUL by 0.5) for s -> MUL(α) -> MUL(0.5), or s -> MUL(0.5) -> MUL(α)."""
    if first is None or second is None or first.kind != "MUL" or second.kind != "MUL":
        return None
    a, b = const_operand(first), const_operand(second)
    if a is None or b is None or a[1] is not s or b[1] is not first.outputs[0]:
        return None
    if scalar(b[0]) == 0.5 and float_const(a[0]) is not None:
        return a[0], second
    if scalar(a[0]) == 0.5 and float_const(b[0]) is not None:
        return b[0], first
    return None
