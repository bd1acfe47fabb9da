"""replace_sub_with_add: x - c becomes x + (-c) for a float32 constant c (ONE's pass of that name:
an ADD is what later folds into a bias or a layer, and some backends run ADD faster).

    before:  x -> SUB(x, c, act) -> y        after:  x -> ADD(x, -c, act) -> y

Exact, bit for bit: negation is exact in IEEE arithmetic and x - c is defined as x + (-c), so
every element rounds the same; the fused activation moves unchanged (ONE keeps it too).
Guards (ONE's): the subtrahend is a float32 constant (not quantized); also x is no constant (a
SUB of two constants is fold work, not this pass's). The constant -c is a new tensor, so a c
another op reads is never changed.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import SHAPES_DISAGREE, float_const, shapes_hold
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options
from ..ir.ops import FUSED_ACTIVATIONS


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for sub in [op for op in graph.ops if op.kind == "SUB"]:
        x, c = sub.input(0), sub.input(1)
        if x is None or x.is_const or float_const(c) is None:
            continue
        if not shapes_hold(sub):
            result.refuse_value(sub, SHAPES_DISAGREE)
            continue
        reason = targets.refusal(graph, "ADD", sub.fused_activation)
        if reason is not None:
            result.not_for_target(sub, reason)
            continue
        _replace(graph, result, sub)
    return result


def _replace(graph: Graph, result: PassResult, sub: Op) -> None:
    x, c, y = sub.operand(0), sub.operand(1), sub.outputs[0]
    negated = graph.add_const(graph.unique_name(f"{c.name}/neg"), np.negative(c.const_data))
    activation = FUSED_ACTIVATIONS.index(sub.fused_activation)
    result.fold(sub, [sub], into=[], constant=negated.name)
    graph.remove_op(sub)
    options = Options("AddOptions", fusedActivationFunction=activation)
    result.made(graph.add_op("ADD", [x, negated], [y], options, after=sub))
