"""fuse_horizontal_fc_layers: two FULLY_CONNECTED layers reading the same input whose outputs are
added become one layer (ONE's pass of that name; LoRA adapters and parallel branches).

    before:  x ─┬─> FC(W1, b1) -> p ─┐
                └─> FC(W2, b2) -> q ─┴─> ADD(act) -> y
    after:   x -> FC(W1 + W2, b1 + b2, act) -> y

Algebra: W1·x + b1 + W2·x + b2 = (W1 + W2)·x + (b1 + b2). The summed constants are computed once
in float32 (the layers' own precision); the sums differ by float rounding only, relative to the
size of the two products (where they nearly cancel, relative to the output it can be more).
A missing bias counts as zero (ONE refuses one-sided biases).

Guards: float32 everywhere, none quantized; both layers without fused activation, with the same
options and constant weights of one shape in the default format; constant biases (or none);
p and q read only by the ADD and no graph outputs; the ADD's activation one FULLY_CONNECTED
applies (NONE, RELU, RELU_N1_TO_1, RELU6).
"""

from __future__ import annotations

import numpy as np

from ..engine.match import collapse, float_const, is_plain_float, no_activation, only_reader
from ..engine.report import PassResult
from ..ir.graph import Graph, Op
from ..ir.ops import FUSED_ACTIVATIONS, RANGE_ACTIVATIONS


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for add in [op for op in graph.ops if op.kind == "ADD"]:
        if len(add.inputs) != 2 or None in add.inputs or add.inputs[0] is add.inputs[1]:
            continue
        left, right = (t.producer for t in add.inputs)
        if not (_plain_fc(graph, left, add) and _plain_fc(graph, right, add)):
            continue
        if left.input(0) is not right.input(0) or left.options.fields() != right.options.fields():
            continue
        if left.input(1).shape != right.input(1).shape or add.fused_activation not in ("NONE", *RANGE_ACTIVATIONS):
            continue
        if not is_plain_float(add.outputs[0]):
            continue
        _fuse(graph, result, left, right, add)
    return result


def _plain_fc(graph: Graph, fc: Op | None, add: Op) -> bool:
    """A float32 FULLY_CONNECTED without activation, constant weights (and bias, if any), whose
    output only `add` reads."""
    if (
        fc is None
        or fc.kind != "FULLY_CONNECTED"
        or not no_activation(fc)
        or only_reader(graph, fc.outputs[0]) is not add
    ):
        return False
    if float_const(fc.input(1)) is None or getattr(fc.options, "weightsFormat", 0) != 0:
        return False
    bias = fc.input(2)
    return (
        is_plain_float(fc.input(0))
        and is_plain_float(fc.outputs[0])
        and (bias is None or float_const(bias) is not None)
    )


def _fuse(graph: Graph, result: PassResult, left: Op, right: Op, add: Op) -> None:
    w = left.input(1).data + right.input(1).data
    biases = [fc.input(2).data.reshape(-1) for fc in (left, right) if fc.input(2) is not None]
    weights = graph.add_const(graph.unique_name(f"{left.input(1).name};{right.input(1).name}"), w.astype(np.float32))
    inputs = [left.input(0), weights, None]
    if biases:
        total = biases[0] if len(biases) == 1 else biases[0] + biases[1]
        inputs[2] = graph.add_const(graph.unique_name(f"{add.outputs[0].name}/bias"), total.astype(np.float32))
    options = left.options.copy(fusedActivationFunction=FUSED_ACTIVATIONS.index(add.fused_activation))
    collapse(graph, result, [left, right, add], inputs, left.opcode, options, layers=2)
