"""dynamic_batch_to_single_batch: a model input whose first (batch) dimension is dynamic becomes a
batch of 1, and every shape that was dynamic only through it becomes static (circle2circle's
option of that name, which runs it before any other pass: most passes want static shapes).

    before:  x signature [-1, 32, 32, 3] -> CONV_2D -> y signature [-1, 30, 30, 8]
    after:   x signature [1, 32, 32, 3]  -> CONV_2D -> y signature [1, 30, 30, 8]

Exact for what the model still accepts: no operator or value changes, only declared shapes; a
batch of 1 computes what it computed before. The model's interface changes (it accepts no other
batch size), as in ONE. The stored shapes of a converted model already hold 1 for a dynamic
dimension; an op's outputs become static when all its inputs are and its kind's shape rule
(ir/shapes.py) computes exactly their stored shapes from them; where no rule decides, or the rule
disagrees, the signature stays dynamic and the report says where.
Guards (ONE's): graph 0's inputs only, rank 4 only (NHWC / NCHW: ONE stops with an error for
another rank; bnfold leaves that input dynamic and says why), only the first dimension.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import OPS
from ..ir.shapes import RULES, ShapeProblem


def run(graph: Graph) -> PassResult:
    result = PassResult()
    model = graph.model
    if model is None or graph is not model.graphs[0]:
        return result
    fixed = []
    for x in graph.inputs:
        if not x.shape or x.signature[0] != -1:
            continue
        reason = _input_refusal(x)
        readers = graph.consumers(x)
        if reason is not None:
            if readers:
                result.refuse_value(readers[0], reason)
            continue
        x.shape_signature = _static_or_none((1, *x.signature[1:]))
        fixed.append(x.name)
    made_static, left = _propagate(graph)
    if fixed or made_static:
        anchor = next((op for op in graph.ops if op.outputs), None)
        if anchor is not None:  # context: the per-rewrite check runs an op whose shapes it declared
            names = [anchor.outputs[0].name]
            result.fold(anchor, [], into=[], inputs=fixed, static=made_static, context=names)
    for op, why in left:  # said every round, so the last round's report has them
        result.refuse_value(op, why)
    return result


def _input_refusal(x: Tensor) -> str | None:
    if len(x.shape) != 4:
        return f"input {x.name!r} {list(x.signature)} is not of rank 4 (ONE makes only NHWC / NCHW inputs single-batch)"
    if x.shape[0] != 1:
        return f"input {x.name!r} stores batch {x.shape[0]}, not 1"
    return None


def _propagate(graph: Graph) -> tuple[int, list[tuple[Op, str]]]:
    """Make static every op output whose inputs are static and whose shape rule computes its stored
    shape; (how many tensors became static, the ops left dynamic and why)."""
    made, left = 0, []
    for op in graph.ops:
        dynamic = [t for t in op.outputs if -1 in t.signature]
        if not dynamic or any(t is not None and -1 in t.signature for t in op.inputs):
            continue
        why = _rule_refusal(op)
        if why is not None:
            left.append((op, why))
            continue
        for t in dynamic:
            t.shape_signature = None
            made += 1
    return made, left


def _rule_refusal(op: Op) -> str | None:
    rule = OPS[op.kind].shape if op.kind in OPS else None
    compute = RULES.get(rule) if rule is not None else None
    if compute is None:
        return f"no shape rule for {op.kind}: its outputs stay dynamic"
    try:
        expected = compute(op)
    except ShapeProblem as e:
        return f"its shape rule fails ({e}): its outputs stay dynamic"
    if expected is None or [tuple(s) for s in expected] != [t.shape for t in op.outputs]:
        return f"its shape rule does not give {op.kind}'s stored shapes: its outputs stay dynamic"
    return None


def _static_or_none(signature: tuple[int, ...]) -> tuple[int, ...] | None:
    return None if -1 not in signature else signature
