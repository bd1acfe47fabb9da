"""decompose_hardswish: ONE's circle2circle option of that name; HARD_SWISH becomes what every
runtime runs (onert 0.1.0 does not load HARD_SWISH).

    hardswish(x) = x · relu6(x + 3) · (1/6)

    before:  x -> HARD_SWISH -> y
    after:   x ─┬─> ADD(x, 3) -> a -> RELU6 -> r -> MUL(r, 1/6) -> s ─┐
                └──────────────────────────────────────────────────> MUL(x, s) -> y

The ops, their operand order and the constants are circle2circle's (DecomposeHardSwishPass): the
3 and float32(1/6) are rank-0 float32 constants, the ADD and MULs carry no fused activation, and
the new tensors are named after y (`y/Add`, `y/Relu6`, `y/Mul1`; constants `y/Add/const`,
`y/Mul/const`). Exact up to float rounding: the decomposition rounds after the add, the scale and
the product, and multiplies by float32(1/6) instead of dividing by 6; against LiteRT's HARD_SWISH
kernel the difference is at most 2 ulp of y (measured in tests/passes/test_decompose_hardswish.py
and on TICO's MobileNetV3-Small: docs/measurements.md).

Opt-in (not in the default set), as in ONE. It undoes fuse_hardswish, so the two are never run
together (registry.resolve refuses it). Guards: float32 and not quantized (as ONE: other types
are left); the target runs ADD, RELU6 and MUL (engine/targets.py).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import FUSED_ACTIVATIONS

NO_ACTIVATION = FUSED_ACTIVATIONS.index("NONE")


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for hard_swish in [op for op in graph.ops if op.kind == "HARD_SWISH"]:
        x, y = hard_swish.input(0), hard_swish.outputs[0]
        if x is None:  # no input: nothing to decompose (the reader allows an optional input slot)
            continue
        if x.dtype != "FLOAT32" or y.dtype != "FLOAT32" or x.is_quantized or y.is_quantized:
            result.refuse_value(hard_swish, f"hard swish of {y.dtype}, not float32 (left as ONE leaves it)")
            continue
        unsupported = targets.first_refusal(graph, ("ADD", "RELU6", "MUL"))
        if unsupported:
            result.not_for_target(hard_swish, unsupported)
            continue
        result.fold(hard_swish, [hard_swish], into=[], activation="HARD_SWISH", decomposed=True)
        for op in _decomposition(graph, hard_swish, x):
            result.made(op)
        graph.remove_op(hard_swish)
    return result


def _decomposition(graph: Graph, hard_swish: Op, x: Tensor) -> list[Op]:
    """The ADD, RELU6 and two MULs computing hard_swish's output from its input `x`, placed where it was."""
    y = hard_swish.outputs[0]
    name = y.name
    three = graph.add_const(f"{name}/Add/const", np.array(3.0, dtype=np.float32))
    sixth = graph.add_const(f"{name}/Mul/const", np.array(1.0 / 6.0, dtype=np.float32))
    a, r, s = (graph.add_tensor(f"{name}/{what}", "FLOAT32", x.shape) for what in ("Add", "Relu6", "Mul1"))
    for t in (a, r, s):
        t.shape_signature = x.shape_signature
    add = graph.add_op("ADD", [x, three], [a], _activation_free("AddOptions"), after=hard_swish)
    relu6 = graph.add_op("RELU6", [a], [r], None, after=add)
    scale = graph.add_op("MUL", [r, sixth], [s], _activation_free("MulOptions"), after=relu6)
    product = graph.add_op("MUL", [x, s], [y], _activation_free("MulOptions"), after=scale)
    return [add, relu6, scale, product]


def _activation_free(table: str) -> Options:
    return Options(table, fusedActivationFunction=NO_ACTIVATION)
