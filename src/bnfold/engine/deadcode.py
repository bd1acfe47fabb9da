"""Dead code: what no operator reads once the passes are done, and no one outside sees.

The manager cleans a graph after every pass that changed it (Graph.cleanup: ops whose outputs no
one reads, then tensors no op, graph input/output or signature names), and the writer keeps, of a
changed model, only the buffers a tensor or metadata entry holds. What a model brought in dead
(an op computing a value nothing reads, a constant no op reads, a buffer no tensor refers to)
stayed when no pass changed the graph that held it, and the output was then a copy of the input.
After any run of passes, `remove_dead_code` sweeps every graph once; what it removed, and the
buffers the input held that no tensor referred to (counted before the passes, so the buffers folds
free are not counted: they go as they always did), make the model changed, so the writer drops them.
A dead op whose input reference stops LiteRT from running another op in place over a buffer still
read is kept (planner.py), and counted apart.
"""

from __future__ import annotations

from ..ir.graph import Graph
from ..ir.model import Model
from .planner import masking_ops


def remove_dead_code(model: Model, orphans: int) -> tuple[dict[str, int], int]:
    """Remove dead ops and tensors from every graph of `model`: ({"operators", "tensors", "buffers"}
    the sweep removed (buffers: `orphans`, what `orphan_buffers` counted before the passes, and those
    only removed tensors held), the dead ops it kept for LiteRT's planner (`sweep`)). The model is
    marked changed when anything is removed."""
    ops_before = sum(len(g.ops) for g in model.graphs)
    tensors_before = [t for g in model.graphs for t in g.tensors]
    kept = sum(sweep(graph) for graph in model.graphs)
    left = {id(t) for g in model.graphs for t in g.tensors}
    held = {id(t.buffer) for g in model.graphs for t in g.tensors}
    freed = {id(t.buffer) for t in tensors_before if id(t) not in left and t.is_const and id(t.buffer) not in held}
    removed = {
        "operators": ops_before - sum(len(g.ops) for g in model.graphs),
        "tensors": len(tensors_before) - len(left),
        "buffers": orphans + len(freed),
    }
    if any(removed.values()):
        model.changed = True
    return removed, kept


def sweep(graph: Graph) -> int:
    """Graph.cleanup, keeping the dead readers whose reference LiteRT's planner needs to keep an op
    from running in place over a buffer still read (planner.py: masking_ops); how many it kept."""
    dead = graph.dead_ops()
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
