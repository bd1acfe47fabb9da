"""remove_gather_guard: GATHER(params, FLOOR_MOD(ADD(i, N), N)) along axis 0 reads i directly
(ONE's pass of that name: PyTorch exports wrap negative indices this way, ((i + N) mod N)).

    before:  i -> ADD(i, N) -> FLOOR_MOD(., N) -> GATHER(params, ., axis 0) -> y
    after:   i -> GATHER(params, i, axis 0) -> y          (the guard stays for other readers)

Not exact in general, hence opt-in and marked lossy: (i + N) mod N = i only for 0 <= i < N. A
negative index, which the guard wraps to i + N, reaches GATHER unwrapped (LiteRT refuses it). ONE
says the same ("user must guarantee that indices are all non-negative"); bnfold cannot prove it
from the graph, so the value check measures the change as for every lossy pass (with indices
drawn in range, values/index_inputs.py, it measures none).
Guards (ONE's): GATHER on axis 0 of params with a static shape of rank >= 1; its indices made by
FLOOR_MOD whose first operand an ADD with no fused activation makes; the ADD's and the FLOOR_MOD's
constants are each one INT32 or INT64 element equal to params' first dimension N.
"""

from __future__ import annotations

from ..engine.match import SHAPES_DISAGREE, shapes_hold
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for gather in [op for op in graph.ops if op.kind == "GATHER"]:
        guarded = _guarded_indices(gather)
        if guarded is None:
            continue
        if isinstance(guarded, str):
            result.refuse_value(gather, guarded)
            continue
        add, floor_mod = guarded
        if not shapes_hold(gather) or add.operand(0).shape != floor_mod.outputs[0].shape:
            result.refuse_value(gather, SHAPES_DISAGREE)
            continue
        # context: the per-rewrite check runs what makes i, so it sees the indices the model makes
        # (>= 0 or not), not arbitrary integers
        i = add.operand(0)
        removed = [add.outputs[0].name, floor_mod.outputs[0].name]
        result.fold(gather, [], removed_guard=removed, context=[i.name] if i.producer is not None else [])
        graph.set_input(gather, 1, add.operand(0))
    return result


def _guarded_indices(gather: Op) -> tuple[Op, Op] | str | None:
    """(ADD, FLOOR_MOD) of GATHER(p, FLOOR_MOD(ADD(i, N), N)) on axis 0 with N = p's first
    dimension; a reason where that guard is there but a condition fails; None where it is not."""
    params, indices = gather.input(0), gather.input(1)
    if params is None or indices is None:
        return None
    floor_mod = indices.producer
    if floor_mod is None or floor_mod.kind != "FLOOR_MOD" or len(floor_mod.inputs) != 2 or None in floor_mod.inputs:
        return None
    add = floor_mod.operand(0).producer
    if add is None or add.kind != "ADD" or len(add.inputs) != 2 or None in add.inputs:
        return None
    if getattr(gather.options, "axis", 0) != 0:
        return "the guarded GATHER is not on axis 0 (ONE's pattern)"
    if not params.shape or -1 in params.signature:
        return f"{params.name!r} has no static first dimension to guard"
    if add.fused_activation != "NONE":
        return f"the guard's ADD has a fused {add.fused_activation}"
    n, added, modulus = params.shape[0], _single_value(add.operand(1)), _single_value(floor_mod.operand(1))
    if added != n or modulus != n:
        return f"the guard adds {added} and takes the remainder by {modulus}, not {n} (the gathered axis)"
    return add, floor_mod


def _single_value(t: Tensor) -> int | None:
    """The value of a one-element INT32 / INT64 constant of rank 0 or [1] (ONE's form)."""
    if not t.is_const or t.dtype not in ("INT32", "INT64") or t.shape not in ((), (1,)):
        return None
    return int(t.const_data.reshape(-1)[0])
