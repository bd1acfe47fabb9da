"""decompose_softmax: SOFTMAX becomes the ops that compute it (ONE's circle2circle option of that
name, "for special backends" that lack a SOFTMAX kernel).

    softmax(x)[i] = exp(β·(x[i] - max x)) / Σ_j exp(β·(x[j] - max x))     (over the last axis)

    before:  x -> SOFTMAX(β) -> y
    after:   x -> REDUCE_MAX(-1, keep) -> m;  SUB(x, m) -> d;  [MUL(d, β) -> d';]  EXP -> e;
             SUM(e, -1, keep) -> s;  DIV(e, s) -> y

The ops and their order are ONE's (DecomposeSoftmaxPass). Exact up to float rounding: the same
float32 operations LiteRT's kernel performs, rounded after each op, with the sum in another
order; measured within a few ulp (tests/passes/test_decompose_softmax.py). One difference from
ONE: ONE leaves out the MUL when |β - 1| <= 1e-5, which changes values for such a β; bnfold leaves
it out only for β = 1 exactly. Opt-in: no runtime bnfold targets lacks SOFTMAX, and the
decomposition runs slower; it is for a backend that needs it.
Guards: float32, not quantized (as ONE); the target runs every op made.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import SHAPES_DISAGREE, shapes_hold
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options
from ..ir.ops import FUSED_ACTIVATIONS

MADE = ("REDUCE_MAX", "SUB", "MUL", "EXP", "SUM", "DIV")
NO_ACTIVATION = FUSED_ACTIVATIONS.index("NONE")


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for softmax in [op for op in graph.ops if op.kind == "SOFTMAX"]:
        x, y = softmax.input(0), softmax.outputs[0]
        if x is None or x.dtype != "FLOAT32" or x.is_quantized or y.is_quantized or not x.shape:
            continue
        if not shapes_hold(softmax):
            result.refuse_value(softmax, SHAPES_DISAGREE)
            continue
        reason = next((r for kind in MADE if (r := targets.refusal(graph, kind)) is not None), None)
        if reason is not None:
            result.not_for_target(softmax, reason)
            continue
        beta = float(np.float32(getattr(softmax.options, "beta", 1.0)))
        result.fold(softmax, [softmax], into=[], beta=beta)
        graph.remove_op(softmax)
        for op in _decompose(graph, softmax, beta):
            result.made(op)
    return result


def _decompose(graph: Graph, softmax: Op, beta: float) -> list[Op]:
    x, y = softmax.operand(0), softmax.outputs[0]
    name = y.name

    def tensor(suffix: str):
        keep = (*x.shape[:-1], 1) if suffix in ("max", "sum") else x.shape
        signature = (
            None if x.shape_signature is None else (*x.signature[:-1], 1) if suffix in ("max", "sum") else x.signature
        )
        return graph.add_tensor(f"{name}/Softmax/{suffix}", "FLOAT32", keep, shape_signature=signature)

    axis = graph.add_const(graph.unique_name(f"{name}/Softmax/reduction_index"), np.array(-1, np.int32), "INT32")
    m, d, e, s = tensor("max"), tensor("sub"), tensor("exp"), tensor("sum")
    made = [graph.add_op("REDUCE_MAX", [x, axis], [m], Options("ReducerOptions", keepDims=True), after=softmax)]
    made.append(graph.add_op("SUB", [x, m], [d], _plain("SubOptions"), after=made[-1]))
    if beta != 1.0:
        scaled = tensor("beta_mul")
        beta_const = graph.add_const(graph.unique_name(f"{name}/Softmax/beta_const"), np.array(beta, np.float32))
        made.append(graph.add_op("MUL", [d, beta_const], [scaled], _plain("MulOptions"), after=made[-1]))
        d = scaled
    made.append(graph.add_op("EXP", [d], [e], None, after=made[-1]))
    made.append(graph.add_op("SUM", [e, axis], [s], Options("ReducerOptions", keepDims=True), after=made[-1]))
    made.append(graph.add_op("DIV", [e, s], [y], _plain("DivOptions"), after=made[-1]))
    return made


def _plain(table: str) -> Options:
    return Options(table, fusedActivationFunction=NO_ACTIVATION)
