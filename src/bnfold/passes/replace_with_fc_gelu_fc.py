"""replace_with_fc_gelu_fc: a transformer MLP whose GELU was folded into its first layer by TensorFlow
becomes FC -> GELU -> FC again (ONE's pass of that name).

    x ─┬─> FC1(W1, b1) -> f ───────────────────────────────┐
       └─> FC2(W1/√2, b1/√2) -> CUSTOM(Erf) -> ADD(1) -> a ─┴─> MUL(f, a) -> m -> FC3(W3, b3) -> y
    after:  x -> FC1(W1, b1) -> f' -> GELU -> g -> FC3(2·W3, b3) -> y

Algebra: FC2(x) = f/√2, so m = f·(1 + erf(f/√2)) = 2·gelu(f), and FC3(m) = (2·W3)·gelu(f) + b3.
Doubling is exact in float; FC2's sums differ from f/√2 by float rounding only. FC2's constants
must be FC1's times float32(1/√2) to within one ulp each (ONE accepts 1e-5 absolute, which is
another model for small weights); both biases present or both absent.

Guards: float32 throughout, none quantized; FC1, FC2, the ADD and the MUL without fused
activation (FC3 keeps its own); FC1 and FC2 read the same x with the same options; constant
weights in the default format; every intermediate read only inside the pattern and no graph
output (FC1 is made anew under a new output name, as ONE clones it: its old output is gone, so
the per-rewrite check sees x -> y, not f and x as unrelated inputs); FC3's weights constant (a
new scaled copy is made; the original stays for others).
GELU is a builtin of both formats; the target must run it (engine/targets.py: LiteRT and onert do).
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import targets
from ..engine.match import (
    const_operand,
    format_has,
    is_plain_float,
    no_activation,
    only_reader,
    read_elsewhere,
    scalar,
)
from ..engine.report import PassResult
from ..ir.custom import custom_code
from ..ir.graph import Graph, Op, Options

INV_SQRT2 = np.float32(math.sqrt(0.5))


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
        fc1, fc2, add, mul, fc3 = match
        unsupported = targets.refusal(graph, "GELU")
        if unsupported:
            result.not_for_target(fc3, unsupported)
            continue
        old = (fc1, fc2, erf, add, mul, fc3)
        result.fold(fc3, list(old), into=[], activation="GELU")
        for op in old:
            graph.remove_op(op)
        # FC1 anew, under a new output name: its output is now GELU's input, another value
        f = graph.add_tensor(graph.unique_name(f"{fc1.outputs[0].name}/front"), "FLOAT32", fc1.outputs[0].shape)
        front = graph.add_op(fc1.opcode, fc1.inputs, [f], fc1.options_with(), after=fc1)
        g = graph.add_tensor(graph.unique_name(f"{fc1.outputs[0].name}/gelu"), "FLOAT32", f.shape)
        gelu = graph.add_op("GELU", [f], [g], Options("GeluOptions", approximate=False), after=front)
        for op in (front, gelu):
            result.made(op)
        w = fc3.operand(1)  # _plain_layer: constant weights
        w3 = graph.add_const(graph.unique_name(f"{w.name}/doubled"), w.const_data * np.float32(2))
        inputs = [g, w3, *fc3.inputs[2:]]
        result.made(graph.add_op(fc3.opcode, inputs, fc3.outputs, fc3.options_with(), after=fc3))
    return result


def _match(graph: Graph, erf: Op) -> tuple[Op, Op, Op, Op, Op] | str | None:
    """(FC1, FC2, ADD, MUL, FC3) around `erf`; None when the ops are not the pattern, or why a
    pattern found cannot be rewritten."""
    x = erf.input(0)
    if len(erf.inputs) != 1 or len(erf.outputs) != 1 or x is None:
        return None
    fc2, add = x.producer, only_reader(graph, erf.outputs[0])
    if fc2 is None or fc2.kind != "FULLY_CONNECTED":
        return None
    if only_reader(graph, fc2.outputs[0]) is not erf:
        return read_elsewhere(graph, fc2.outputs[0], "CUSTOM")
    if add is None:
        return read_elsewhere(graph, erf.outputs[0], "ADD")
    one = None if add.kind != "ADD" else const_operand(add)
    if one is None or scalar(one[0]) != 1.0:
        return None
    a = add.outputs[0]
    mul = only_reader(graph, a)
    if mul is None or mul.kind != "MUL" or a not in mul.inputs[:2]:
        return None if mul is not None else read_elsewhere(graph, a, "MUL")
    f = mul.operand(1) if mul.inputs[0] is a else mul.operand(0)
    fc1 = f.producer if only_reader(graph, f) is mul else None
    fc3 = only_reader(graph, mul.outputs[0])
    if fc1 is None or fc1.kind != "FULLY_CONNECTED" or fc3 is None or fc3.kind != "FULLY_CONNECTED":
        if fc1 is None and f.producer is not None and f.producer.kind == "FULLY_CONNECTED":
            return read_elsewhere(graph, f, "MUL")
        return read_elsewhere(graph, mul.outputs[0], "FULLY_CONNECTED") if fc3 is None else None
    if fc3.input(0) is not mul.outputs[0] or not _same_layer_scaled(fc1, fc2):
        return None
    if not _plain_layer(fc3):
        return f"the last FULLY_CONNECTED {fc3.outputs[0].name!r} has no constant float32 weights in the default format"
    ops = (fc1, fc2, add, mul, fc3)
    active = next((op for op in ops[:4] if not no_activation(op)), None)
    if active is not None:
        return f"{active.kind} {active.outputs[0].name!r} has a fused {active.fused_activation}"
    problem = next((op.outputs[0] for op in ops if not is_plain_float(op.outputs[0])), None)
    if problem is not None:
        return f"{problem.name!r} is not float32 (or is quantized)"
    return ops


def _plain_layer(fc: Op) -> bool:
    """A float32 FULLY_CONNECTED with constant weights in the default format."""
    w, b = fc.input(1), fc.input(2)
    return (
        w is not None
        and w.is_const
        and is_plain_float(w)
        and getattr(fc.options, "weightsFormat", 0) == 0
        and (b is None or is_plain_float(b) and b.is_const)
    )


def _same_layer_scaled(fc1: Op, fc2: Op) -> bool:
    """fc2 is fc1 with weights and bias times float32(1/√2), each within one ulp, on the same input."""
    if fc1.input(0) is not fc2.input(0) or not (_plain_layer(fc1) and _plain_layer(fc2)):
        return False
    if fc1.options_with().fields() != fc2.options_with().fields():  # (a file may give an FC no options)
        return False
    pairs = [(fc1.input(1), fc2.input(1)), (fc1.input(2), fc2.input(2))]
    for one, two in pairs:
        if (one is None) != (two is None):
            return False
        if one is not None and two is not None and not _scaled_copy(one.const_data, two.const_data):
            return False
    return True


def _scaled_copy(original: np.ndarray, scaled: np.ndarray) -> bool:
    if original.shape != scaled.shape:
        return False
    want = original.astype(np.float64) * float(INV_SQRT2)
    return bool(np.all(np.abs(scaled.astype(np.float64) - want) <= np.spacing(np.abs(want).astype(np.float32))))
