"""Layout propagation: TRANSPOSEs moved through the operators after them until they cancel or
merge with another, decided by counting transposes, not by pattern. The engine of the transpose
passes (remove_redundant_transpose runs all of it; ONE's forward_transpose_op and
fuse_transpose_with_mean run it restricted to their operator kinds) and of ONE's layout options
built on it.

    before:  x -> TRANSPOSE(p) -> t -> RELU -> ADD(c) -> MEAN(axes, keep) -> TRANSPOSE(q) -> y
    after:   x -> RELU -> ADD(c') -> MEAN(axes') -> y           q = argsort(p): they cancel

Algebra. t = transpose(x, p) *carries* p: every op reading it computes, on x instead, its own
result carrying a permutation again (permute.py: elementwise ops with constants moved, reductions,
concatenation, split, slice, pad along remapped axes, ...), because a transpose only moves
elements. Where a carried tensor meets a TRANSPOSE(q) the two compose: transpose(x, p[q]) — the
identity (they cancel) or one merged transpose.

The region. From one TRANSPOSE (the seed) a work-list follows the carried tensors to every reader.
A reader that can take the other layout joins the region (its other data operands must carry the
same permutation: a TRANSPOSE by it joins as another seed, anything else gets a new transpose into
the layout); a reader that cannot, and a graph output, *stops* it: the tensor is transposed back
for them (or its seed stays). A RESHAPE flattening a carried tensor into FULLY_CONNECTED layers
absorbs it, and so does a FULLY_CONNECTED reading it directly (without keep_num_dims it flattens
its input itself): their weight columns are permuted instead of the data (W'[:, g] = W, g the flattened
index map). The region is rewritten only when that removes more transposes than it adds:

    removed = seeds with no stop + TRANSPOSE readers that cancel
    added   = stopped tensors other than seeds' outputs + other operands transposed into the layout

An operand that would need a transpose into the layout may instead be reached backward (region.py, `_absorb`):
the ops making it cross too, back to TRANSPOSEs that then go (the same permutation) or make the
moved tensor directly with a composed permutation; what those ops also make is carried on like any
carried tensor. ShuffleNet's unit: the CONCATENATION's pass-through half comes from a SPLIT of the
shuffle, so the whole unit turns NHWC and only the shuffle's own TRANSPOSE stays:

    before:  cat -> RESHAPE -> TRANSPOSE(0,2,1,3,4) -> RESHAPE -> SPLIT -> a ------------------> CONCAT
                                                                     `-> b -> T -> conv -> T -^
    after:   cat' -> RESHAPE' -> TRANSPOSE(0,3,4,2,1) -> RESHAPE' -> SPLIT' -> a' -> CONCAT'
                                                                          `-> b' -> conv -^

A TRANSPOSE that cannot move forward is pulled back before the op making its input when the
transposes that puts on the op's operands merge or cancel with the ones making them (_pull: a
channel shuffle's transpose after the reshape merging the channels back).

Each rewrite lowers the number of transposes, so repeated rounds end. Three regions are measured per
seed — through operators whose other operands need a new transpose, stopping there, and reaching
those operands backward first — and the best one is taken. Cost is linear: a seed's region is
visited once per run, and seeds a rejected region reached are not tried again in that run. A region
is also rejected when removing its seeds would let LiteRT run an op in place over a buffer another
reader still needs (reshapes.py: a TRANSPOSE has a buffer of its own, the tensor before it may not).

Exact for every type: data is only moved. Constants are copied, never edited (another reader keeps
the old one); a tensor quantized per channel keeps its quantized_dimension on the moved axis; a
constant quantized per channel is not moved (refused); a TRANSPOSE (or identity RESHAPE) whose
output has another scale or zero point than its input changes the values too, so it is no seed and
is never dropped (layout.transpose_perm). The model's interface never changes: a carried graph
output is transposed back under its own name.
"""

from __future__ import annotations

import copy

import numpy as np

from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import info, reduction_form
from . import targets
from .layout import transpose_perm
from .permute import (
    Crossing,
    Perm,
    compose,
    crosses,
    inverse,
    is_identity,
    keeps_data_order,
    moved_shape,
    reshape_target,
)
from .quantization import scale_count
from .region import TRANSPOSE, Region, crossing_giving, feature_order, grow, quantization_problem
from .report import PassResult, describe
from .reshapes import (
    HAZARD,
    aliasing_hazard,
    chain_hazard,
    in_place_hazard,
    reading_slots,
    references,
    same_quantization,
)


def propagate(graph: Graph, scope: frozenset[str] | None = None) -> PassResult:
    """Move every TRANSPOSE of `graph` as far as pays (see the module docstring); `scope` limits
    the layout behaviours crossed (ir/ops.py's `layout` column; None: all, and the RESHAPE -> FC
    flatten). Each TRANSPOSE left gets one skip entry saying why it stays."""
    result = PassResult()
    reasons: dict[Op, str] = {}  # seeds of rejected regions -> why
    for seed in [op for op in graph.ops if op.kind == TRANSPOSE]:
        if graph.contains(seed) and seed not in reasons:
            _move(graph, seed, scope, result, reasons)
    for op in list(graph.ops):  # what is left, and the transposes this run made or merged
        if op.kind == TRANSPOSE and graph.contains(op) and op not in reasons:
            _move(graph, op, scope, result, reasons)
    for op in graph.ops:
        if op.kind == TRANSPOSE:
            result.skip(op, reasons.get(op, "it was moved in this round"))
    return result


def remove_identities(graph: Graph) -> PassResult:
    """remove_unnecessary_transpose: every TRANSPOSE with the identity permutation goes."""
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == TRANSPOSE and is_identity(transpose_perm(op))]:
        why = _remove_identity(graph, op, result)
        if why:
            result.skip(op, why)
    return result


def _move(graph: Graph, seed: Op, scope, result: PassResult, reasons: dict[Op, str]) -> None:
    """Rewrite the better region of `seed` if it pays, else note why for every seed it reached."""
    p = transpose_perm(seed)
    if p is None:
        x = seed.input(0)
        reasons[seed] = (
            "its output has another scale or zero point than its input: it changes the values too"
            if x is not None and not same_quantization(x, seed.outputs[0])
            else "its permutation is not a constant permutation of the input's axes"
        )
        return
    if is_identity(p):
        why = _remove_identity(graph, seed, result)
        if why:
            reasons[seed] = why
        return
    if scope is None and _into_reshape(graph, seed, p, result):
        return
    narrow, wide, back = (
        grow(graph, seed, scope, sides, absorb)
        for sides, absorb in ((False, False), (True, False), (True, scope is None))
    )
    paying = [r for r in (narrow, wide, back) if r.gain(graph) > 0]
    refused = {id(r): _target_refusal(graph, r) for r in paying}
    safe = [r for r in paying if refused[id(r)] is None and not _aliasing_hazard(graph, r)]
    best = max(safe or [narrow, wide, back], key=lambda r: r.gain(graph))
    if paying and not safe:
        top = max(paying, key=lambda r: r.gain(graph))
        reasons.update(dict.fromkeys(top.seeds, refused[id(top)] or HAZARD))
    elif best.gain(graph) > 0:
        result.fold(
            seed,
            [*best.seeds, *(u for u in best.merges if best.cancels(graph, u))],
            into=[
                *best.crossed,
                *(u for u in best.merges if not best.cancels(graph, u)),
                *(fc for fcs in best.flattens.values() for fc in fcs),
                *best.adjoints,
            ],
            crossed=[describe(op) for op in best.crossed],
            removed_transposes=best.removed(graph),
            added_transposes=best.added(),
        )
        _rewrite(graph, best)
    elif scope is None and _pull(graph, seed, p, result):
        return
    else:
        telling = wide if len(wide.crossed) > len(narrow.crossed) else narrow  # the cost of going further
        why = telling.why_not(graph, seed)
        reasons.update(dict.fromkeys(best.seeds, why))


def _target_refusal(graph: Graph, region: Region) -> str | None:
    """Why the target cannot run a TRANSPOSE the rewrite of `region` would make (its rank or type:
    onert has no TRANSPOSE of INT64) or a reduction it moves to other axes (onert prepares a rank-4
    reduction without keep_dims over some axes only), or None."""
    made = (targets.refusal(graph, "TRANSPOSE", rank=len(t.shape), dtype=t.dtype) for t in region.transposed())
    moved = (_moved_reduction(graph, op, crossing) for op, crossing in region.crossed.items())
    return next(filter(None, made), None) or next(filter(None, moved), None)


def _moved_reduction(graph: Graph, op: Op, crossing: Crossing) -> str | None:
    """Why the target cannot run the reduction `op` over the axes its crossing gives it, or None."""
    x, axes = op.input(0), crossing.consts.get(1)
    if info(op.kind).shape != "reduce" or x is None or axes is None:
        return None
    form = reduction_form(len(x.shape), axes.reshape(-1), bool(getattr(op.options, "keepDims", False)))
    return None if form is None else targets.refusal(graph, op.kind, form=form)


def _aliasing_hazard(graph: Graph, region: Region) -> bool:
    """A seed goes and its readers read its input x instead: when LiteRT runs x in place over an
    upstream buffer, x's new readers could let an op overwrite what another reader of that buffer
    needs (reshapes.py; the TRANSPOSE had a buffer of its own)."""
    seeds = any(
        chain_hazard(graph, _present(seed, 0), added=references(graph, seed.outputs[0]) - 1)
        for seed in region.seeds
        if seed.outputs[0] not in region.stops
    )
    outputs = any(_output_hazard(graph, region, u, out) for u in region.crossed for out in u.outputs[:1])
    return seeds or outputs or any(_merge_hazard(graph, region, u) for u in region.merges)


def _output_hazard(graph: Graph, region: Region, u: Op, out: Tensor) -> bool:
    """A crossed op writing a graph output writes the moved tensor instead (a TRANSPOSE back makes
    the output): LiteRT never shares a graph output's buffer, but may share the moved tensor's."""
    if out not in graph.outputs or out not in region.stops:
        return False
    readers = ["TRANSPOSE", *(r.kind for r in reading_slots(graph, out))]
    return in_place_hazard(graph, u, readers, internal=True)


def _merge_hazard(graph: Graph, region: Region, u: Op) -> bool:
    """A cancelling TRANSPOSE reader goes and its readers read what the crossed op makes: when
    LiteRT runs that op in place, the same hazard (reshapes.py: `in_place_hazard`)."""
    t, y = _present(u, 0), u.outputs[0]
    maker = t.producer
    if maker not in region.crossed or graph.is_observed(y) or not region.cancels(graph, u):
        return False
    readers = [r.kind for r in reading_slots(graph, t) if r is not u] + [r.kind for r in reading_slots(graph, y)]
    return in_place_hazard(graph, maker, readers)


def _pull(graph: Graph, seed: Op, q: Perm, result: PassResult) -> bool:
    """Move `seed` back before the op making its input, when that op can take the other layout and
    the transposes this puts on its data operands merge or cancel with the ones making them (fewer
    transposes, counted as in the forward move; the next round merges them):

        before:  a -> TRANSPOSE(r) -> u -> x -> TRANSPOSE(q) -> y
        after:   a -> TRANSPOSE(r) -> TRANSPOSE(argsort(s)) -> u' -> y     u' crosses s, giving y

    s is found by trying the permutations of u's data rank (at most 6 axes): the one whose crossing
    leaves u's output carrying argsort(q), i.e. u'(transposed inputs) = transpose(x, q). Not when
    LiteRT would run u in place and y has a RESHAPE-like reader besides another (reshapes.py)."""
    x = _present(seed, 0)
    u = x.producer
    if u is None or len(u.outputs) != 1 or not graph.has_single_use(x, seed) or not crosses(u.kind):
        return False
    found = crossing_giving(u, inverse(q))
    if found is None or quantization_problem(u, found[1]):
        return False
    s, crossing = found
    data = list(dict.fromkeys(_present(u, i) for i in crossing.data))
    if sum(_pull_cost(graph, d, u, s) for d in data) >= 1:
        return False
    if in_place_hazard(graph, u, [r.kind for r in reading_slots(graph, seed.outputs[0])]):
        return False  # u would write y, read by a RESHAPE-like op and another, over a shared buffer
    if any(targets.refusal(graph, "TRANSPOSE", rank=len(d.shape), dtype=d.dtype) for d in data):
        return False  # a TRANSPOSE the target cannot run (onert: of INT64)
    result.fold(seed, [seed], into=[u], pulled_before=describe(u))
    opcode = seed.opcode
    new = {
        d: _transpose(
            graph,
            opcode,
            d,
            inverse(s),
            f"{d.name}/permuted",
            moved_shape(d.shape, s),
            after=d.producer,
            before=None if d.producer is not None else u,
        )
        for d in data
    }
    for i in crossing.data:
        graph.set_input(u, i, new[_present(u, i)])
    _apply_constants(graph, u, crossing)
    y = seed.outputs[0]
    graph.remove_op(seed)
    graph.set_output(u, 0, y)
    return True


def _pull_cost(graph: Graph, d: Tensor, u: Op, s: Perm) -> int:
    """Transposes added by putting TRANSPOSE(argsort(s)) on operand `d` of `u`: none when it merges
    with the TRANSPOSE making `d` for `u` alone, one fewer when the two cancel."""
    r = transpose_perm(d.producer) if d.producer is not None and d.producer.kind == TRANSPOSE else None
    if r is None or not graph.has_single_use(d, u):
        return 1
    return -1 if is_identity(compose(r, inverse(s))) else 0


def _remove_identity(graph: Graph, op: Op, result: PassResult) -> str | None:
    """An identity permutation only copies. Its output keeps its name when it is a graph output
    (the producer of its input writes it directly, and x's other readers read it: the same
    values). None when it went, else why it stays: x too is seen from outside or is no op's
    output, or y's readers reading x would let LiteRT run an op in place over a buffer another
    reader needs (reshapes.py: the TRANSPOSE had a buffer of its own)."""
    x, y = _present(op, 0), op.outputs[0]
    producer = x.producer
    if not graph.is_observed(y):
        if chain_hazard(graph, x, added=references(graph, y) - 1):
            return HAZARD
        result.fold(op, [op], identity=True)
        graph.replace_uses(y, x)
        graph.remove_op(op)
        return None
    if producer is not None and not graph.is_observed(x):
        unkept = targets.unkept_output(graph, [(y, r.kind) for r in graph.consumers(x) if r is not op])
        if unkept:
            return unkept  # x's other readers would read the graph output y
        result.fold(op, [op], into=[producer], identity=True)
        graph.remove_op(op)
        graph.replace_uses(x, y)
        graph.set_output(producer, producer.outputs.index(x), y)
        return None
    return "an identity permutation between a graph input and a graph output"


def _into_reshape(graph: Graph, seed: Op, p: Perm, result: PassResult) -> bool:
    """A TRANSPOSE moving only unit axes is a reshape: next to a RESHAPE (making its input alone,
    or the only kind of op reading it) the two are one RESHAPE — unless LiteRT would then run an
    op in place over a buffer another reader needs (reshapes.py: the TRANSPOSE had its own)."""
    x, y = _present(seed, 0), seed.outputs[0]
    if not keeps_data_order(x.shape, p) or any(d < 0 for d in x.signature + y.signature):
        return False
    producer, readers = x.producer, graph.consumers(y)
    if (
        producer is not None
        and producer.kind == "RESHAPE"
        and graph.has_single_use(x, seed)
        and all(d >= 0 for d in _present(producer, 0).signature)
        and not aliasing_hazard(graph, x, y, added=0)
    ):
        result.fold(seed, [seed], into=[producer], merged_into=describe(producer))
        graph.remove_op(seed)
        graph.set_output(producer, 0, y)
        _set_reshape(graph, producer, y.shape)
        return True
    if (
        readers
        and not graph.is_observed(y)
        and all(u.kind == "RESHAPE" and u.inputs[0] is y for u in readers)
        and not any(aliasing_hazard(graph, x, u.outputs[0], added=len(readers) - 1) for u in readers)
    ):
        result.fold(seed, [seed], into=readers, merged_into=[describe(u) for u in readers])
        for u in readers:
            graph.set_input(u, 0, x)
            _drop_if_identity(graph, u)
        graph.remove_op(seed)
        return True
    return False


def _set_reshape(graph: Graph, op: Op, shape) -> None:
    consts, options = reshape_target(op, shape)
    for i, values in consts.items():
        graph.set_input(op, i, _const_like(graph, _present(op, i), values))
    if options:
        op.options = op.options_with(**options)  # permute.py moves only options tables
    _drop_if_identity(graph, op)


def _drop_if_identity(graph: Graph, op: Op) -> None:
    """A RESHAPE / SQUEEZE / EXPAND_DIMS to its input's own shape, read with its input's
    quantization, copies: it goes (its output keeps its name when it is a graph output: then it
    stays)."""
    x, y = op.input(0), op.outputs[0]
    if (
        x is not None
        and x.shape == y.shape
        and x.signature == y.signature
        and same_quantization(x, y)
        and not graph.is_observed(y)
    ):
        graph.replace_uses(y, x)
        graph.remove_op(op)


# ---- the rewrite -------------------------------------------------------------------------------


def _rewrite(graph: Graph, region: Region) -> None:
    opcode = next(iter(region.seeds)).opcode
    new: dict[Tensor, Tensor] = {op.outputs[0]: _present(op, 0) for op in region.seeds}
    direct = {_present(u, 0): u for u in region.merges if graph.is_observed(u.outputs[0]) and region.cancels(graph, u)}
    for u, crossing in region.crossed.items():
        for out, q in zip(u.outputs, crossing.outputs):
            if out in direct:  # the cancelling transpose's graph output, written under its own name
                new[out] = direct[out].outputs[0]
                graph.remove_op(direct[out])
            elif q is not None:
                new[out] = _moved_tensor(graph, out, q)
    for op, q in region.retargets.items():  # a TRANSPOSE making a carried tensor: it makes t' instead
        out = op.outputs[0]
        new[out] = _moved_tensor(graph, out, region.carried[out])
        graph.set_input(op, 1, graph.add_const(f"{out.name}/perm", np.array(q, dtype=np.int32), "INT32"))
        graph.set_output(op, 0, new[out])
        if out in region.stops:
            _transpose(graph, opcode, new[out], region.carried[out], out, None, after=op)
    for s, p in region.sides.items():
        new[s] = _transpose(
            graph,
            opcode,
            s,
            inverse(p),
            f"{s.name}/permuted",
            moved_shape(s.shape, p),
            after=s.producer,
            before=None if s.producer is not None else graph.ops[0],
        )
    for u, crossing in region.crossed.items():
        for i in crossing.data:
            graph.set_input(u, i, new[_present(u, i)])
        for i, x in enumerate(u.inputs):  # a one-value operand the region moved too: the same values
            if i not in crossing.data and x in new:
                graph.set_input(u, i, new[x])
        _apply_constants(graph, u, crossing)
        for i, out in enumerate(u.outputs):
            if out in new and out not in region.sides:  # a side is transposed into the layout, not rewritten
                graph.set_output(u, i, new[out])
                if out in region.stops:
                    _transpose(graph, opcode, new[out], region.carried[out], out, None, after=u)
    for flatten, fcs in region.flattens.items():  # a RESHAPE before the FCs, or an FC itself
        t = _present(flatten, 0)
        order = feature_order(t.shape, region.carried[t])
        graph.set_input(flatten, 0, new[t])
        for fc in fcs:
            w = _present(fc, 1)
            # column order[f] of W' is column f of W; take() gathers, 10x faster than that scatter
            moved = np.take(np.asarray(w.data), np.argsort(order), axis=1)
            graph.set_input(fc, 1, _const_like(graph, w, moved))
    for u, operands in region.adjoints.items():  # a BATCH_MATMUL reading the source, adjoint toggled
        _toggle_adjoints(graph, u, [(i, new[_present(u, i)]) for i in operands])
    taken: dict[Tensor, Tensor] = {}  # a tensor an earlier merge took away -> the one now holding it
    for u, q in region.merges.items():
        if graph.contains(u):
            t, y = _present(u, 0), u.outputs[0]
            source = _holding(taken, new[t])  # a seed's input may be a cancelled merge's output
            new[t] = _merge(graph, u, source, q)  # the moved tensor may now go by u's output name
            if new[t] is not source:
                taken[source] = new[t]
            elif not graph.contains(u):
                taken[y] = source
    for seed in region.seeds:
        if seed.outputs[0] not in region.stops:
            graph.remove_op(seed)
    # a reshape the move made an identity goes last: every reader of its output is rewired by now
    # (dropped earlier, a reader rewired after would read the tensor it no longer writes)
    for u in region.crossed:
        if info(u.kind).layout == "reshape" and graph.contains(u):
            _drop_if_identity(graph, u)


def _toggle_adjoints(graph: Graph, u: Op, operands: list[tuple[int, Tensor]]) -> None:
    """BATCH_MATMUL `u` reads each (index, source) and takes that operand's adjoint flag toggled (TFLite
    names the flags adj_x / adj_y, Circle adjoint_lhs / adjoint_rhs)."""
    circle = graph.model is not None and graph.model.format.name == "circle"
    names = ("adjointLhs", "adjointRhs") if circle else ("adjX", "adjY")
    changes = {}
    for i, source in operands:
        graph.set_input(u, i, source)
        changes[names[i]] = not bool(getattr(u.options, names[i], False))
    u.options = u.options_with(**changes)


def _holding(taken: dict[Tensor, Tensor], t: Tensor) -> Tensor:
    """The tensor holding `t`'s values after the merges so far (`t` itself unless one took it)."""
    while t in taken:
        t = taken[t]
    return t


def _apply_constants(graph: Graph, u: Op, crossing: Crossing) -> None:
    for i, values in crossing.consts.items():
        graph.set_input(u, i, _const_like(graph, _present(u, i), values))
    if crossing.options:
        u.options = u.options_with(**crossing.options)


def _merge(graph: Graph, u: Op, source: Tensor, q: Perm) -> Tensor:
    """TRANSPOSE reader `u` reads `source` (its input moved) by `q`; an identity goes. Returns the
    tensor holding `source`'s values now: a cancelling graph output the producer of `source`
    writes under its own name renames `source` for every other reader too (another merge of the
    same tensor must read that name, not the one no op writes any more)."""
    y = u.outputs[0]
    if is_identity(q) and not graph.is_observed(y):
        graph.replace_uses(y, source)
        graph.remove_op(u)
        return source
    graph.set_input(u, 0, source)
    graph.set_input(u, 1, graph.add_const(f"{y.name}/perm", np.array(q, dtype=np.int32), "INT32"))
    if is_identity(q) and _remove_identity(graph, u, PassResult()) is None:
        return y  # y is observed: the producer of `source` writes y, and source's readers read it
    return source


def _present(op: Op, i: int) -> Tensor:
    """Input `i` of an op a seed, region or crossing holds: present (region.py and permute.py
    refuse an op without the inputs they move)."""
    t = op.inputs[i]
    assert t is not None, f"{op.kind} input {i}"
    return t


def _transpose(
    graph: Graph, opcode, x: Tensor, perm: Perm, out: Tensor | str, shape, *, after: Op | None, before: Op | None = None
) -> Tensor:
    """A new TRANSPOSE of `x` by `perm` writing `out` (a tensor, or the name of a new one), with the
    operator code (version) of the seed's: what the model already asks of the runtime."""
    if isinstance(out, str):
        out = graph.add_tensor(
            out,
            x.dtype,
            shape,
            shape_signature=_moved_signature(x, inverse(perm)),
            quantization=_moved_quantization(x.quantization, inverse(perm)),
        )
    perm_t = graph.add_const(f"{out.name}/perm", np.array(perm, dtype=np.int32), "INT32")
    graph.add_op(opcode, [x, perm_t], [out], Options("TransposeOptions"), after=after, before=before)
    return out


def _moved_tensor(graph: Graph, t: Tensor, q: Perm) -> Tensor:
    """A new tensor t' for t carrying q."""
    return graph.add_tensor(
        f"{t.name}/permuted",
        t.dtype,
        moved_shape(t.shape, q),
        shape_signature=_moved_signature(t, q),
        quantization=_moved_quantization(t.quantization, q),
    )


def _moved_signature(t: Tensor, q: Perm) -> tuple[int, ...] | None:
    return None if t.shape_signature is None else moved_shape(t.shape_signature, q)


def _moved_quantization(quantization, q: Perm):
    """The quantization of t' for t carrying q: a per-channel axis d of t is axis q[d] of t'."""
    if quantization is None or scale_count(quantization) <= 1:
        return quantization
    moved = copy.copy(quantization)
    moved.quantizedDimension = q[int(quantization.quantizedDimension or 0)]
    return moved


def _const_like(graph: Graph, old: Tensor, values: np.ndarray) -> Tensor:
    """A new constant with `old`'s type and quantization holding `values` (copy-on-write: `old`
    stays as it is for whoever else reads it)."""
    t = graph.add_const(f"{old.name}/permuted", values, old.dtype)
    t.quantization = old.quantization
    return t
