"""Which graph inputs are indices, and the range random values for them are drawn from.

LiteRT fails a run (it does not clamp) when GATHER, GATHER_ND or EMBEDDING_LOOKUP reads an index
outside [0, dim) of the params axis it addresses, so random integers over a whole dtype make
such a model fail on every sample. An input whose values reach those indices unchanged, through
the ops whose `values_from` (ir/ops.py) carries elements (casts, reshapes, slices,
concatenations), is drawn from [0, rows), rows being the smallest length of the axes it
addresses:

    ids (INT64 [1, 7]) -> CAST -> RESHAPE [7] -> GATHER(params=table [1000, 64], axis 0)
    => ids drawn from [0, 1000)

Where bnfold cannot tell the range (an index that goes through arithmetic on the way, a params
axis of dynamic length) the input is drawn as any other and `caveats` says why, for the message
of a check that could not be run (exit 4).

Each input is followed through the graph once, so the cost is linear in the graph per input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import info


@dataclass
class IndexUse:
    """What the graph does with one input's values as indices."""

    rows: int | None = None  # draw from [0, rows); None: no index bnfold can bound
    unknown: list[str] = field(default_factory=list)  # why a use has no range bnfold can tell

    def bound(self, rows: int) -> None:
        self.rows = rows if self.rows is None else min(self.rows, rows)


def index_uses(graph: Graph) -> dict[int, IndexUse]:
    """id(input tensor) -> its IndexUse, for the inputs of `graph` that reach an index."""
    found = {}
    for tensor in graph.inputs:
        use = _follow(graph, tensor)
        if use.rows is not None or use.unknown:
            found[id(tensor)] = use
    return found


def caveats(graph: Graph) -> list[str]:
    """One sentence per input whose valid range bnfold cannot tell, pointing at --input."""
    uses = index_uses(graph)
    return [
        f"input {t.name!r} {uses[id(t)].unknown[0]}, so bnfold cannot tell its valid range: "
        "give its values with --input"
        for t in graph.inputs
        if id(t) in uses and uses[id(t)].unknown
    ]


def _follow(graph: Graph, start: Tensor) -> IndexUse:
    """Walk every path from `start`; a path is exact while it only carries values (`through` is
    None), and remembers the first op that computed with them otherwise."""
    use = IndexUse()
    seen: set[tuple[int, bool]] = set()
    stack: list[tuple[Tensor, str | None]] = [(start, None)]
    while stack:
        tensor, through = stack.pop()
        if (id(tensor), through is None) in seen:
            continue
        seen.add((id(tensor), through is None))
        for op in graph.consumers(tensor):
            for position, t in enumerate(op.inputs):
                if t is not tensor:
                    continue
                facts = info(op.kind)
                if facts.indexes is not None and position == facts.indexes.indices:
                    _index_site(op, graph, through, use)
                carried = facts.values_from == "*" or position in facts.values_from
                onward = through if carried else through or f"{op.kind} (op {_position(graph, op)})"
                stack.extend((out, onward) for out in op.outputs if out is not None)
    return use


def _index_site(op: Op, graph: Graph, through: str | None, use: IndexUse) -> None:
    where = f"{op.kind} (op {_position(graph, op)})"
    if through is not None:
        use.unknown.append(f"reaches the indices of {where} through {through}")
        return
    params, axes = _addressed_axes(op)
    if params is None:  # no params to index: the run fails whatever the indices are
        return
    signature = params.shape_signature
    lengths = signature if signature is not None and len(signature) == len(params.shape) else params.shape
    dynamic = [a for a in axes if lengths[a] < 0 or params.shape[a] <= 0]
    if dynamic:
        use.unknown.append(
            f"indexes {where}, whose params {params.name!r} have no fixed length along axis {dynamic[0]}"
        )
    elif axes:
        use.bound(min(params.shape[a] for a in axes))


def _addressed_axes(op: Op) -> tuple[Tensor | None, list[int]]:
    """The params of an indexing op and the axes of them its indices address (ir/ops.py Indexing)."""
    indexing = info(op.kind).indexes
    if indexing is None:  # not an indexing op
        return None, []
    params, indices = op.input(indexing.params), op.input(indexing.indices)
    if params is None:
        return None, []
    rank = len(params.shape)
    if indexing.axes == "leading":
        return params, list(range(min(indices.shape[-1], rank))) if indices is not None and indices.shape else []
    if indexing.axes == "option":
        axis = getattr(op.options, "axis", None) if op.options is not None else None
        return params, [(axis or 0) % rank] if rank else []
    return params, [0] if rank else []


def _position(graph: Graph, op: Op) -> int:
    """The op's position as read (its execution position for ops a pass made)."""
    return op.index if op.index is not None else graph.ops.index(op)
