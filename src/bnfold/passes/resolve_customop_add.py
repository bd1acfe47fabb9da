"""resolve_customop_add: TensorFlow's AddV2 left as a CUSTOM op (a Select TF op) becomes the builtin
ADD (ONE's pass of that name).

    before:  a, b -> CUSTOM(AddV2) -> y                      after:  a, b -> ADD -> y
    before:  c -> BROADCAST_TO(shape) -> cb;  a, cb -> CUSTOM(AddV2) -> y
    after:   a, c -> ADD -> y                   (when ADD's own broadcast gives y's shape)

Exact: AddV2 and ADD are both the elementwise sum with numpy broadcasting, computed in the
tensors' type. A BroadcastTo (the builtin or the custom op) feeding one operand is skipped when
broadcasting a and c already gives y's shape; ONE skips it always, which changes the output's
shape when the BroadcastTo adds axes (its own recipe Net_BroadcastTo_AddV2_000: [2, 3] and a
broadcast to [1, 2, 3]). The BroadcastTo then goes when nothing else reads its output.

Guards: two inputs and one output of one type, FLOAT32, INT32 or INT64 (ADD's unquantized types),
none quantized; readable custom options.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import only_reader
from ..engine.report import PassResult
from ..ir.custom import custom_code, custom_options
from ..ir.graph import Graph, Op, Options, Tensor

TYPES = frozenset({"FLOAT32", "INT32", "INT64"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if custom_code(op) == "AddV2"]:
        if len(op.inputs) != 2 or len(op.outputs) != 1 or None in op.inputs or custom_options(op) is None:
            continue
        y = op.outputs[0]
        if any(t.dtype != y.dtype or t.dtype not in TYPES or t.is_quantized for t in (op.operand(0), op.operand(1), y)):
            continue
        inputs, dropped = _skipping_broadcast(graph, op)
        unsupported = targets.refusal(graph, "ADD")
        if unsupported:
            result.not_for_target(op, unsupported)
            continue
        result.fold(op, [op, *dropped], into=[], resolved="AddV2")
        for removed in (op, *dropped):
            graph.remove_op(removed)
        add = graph.add_op("ADD", inputs, [y], Options("AddOptions", fusedActivationFunction=0), after=op)
        result.made(add)
    return result


def _skipping_broadcast(graph: Graph, op: Op) -> tuple[list[Tensor], list[Op]]:
    """The ADD's operands (a BroadcastTo's input instead of its output where ADD broadcasts to the
    same shape), and the BroadcastTo ops nothing else reads then."""
    operands = [op.operand(0), op.operand(1)]  # run: two, both present
    inputs, dropped = list(operands), []
    for i, t in enumerate(operands):
        bc = t.producer
        if bc is None or not (bc.kind == "BROADCAST_TO" or custom_code(bc) == "BroadcastTo") or bc.input(0) is None:
            continue
        source, other = bc.operand(0), operands[1 - i]
        if source.dtype != t.dtype or _broadcast(source.shape, other.shape) != op.outputs[0].shape:
            continue
        inputs[i] = source
        if only_reader(graph, t) is op and len(bc.outputs) == 1:
            dropped.append(bc)
        break  # one BroadcastTo at most, as ONE resolves it
    return inputs, dropped


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(a, b))
    except ValueError:
        return None
