"""LiteRT's in-place sharing over a whole graph: which buffer each tensor gets, and where an op
run in place would overwrite a tensor that a later op still reads (a *clobber*).

The rule is engine/reshapes.py's (its docstring quotes arena_planner.cc); here it is run the way
the planner runs it, once over the ops in execution order, with the reference counts of the graph
as it stands: one per operator input slot (dead readers included: LiteRT runs them) and one per
listing among the graph outputs. A tensor gets the buffer (the *root*) of the input its producer
may share; a modifying op shares only when that input and the root each have one reference.

A clobber is a modifying op W, at position p, writing its root's buffer while a tensor already
in that buffer is read after p (or is a graph output). Finding them is linear: per root, the latest
read of the tensors placed in it so far.

The passes keep to the rule where they rewrite (reshapes.py: aliasing_hazard, chain_hazard,
in_place_hazard, input_hazard), counting a reader nothing needs as gone. But a count that drops
can let an op share a buffer it did not share before, far from the rewrite that dropped it:

  - the cleanup removing a dead reader: `masking_ops` finds the dead readers whose removal would
    cause a clobber, and the cleanup keeps them (deadcode.py: `sweep`);
  - a rewrite moving a reader away (a RESHAPE merged into the one before it, a common
    subexpression taken out): the manager, after the rounds, runs the ops that read the
    overwritten tensor before the writer instead, where what they read allows
    (`run_readers_first`: the same function, no op added);

and what is left is bnfold's bug: the manager refuses an output with a clobber its input did not
have (`new_clobbers`: a writer that overwrites no more than it did in the input is the input's),
exit 3 naming the pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..ir.graph import Graph, Op, Tensor
from .reshapes import ALIASING, IN_PLACE, shared_input

NEVER = -1
MAX_MOVES = 64  # ops run_readers_first moves in one graph before it leaves the rest to the check
SHARING = ALIASING | IN_PLACE.keys()  # the kinds whose output LiteRT may place in an input's buffer


class Clobber:
    """`writer` runs in place over the buffer of `tensor`, which `reader`, after it, still reads
    (None: the graph's caller, `tensor` being a graph output). A plain class: no dataclass is on
    optimize's start-up path (tests/test_layers.py)."""

    __slots__ = ("writer", "tensor", "reader")

    def __init__(self, writer: Op, tensor: Tensor, reader: Op | None):
        self.writer, self.tensor, self.reader = writer, tensor, reader

    def describe(self) -> str:
        after = "a graph output" if self.reader is None else f"read after it by {self.reader.kind}"
        return (
            f"LiteRT would run {self.writer.kind} (writing {self.writer.outputs[0].name}) in place over "
            f"{self.tensor.name}, {after} (engine/planner.py)"
        )


def roots(graph: Graph, ops: list[Op]) -> dict[int, Tensor]:
    """id(tensor) -> the tensor whose buffer it shares, for every tensor LiteRT places in another's
    buffer when it runs `ops` (the graph's ops in execution order, or some of them)."""
    return _plan(graph, ops)[0]


def clobbers(graph: Graph, *, without: Iterable[Op] = ()) -> list[Clobber]:
    """The clobbers LiteRT would make running `graph` (less the ops `without`)."""
    left_out = {id(op) for op in without}
    ops = [op for op in graph.ops if id(op) not in left_out] if left_out else graph.ops
    shared, links = _plan(graph, ops)
    if not links:
        return []
    last_read = _last_reads(graph, ops)
    latest: dict[int, tuple[int, Tensor]] = {}  # id(root) -> (latest read so far, the tensor read)
    found = []
    for position, op, root in links:
        out = op.outputs[0]
        read, tensor = latest.get(id(root)) or (last_read.get(id(root), NEVER), root)
        if op.kind not in ALIASING and read > position:
            found.append(Clobber(op, tensor, ops[read] if read < len(ops) else None))
        own = last_read.get(id(out), NEVER)
        latest[id(root)] = (own, out) if own > read else (read, tensor)
    return found


def masking_ops(graph: Graph, dead: list[Op]) -> set[Op]:
    """Of the `dead` ops (nothing reads their outputs), those to keep: without them LiteRT would
    clobber a buffer it does not clobber with them, through a reference count they no longer hold.
    Each dead op kept keeps the dead ops that produce its inputs. Linear per clobber found; nothing
    to simulate when no dead op reads a tensor that a live op reads too (only such a count drops
    to where LiteRT shares a buffer it did not)."""
    gone = set(dead)
    if not any(_read_by_the_living(t, gone) for op in dead for t in op.inputs):
        return set()
    keep: set[Op] = set()
    had: set[int] | None = None
    while True:
        removed = [op for op in dead if op not in keep]
        found = clobbers(graph, without=removed)
        if found and had is None:
            had = {id(c.writer) for c in clobbers(graph)}
        new = [c for c in found if had is not None and id(c.writer) not in had]
        if not new:
            return keep
        gone = set(removed)
        shared = roots(graph, [op for op in graph.ops if op not in gone])
        hit = {id(shared.get(id(c.tensor), c.tensor)) for c in new}
        more = {op for op in removed if any(_in_buffer(t, shared, hit) for t in op.inputs)}
        if not more:
            return keep  # nothing dead reads these buffers: the manager's check names the clobber
        keep |= _with_producers(more, set(dead))


Overwrites = dict[Op, set[Tensor]]  # a writer run in place -> every tensor it overwrites while still read


def overwrites(graph: Graph) -> Overwrites:
    """What each op LiteRT runs in place over `graph`'s buffers overwrites while a later op (or the
    graph's caller) still reads it; only writers with a clobber. Nothing is asked beyond one
    simulation unless the graph has a clobber; then each buffer's tensors are paired with its
    writers (quadratic in one buffer's length: only for a graph LiteRT already runs wrongly)."""
    found = clobbers(graph)
    return {c.writer: _overwritten(graph, c.writer) for c in found}


def new_clobbers(graph: Graph, inherited: Overwrites) -> list[Clobber]:
    """The graph's clobbers but those the input had (`inherited`, its `overwrites`): a writer that
    overwrote the same tensors there, or more. An input LiteRT already computes wrongly is the
    runtime's business, not bnfold's; a cleanup that takes one of its readers away may change which
    tensor a clobber names, not what it overwrites."""
    found = clobbers(graph)
    return [c for c in found if c.writer not in inherited or not _overwritten(graph, c.writer) <= inherited[c.writer]]


def _overwritten(graph: Graph, writer: Op) -> set[Tensor]:
    """The tensors in `writer`'s buffer, written before it runs in place, that are read after it."""
    ops = graph.ops
    shared = roots(graph, ops)
    root = shared.get(id(writer.outputs[0]))
    if root is None:
        return set()
    position = {id(op): i for i, op in enumerate(ops)}
    at, last = position[id(writer)], _last_reads(graph, ops)
    in_buffer = [root, *(t for op in ops[:at] for t in op.outputs if shared.get(id(t)) is root)]
    return {t for t in in_buffer if last.get(id(t), NEVER) > at}


def run_readers_first(graph: Graph, inherited: Overwrites) -> int:
    """Undo each new clobber by order alone: the ops that read the overwritten tensor after the
    writer run right before it instead, with the ops after the writer that make what they read
    (`_needed_before`), in their order, when none of them reads what the writer makes. What
    they write is read later still, so the order stays valid; LiteRT then reads the value before
    the op in place overwrites it, and the model computes the same function with no op added.
    Each move can make another (a moved RESHAPE shares the buffer too), up to MAX_MOVES; what
    cannot move is left to the manager's check. Returns the ops moved."""
    moved = 0
    while moved < MAX_MOVES:
        new = new_clobbers(graph, inherited)
        if not new:
            break
        position = {id(op): i for i, op in enumerate(graph.ops)}
        writer = new[0].writer
        at = position[id(writer)]
        later = [u for u in graph.consumers(new[0].tensor) if position[id(u)] > at]
        group = _needed_before(later, at, position)
        if not group or moved + len(group) > MAX_MOVES:
            break
        for u in group:
            graph.move_before(u, writer)
        moved += len(group)
    return moved


def _needed_before(readers: list[Op], at: int, position: dict[int, int]) -> list[Op]:
    """`readers` and the ops after position `at` whose outputs they need, in execution order;
    empty when one of them needs what the op at `at` writes (it cannot run before it)."""
    group: dict[int, Op] = {}
    stack = list(readers)
    while stack:
        op = stack.pop()
        if id(op) in group:
            continue
        group[id(op)] = op
        for t in op.inputs:
            maker = None if t is None else t.producer
            if maker is None or position[id(maker)] < at:
                continue
            if position[id(maker)] == at:
                return []
            stack.append(maker)
    return sorted(group.values(), key=lambda op: position[id(op)])


def _plan(graph: Graph, ops: list[Op]) -> tuple[dict[int, Tensor], list[tuple[int, Op, Tensor]]]:
    """LiteRT's in-place pass over `ops`: id(tensor) -> its root, and each op whose output shares a
    buffer, with its position and the root, in execution order."""
    count = _reference_counts(graph, ops)
    outputs = {id(t) for t in graph.outputs}
    fixed = {id(t) for t in graph.inputs}

    def in_arena(s: Tensor) -> bool:
        return not s.is_const and id(s) not in fixed

    def one_reader(s: Tensor) -> bool:
        return count(s) == 1

    shared: dict[int, Tensor] = {}
    links = []
    for position, op in enumerate(ops):
        kind = op.kind
        if kind not in SHARING or not op.outputs or id(op.outputs[0]) in outputs:
            continue
        source = shared_input(kind, op.inputs, op.outputs[0], in_arena=in_arena, one_reader=one_reader)
        if source is None:
            continue
        root = shared.get(id(source), source)
        if kind in ALIASING or count(root) <= 1:
            shared[id(op.outputs[0])] = root
            links.append((position, op, root))
    return shared, links


def _reference_counts(graph: Graph, ops: list[Op]) -> Callable[[Tensor], int]:
    """tensor -> its references when `ops` run: one per input slot reading it, one per listing
    among the graph outputs. When `ops` are all the graph's ops, a tensor's `_uses` already holds
    one entry per slot reading it (ir/graph.py keeps it so), and nothing is swept."""
    if ops is graph.ops:
        listed: dict[int, int] = {}
        for t in graph.outputs:
            listed[id(t)] = listed.get(id(t), 0) + 1
        return lambda t: len(t._uses) + listed.get(id(t), 0)
    refs = _references(graph, ops)
    return lambda t: refs.get(id(t), 0)


def _references(graph: Graph, ops: list[Op]) -> dict[int, int]:
    refs: dict[int, int] = {}
    for op in ops:
        for t in op.inputs:
            if t is not None:
                refs[id(t)] = refs.get(id(t), 0) + 1
    for t in graph.outputs:
        refs[id(t)] = refs.get(id(t), 0) + 1
    return refs


def _last_reads(graph: Graph, ops: list[Op]) -> dict[int, int]:
    """id(tensor) -> the position of its last reader among `ops`; a graph output's is past them all."""
    last = {id(t): position for position, op in enumerate(ops) for t in op.inputs if t is not None}
    last.update((id(t), len(ops)) for t in graph.outputs)
    return last


def _read_by_the_living(t: Tensor | None, dead: set[Op]) -> bool:
    """An arena tensor (no constant, no graph input is ever shared) with a reader not in `dead`."""
    return t is not None and not t.is_const and t.producer is not None and any(u not in dead for u in t._uses)


def _in_buffer(t: Tensor | None, shared: dict[int, Tensor], hit: set[int]) -> bool:
    return t is not None and id(shared.get(id(t), t)) in hit


def _with_producers(ops: set[Op], dead: set[Op]) -> set[Op]:
    """`ops` and the dead ops their inputs come from, transitively."""
    kept, stack = set(ops), list(ops)
    while stack:
        for t in stack.pop().inputs:
            producer = None if t is None else t.producer
            if producer is not None and producer in dead and producer not in kept:
                kept.add(producer)
                stack.append(producer)
    return kept
