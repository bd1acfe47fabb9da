"""common_subexpression_elimination: two ops of one kind, options and version that read the same
inputs compute the same outputs; the later one goes and its outputs' readers read the earlier
one's (ONE's pass of that name).

    before:  x -> RELU -> a -> ...        x -> RELU -> b -> ...
    after:   x -> RELU -> a -> ... (b's readers read a)

Exact: operators are functions of their inputs and options (those with state or side effects,
ops with intermediates, custom ops and kinds bnfold has no facts about are left alone), and the
earlier op's outputs exist before the later op's readers run (they come after the later op). "The
same input" is the same tensor, or two constants of the same type, shape, quantization and bytes
(above 4 kB: the same buffer). The outputs must agree in type, shape and quantization too.

Guards: LiteRT must not then run an op in place over a buffer another reader still needs
(engine/reshapes.py: the kept op's outputs gain readers, the later op's inputs lose one); the
target must keep a graph output the kept op writes once the later op's readers read it (onert may
not: engine/targets.py, unkept_output); no
output of the later op is seen from outside (a model output keeps its own producer);
the later op's outputs are replaced, never the earlier's. Stricter than ONE here, deliberately: in
ONE's CSE_Transpose_000 and CSE_Quantize_000 both twins' outputs are model outputs and ONE keeps
one op (its rule: 1), pointing both outputs at it; that would drop a named model output tensor
(a caller reading `ofm2` by name or signature finds it gone), so both stay (recipes/CSE_*_000:
2). Read by other ops instead, the twin goes (recipes/CSE_Transpose_002: 1). Cost: one dictionary lookup per op; a
constant's bytes are hashed once.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..engine import targets
from ..engine.report import PassResult
from ..engine.reshapes import HAZARD, joined_hazard, references, release_hazard
from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import OPS, SIDE_EFFECT_KINDS

HASHED_BYTES = 4096  # a larger constant is the same input only as the same buffer (no pass over weights)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    seen: dict[tuple, Op] = {}
    constants: dict[int, tuple] = {}
    for op in list(graph.ops):
        if op.kind not in OPS or op.kind in SIDE_EFFECT_KINDS or op.intermediates or not op.outputs:
            continue
        key = (
            op.kind,
            op.opcode.version,
            _frozen(op.options.fields() if op.options is not None else None),
            tuple(_input_key(t, constants) for t in op.inputs),
            tuple(_tensor_type(t) for t in op.outputs),
        )
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        seen_outside = next((t for t in op.outputs if graph.is_observed(t)), None)
        if seen_outside is not None:
            result.refuse_value(op, f"{seen_outside.name!r} is a model output: it keeps its own op")
            continue
        if _in_place_hazard(graph, first, op):
            result.refuse_value(op, HAZARD)
            continue
        unkept = _unkept_output(graph, first, op)
        if unkept:
            result.not_for_target(op, unkept)
            continue
        # context: the per-rewrite check runs the kept twin too (values/local.py)
        result.fold(first, [op], outputs=[t.name for t in op.outputs], context=[t.name for t in first.outputs])
        graph.remove_op(op)
        for mine, theirs in zip(op.outputs, first.outputs):
            graph.replace_uses(mine, theirs)
    return result


def _unkept_output(graph: Graph, first: Op, op: Op) -> str | None:
    """Why the target may not keep first's outputs that are graph outputs once op's readers read
    them (engine/targets.py: onert may overwrite a graph output another op reads), or None."""
    added = [(theirs, r.kind) for mine, theirs in zip(op.outputs, first.outputs) for r in graph.consumers(mine)]
    return targets.unkept_output(graph, added)


def _in_place_hazard(graph: Graph, first: Op, op: Op) -> bool:
    """Whether LiteRT would run an op in place over a buffer still read once `op` goes: first's
    outputs gain its readers, its inputs lose it (engine/reshapes.py)."""
    joined = any(
        joined_hazard(graph, theirs, mine, added=references(graph, mine))
        for mine, theirs in zip(op.outputs, first.outputs)
    )
    return joined or any(release_hazard(graph, t, op) for t in dict.fromkeys(op.inputs) if t is not None)


def _input_key(t: Tensor | None, constants: dict[int, tuple]) -> object:
    if t is None:
        return None
    if not t.is_const or getattr(t.record, "sparsity", None) is not None:
        return id(t)
    key = constants.get(id(t))
    if key is None:
        buffer = t.buffer
        assert buffer is not None  # a constant's (is_const)
        same: object
        if buffer.nbytes > HASHED_BYTES:
            same = id(buffer)
        else:
            same = hashlib.sha256(np.ascontiguousarray(buffer.data).data).hexdigest()
        key = constants[id(t)] = ("const", *_tensor_type(t), same)
    return key


def _tensor_type(t: Tensor) -> tuple:
    return (t.dtype, t.signature, _frozen(_quantization(t)))


def _quantization(t: Tensor) -> object:
    q = t.quantization
    if not t.is_quantized:
        return None
    return {f: getattr(q, f, None) for f in ("scale", "zeroPoint", "quantizedDimension", "min", "max")}


def _frozen(value: object) -> object:
    """A hashable stand-in that is equal exactly when the values are."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (int, float, str, bool, bytes)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    fields = getattr(value, "__dict__", None)
    return ("object", type(value).__name__, _frozen(fields)) if fields is not None else repr(value)
