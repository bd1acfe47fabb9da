"""replace_non_const_fc_with_batch_matmul: a FULLY_CONNECTED whose weights are computed at run time
becomes a BATCH_MATMUL (ONE's pass of that name: backends that take FC weights only as constants,
e.g. attention's x·Kᵀ exported as an FC).

    before:  x [.., K], W [U, K] (not constant), b [U]? -> FULLY_CONNECTED(act) -> y
    after:   x, W -> BATCH_MATMUL(adj_y) -> p [.., U] -> [RESHAPE to y's shape] -> [ADD(b, act) | act op] -> y

Exact: FULLY_CONNECTED computes x·Wᵀ (+ b) row by row, which is BATCH_MATMUL with adj_y on the
same operands; the bias is one ADD (left out when absent or all zero, as ONE does), the fused
activation goes onto the ADD or becomes its own op. A RESHAPE is added only where the shapes
differ (FC flattens x's leading axes unless keep_num_dims).

Where: only for the onert target (engine/targets.py; the default of a Circle output): ONE's backends
take FULLY_CONNECTED weights as constants only (`wants_constant_fc_weights`), and the target must
run every op made: BATCH_MATMUL (the table says onert does) with what it would read: not with a
constant left operand, which onert refuses (an FC whose input is a constant, as TICO writes `mm(W,
x)` for onert, stays); the ADD with the activation, or the activation as its own op (onert 0.1.0
runs no standalone RELU_N1_TO_1: "This layer suppports only ReLU(0-inf) and ReLU6(0-6)"; then the
FC, which onert runs, stays). For litert (and any, whose output may run in LiteRT) the FC stays:
LiteRT runs computed weights itself, and its BATCH_MATMUL is slower for one row: measured (LiteRT
2.3, 1 thread, median of 300 runs) [1, 512] by [512, 512] weights 18.5 us as FC, 84.9 us as
BATCH_MATMUL + ADD (4.6x; 0.39x-0.60x for 7 and 64 rows); onert ran both alike (60.6 against 61.2
us, 253.9 against 256.9 us for 64 rows).

Guards: float32 x, W, y (and b), none quantized; W of rank 2 and not constant; x of rank 2 or more
with static shapes; the fused activation NONE, RELU, RELU6 or RELU_N1_TO_1 (a range LiteRT
applies; TANH would need its own op, as ONE adds, which no kernel fuses back).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import batch_matmul_options, is_plain_float
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options
from ..ir.ops import FUSED_ACTIVATIONS, RANGE_ACTIVATIONS


def wants_constant_fc_weights(graph: Graph) -> bool:
    """Whether the runtime the model is made for takes FULLY_CONNECTED weights only as constants:
    onert (ONE's backends); not litert, nor any (the output may run in LiteRT, where the rewrite is
    slower)."""
    return targets.name_of(graph) == "onert"


def run(graph: Graph) -> PassResult:
    result = PassResult()
    if not wants_constant_fc_weights(graph):
        return result
    for fc in [op for op in graph.ops if op.kind == "FULLY_CONNECTED"]:
        x, w, b, y = fc.input(0), fc.input(1), fc.input(2), fc.outputs[0]
        if x is None or w is None or w.is_const or len(w.shape) != 2 or len(x.shape) < 2:
            continue
        if not all(is_plain_float(t) for t in (x, w, y)) or (b is not None and not (is_plain_float(b) and b.is_const)):
            result.refuse_value(fc, "not float32 throughout (or quantized), or the bias is no constant")
            continue
        if min(x.signature) < 0:
            result.refuse_value(fc, f"{x.name!r} has no static shape")
            continue
        if fc.fused_activation not in ("NONE", *RANGE_ACTIVATIONS):
            result.refuse_value(fc, f"its fused {fc.fused_activation} is no activation op the rewrite could make")
            continue
        steps = _steps(fc)
        # every operator the rewrite makes, with what it reads and its activation: TICO writes a
        # constant-left matmul for onert as an FC whose input is the constant (onert refuses a
        # BATCH_MATMUL reading a constant on the left); an activation without a bias is its own op,
        # which a runtime may not run (onert 0.1.0 runs no standalone RELU_N1_TO_1)
        unsupported = targets.refusal(graph, "BATCH_MATMUL", constant_inputs=[0] if x.is_const else [])
        made = [("ADD", fc.fused_activation)] if "bias" in steps else []
        made += [(fc.fused_activation, "NONE")] if "activation" in steps else []
        unsupported = unsupported or next(filter(None, (targets.refusal(graph, k, a) for k, a in made)), None)
        if unsupported:
            result.not_for_target(fc, unsupported)
            continue
        _replace(graph, result, fc, steps)
    return result


def _steps(fc: Op) -> list[str]:
    """What follows the BATCH_MATMUL: a RESHAPE where the shapes differ, then the bias as an ADD
    carrying the activation, or the activation as its own op, or nothing."""
    x, w, b, y = fc.operand(0), fc.operand(1), fc.input(2), fc.outputs[0]
    bias = b is not None and bool(np.any(b.const_data != 0))
    steps = ["reshape"] if tuple(x.shape[:-1]) + (w.shape[0],) != tuple(y.shape) else []
    return steps + (["bias"] if bias else ["activation"] if fc.fused_activation != "NONE" else [])


def _replace(graph: Graph, result: PassResult, fc: Op, steps: list[str]) -> None:
    x, w, b, y = fc.operand(0), fc.operand(1), fc.input(2), fc.outputs[0]  # run: x, w; a constant b if any
    act = fc.fused_activation
    result.fold(fc, [fc], into=[], steps=steps)
    graph.remove_op(fc)
    product = (
        y
        if not steps
        else graph.add_tensor(graph.unique_name(f"{y.name}/matmul"), "FLOAT32", (*x.shape[:-1], w.shape[0]))
    )
    last = graph.add_op("BATCH_MATMUL", [x, w], [product], batch_matmul_options(graph, False, True), after=fc)
    result.made(last)
    for i, step in enumerate(steps):
        out = (
            y if i == len(steps) - 1 else graph.add_tensor(graph.unique_name(f"{y.name}/reshaped"), "FLOAT32", y.shape)
        )
        if step == "reshape":
            shape = graph.add_const(graph.unique_name(f"{y.name}/shape"), np.array(y.shape, np.int32), "INT32")
            last = graph.add_op(
                "RESHAPE",
                [last.outputs[0], shape],
                [out],
                Options("ReshapeOptions", newShape=list(y.shape)),
                after=last,
            )
        elif step == "bias":
            add_options = Options(
                "AddOptions", fusedActivationFunction=FUSED_ACTIVATIONS.index(act), potScaleInt16=True
            )
            last = graph.add_op("ADD", [last.outputs[0], b], [out], add_options, after=last)
        else:
            last = graph.add_op(act, [last.outputs[0]], [out], None, after=last)
        result.made(last)
