"""Dead code: what no operator reads once the passes are done, and no one outside sees.

The manager cleans a graph after every pass that changed it (Graph.cleanup: ops whose outputs no
one reads, then tensors no op, graph input/output or signature names), and the writer keeps, of a
changed model, only the buffers a tensor or metadata entry holds. What a model brought in dead
(an op computing a value nothing reads, a constant no op reads, a buffer no tensor refers to)
stayed when no pass changed the graph that held it, and the output was then a copy of the input.
After any run of passes, `remove_dead_code` sweeps every graph once (but one the manager swept
after its last change, keeping no dead op: that sweep found what this one would); what it removed, and the
buffers the input held that no tensor referred to (counted before the passes, so the buffers folds
free are not counted: they go as they always did), make the model changed, so the writer drops them.
A dead op whose input reference stops LiteRT from running another op in place over a buffer still
read is kept (planner.py), and counted apart.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from ..ir.graph import Graph
from ..ir.model import Model


def remove_dead_code(model: Model, orphans: int, swept: AbstractSet[int] = frozenset()) -> tuple[dict[str, int], int]:
    """Remove dead ops and tensors from every graph of `model`: ({"operators", "tensors", "buffers"}
    the sweep removed (buffers: `orphans`, what `orphan_buffers` counted before the passes, and those
    only removed tensors held), the dead ops it kept for LiteRT's planner (`sweep`)). The model is
    marked changed when anything is removed. The graphs `swept` (indices) are not swept again: the
    manager swept them after their last change, and that sweep kept no dead op, so this one would
    find nothing (a sweep that kept some may keep others when asked again: those are swept)."""
    graphs = [graph for index, graph in enumerate(model.graphs) if index not in swept]
    ops_before = sum(len(g.ops) for g in graphs)
    tensors_before = [t for g in graphs for t in g.tensors]
    kept = sum(sweep(graph) for graph in graphs)
    left = {id(t) for g in graphs for t in g.tensors}
    gone = [t for t in tensors_before if id(t) not in left]
    held = {id(t.buffer) for g in model.graphs for t in g.tensors} if gone else set()  # by any graph
    freed = {id(t.buffer) for t in gone if t.is_const and id(t.buffer) not in held}
    removed = {
        "operators": ops_before - sum(len(g.ops) for g in graphs),
        "tensors": len(gone),
        "buffers": orphans + len(freed),
    }
    if any(removed.values()):
        model.changed = True
    return removed, kept


def sweep(graph: Graph) -> int:
    """Graph.cleanup, keeping the dead readers whose reference LiteRT's planner needs to keep an op
    from running in place over a buffer still read (planner.py: masking_ops); how many it kept."""
    dead = graph.dead_ops()
    keep = set()
    if dead:  # (a graph without dead ops, nearly every one, does without the planner's import)
        from .planner import masking_ops

        keep = masking_ops(graph, dead)
    graph.cleanup(keep=keep, dead=dead)
    return len(keep)


def orphan_buffers(model: Model) -> int:
    """Buffers of the model's table (buffer 0, the empty sentinel, aside) that no tensor or metadata
    entry holds: the writer leaves them out of a changed model."""
    held = {id(t.buffer) for g in model.graphs for t in g.tensors if t.buffer is not None}
    held.update(id(m.buffer) for m in model.metadata)
    held.update(id(b) for b in model.metadata_buffer or [])
    return sum(1 for b in model.buffers[1:] if id(b) not in held)
