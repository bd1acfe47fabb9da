"""fuse_activation_function: a standalone activation becomes its producer's fused activation.

    before:  P(act=a) -> x -> RELU -> y          after:  P(act=combine(a, RELU)) -> y

Exact: the activation is applied to the same values either way. Combination table (the one ONE
uses): RELU after NONE/RELU -> RELU, after RELU6 -> RELU6; RELU6 after NONE/RELU/RELU6 -> RELU6;
RELU_N1_TO_1 after NONE/RELU_N1_TO_1 -> RELU_N1_TO_1; anything else is left alone.

TANH is not fused: LiteRT's kernels compute fused activations through an activation *range*
(ir/ops.py RANGE_ACTIVATIONS says which, and why).

Guards: the target runs the producer with that fused activation (engine/targets.py); the
producer's output has no other reader and is not a graph output; the producer is an operator whose
fused activation is applied to its output (`fused_output` in ir/ops.py: not LSTM/RNN cell
activations, and not CONCATENATION or TRANSPOSE_CONV, which runtimes run without one); float
tensors only, since a quantized activation may carry its own output scale; not when LiteRT runs P
in place (ADD, SUB, MUL, DIV over a single-reader input) and y has a RESHAPE-like reader besides
another: the RELU gave y a buffer of its own, P's would be shared, and an op after the RESHAPE
could run in place over it (engine/reshapes.py: `in_place_hazard`).
"""

from __future__ import annotations

from ..engine import targets
from ..engine.report import PassResult, Refusal
from ..engine.reshapes import in_place_hazard, reading_slots
from ..ir.graph import Graph
from ..ir.ops import RANGE_ACTIVATIONS, info

COMBINE = {
    ("NONE", "RELU"): "RELU",
    ("RELU", "RELU"): "RELU",
    ("RELU6", "RELU"): "RELU6",
    ("NONE", "RELU6"): "RELU6",
    ("RELU", "RELU6"): "RELU6",
    ("RELU6", "RELU6"): "RELU6",
    ("NONE", "RELU_N1_TO_1"): "RELU_N1_TO_1",
    ("RELU_N1_TO_1", "RELU_N1_TO_1"): "RELU_N1_TO_1",
}


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for act in [op for op in graph.ops if op.kind in RANGE_ACTIVATIONS]:
        x = act.input(0)
        producer = x.producer if x is not None else None
        if producer is None or not info(producer.kind).fused_output:
            continue  # no candidate: its producer's kind has no fused activation
        refusal = _refusal(graph, producer, act)
        if refusal:
            result.refuse_value(act, str(refusal))  # a RELU is no batch-norm candidate: not a skip
            continue
        fused = COMBINE[(producer.fused_activation, act.kind)]
        unsupported = targets.refusal(graph, producer.kind, fused)
        if unsupported:
            result.not_for_target(act, unsupported)
            continue
        result.fold(producer, [act], activation=act.kind, before=producer.fused_activation, after=fused)
        producer.fused_activation = fused
        graph.set_output(producer, 0, act.outputs[0])
        graph.remove_op(act)
    return result


def _refusal(graph: Graph, producer, act) -> Refusal | None:
    x = act.inputs[0]
    if not info(producer.kind).fused_output:
        return Refusal(f"producer {producer.kind} has no fused activation that applies to its output")
    if not producer.has_fused_activation_slot:
        return Refusal(f"producer {producer.kind} has no options table to hold a fused activation")
    if not graph.has_single_use(x, act):
        return Refusal("the producer's output has other readers or is a graph output")
    if x.dtype != "FLOAT32" or act.outputs[0].dtype != "FLOAT32" or x.is_quantized:
        return Refusal(f"not float32 ({x.dtype})")
    if in_place_hazard(graph, producer, [u.kind for u in reading_slots(graph, act.outputs[0])]):
        return Refusal(f"LiteRT would run the {producer.kind} in place over a buffer another reader needs")
    if (producer.fused_activation, act.kind) not in COMBINE:
        return Refusal(f"{act.kind} after a fused {producer.fused_activation} has no single equivalent")
    return None
