"""resolve_former_customop: a CUSTOM op that has since become a builtin becomes that builtin (ONE's
pass of that name: files converted before the schema had the operator). ONE knows one such op,
BroadcastTo, and so does bnfold.

    before:  x, shape (INT32 / INT64) -> CUSTOM(BroadcastTo) -> y
    after:   x, shape -> BROADCAST_TO -> y

Exact: the same operation, computed by the runtime's builtin kernel instead of TensorFlow's (Flex)
kernel: every element of y is a copy of an element of x. Guards (ONE's): custom code BroadcastTo,
two inputs, the shape INT32 or INT64, y of x's type; the target runs BROADCAST_TO. Also: a constant
shape broadcasts x to y's shape (a builtin's shapes are checked, a custom op's never were).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.report import PassResult
from ..ir.custom import custom_code
from ..ir.graph import Graph, Op
from ..ir.ops import info

RESOLVED = {"BroadcastTo": "BROADCAST_TO"}


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "CUSTOM" and custom_code(op) in RESOLVED]:
        reason = _refusal(op)
        if reason is not None:
            result.refuse_value(op, reason)
            continue
        builtin = RESOLVED[custom_code(op) or ""]
        reason = targets.refusal(graph, builtin)
        if reason is not None:
            result.not_for_target(op, reason)
            continue
        result.fold(op, [op], into=[], made=builtin)
        graph.remove_op(op)
        version = info(builtin).min_version
        result.made(graph.add_op(builtin, list(op.inputs), list(op.outputs), None, after=op, version=version))
    return result


def _refusal(op: Op) -> str | None:
    if len(op.inputs) != 2 or len(op.outputs) != 1 or any(t is None for t in op.inputs):
        return "BroadcastTo takes an input and a shape"
    x, shape = op.operand(0), op.operand(1)
    if shape.dtype not in ("INT32", "INT64"):
        return f"its shape is {shape.dtype}, not INT32 or INT64"
    if op.outputs[0].dtype != x.dtype:
        return "its output type is not its input's"
    if shape.is_const:  # the builtin's shape is checked (a custom op's is not): it must hold
        try:
            target = tuple(np.broadcast_shapes(x.shape, tuple(int(d) for d in shape.const_data.reshape(-1))))
        except ValueError:
            target = None
        if target != op.outputs[0].shape:
            return f"{list(x.shape)} broadcast to {shape.const_data.reshape(-1).tolist()} is not its output's shape"
    return None
