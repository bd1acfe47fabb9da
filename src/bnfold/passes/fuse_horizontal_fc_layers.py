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
applies (NONE, RELU, RELU_N1_TO_1, RELU6); a target that runs the layer made with it (onert
0.1.0 runs none reading a rank-1 input: ir/runtimes.py's form input_rank_1).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import collapse, float_const, is_plain_float, no_activation, only_reader, read_elsewhere
from ..engine.report import PassResult
from ..ir.graph import Graph, Op
from ..ir.ops import FUSED_ACTIVATIONS, RANGE_ACTIVATIONS, op_forms


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for add in [op for op in graph.ops if op.kind == "ADD"]:
        if len(add.inputs) != 2 or None in add.inputs or add.inputs[0] is add.inputs[1]:
            continue
        left, right = add.operand(0).producer, add.operand(1).producer
        if (
            left is None
            or right is None
            or left.kind != "FULLY_CONNECTED"
            or right.kind != "FULLY_CONNECTED"
            or left.input(0) is not right.input(0)
        ):
            continue  # no candidate: not two layers of one input
        why = _not_plain_fc(graph, left, add) or _not_plain_fc(graph, right, add) or _refusal(left, right, add)
        if why:
            result.refuse_value(add, why)
            continue
        unsupported = _target_refusal(graph, left, add)
        if unsupported:
            result.not_for_target(add, unsupported)
            continue
        _fuse(graph, result, left, right, add)
    return result


def _refusal(left: Op, right: Op, add: Op) -> str | None:
    if left.options_with().fields() != right.options_with().fields():
        return "the two layers' options differ"
    if left.operand(1).shape != right.operand(1).shape:
        return "the two layers' weights differ in shape"
    if add.fused_activation not in ("NONE", *RANGE_ACTIVATIONS):
        return f"the ADD's fused {add.fused_activation} is no activation a FULLY_CONNECTED computes"
    if not is_plain_float(add.outputs[0]):
        return f"{add.outputs[0].name!r} is not float32 (or is quantized)"
    return None


def _target_refusal(graph: Graph, left: Op, add: Op) -> str | None:
    """Why the target cannot run the layer made: the left one (its input and options, so its form:
    ir/ops.py op_forms; onert 0.1.0 refuses one reading a rank-1 input) with the ADD's activation."""
    forms = op_forms(left)
    return targets.refusal(graph, "FULLY_CONNECTED", add.fused_activation, form=forms[0] if forms else None)


def _not_plain_fc(graph: Graph, fc: Op, add: Op) -> str | None:
    """None for a float32 FULLY_CONNECTED without activation, constant weights (and bias, if any),
    whose output only `add` reads; else why it is not one."""
    name = fc.outputs[0].name
    if not no_activation(fc):
        return f"FULLY_CONNECTED {name!r} has a fused {fc.fused_activation}"
    if only_reader(graph, fc.outputs[0]) is not add:
        return read_elsewhere(graph, fc.outputs[0], "ADD") or f"{name!r} is read twice"
    if float_const(fc.input(1)) is None or getattr(fc.options, "weightsFormat", 0) != 0:
        return f"the weights of FULLY_CONNECTED {name!r} are no float32 constant in the default format"
    bias = fc.input(2)
    if not (is_plain_float(fc.input(0)) and is_plain_float(fc.outputs[0])) or not (
        bias is None or float_const(bias) is not None
    ):
        return f"FULLY_CONNECTED {name!r} is not float32 throughout (or its bias is no constant)"
    return None


def _fuse(graph: Graph, result: PassResult, left: Op, right: Op, add: Op) -> None:
    w_left, w_right = left.operand(1), right.operand(1)  # _plain_fc: constant weights, constant bias if any
    w = w_left.const_data + w_right.const_data
    biases = [b.const_data.reshape(-1) for b in (left.input(2), right.input(2)) if b is not None]
    weights = graph.add_const(graph.unique_name(f"{w_left.name};{w_right.name}"), w.astype(np.float32))
    inputs = [left.input(0), weights, None]
    if biases:
        total = biases[0] if len(biases) == 1 else biases[0] + biases[1]
        inputs[2] = graph.add_const(graph.unique_name(f"{add.outputs[0].name}/bias"), total.astype(np.float32))
    options = left.options_with(fusedActivationFunction=FUSED_ACTIVATIONS.index(add.fused_activation))
    collapse(graph, result, [left, right, add], inputs, left.opcode, options, layers=2)
