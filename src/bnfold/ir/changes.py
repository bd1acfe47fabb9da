"""What passes changed in a graph, as they change it: the output gate's record (ir/invariants.py:
check_output) and whether a graph is still as the reader or the gate left it (`sound`).

Below ir/graph.py, whose mutation methods report to it: an op is any ir/graph.py Op (not named
here, so that neither module imports the other).
"""

from __future__ import annotations

import functools
from typing import Any

from .ops import info


@functools.cache
def shape_rules():
    """ir/shapes.py's shape_problem, imported at the first change: a run that changes nothing never
    loads the rules. (Cached: an import statement in `changed` would cost ~1.4 us a change.)"""
    from .shapes import shape_problem

    return shape_problem


class Changes:
    """The ops passes created or changed in one graph, each with the pass that last did, recorded
    by the graph as the mutation happens (`Graph.touch`); `running` is the pass the manager runs
    (None outside a pass: library code's own edits are not recorded, so only the reader's checks
    hold them). `sound`: the graph passed the reader's checks or the gate and nothing has touched
    it since (the writer's gate then has nothing new to check; any mutation method or a removed op
    clears it).

    What else the gate needs to look only where the graph changed (ir/invariants.py:
    `changes_hold`): `unrecorded` (a mutation came while no pass ran: only the whole check
    holds it), the tensors that lost their producer (`orphaned`: a removed op's outputs, an
    output replaced) and the ops whose output another op took over (`displaced`), and, from the
    last whole check, whether every read was produced earlier in the execution order
    (`in_order`), the graph's inputs and the model's number of graphs then (`sources`, `graphs`)."""

    def __init__(self, sound: bool = False, *, in_order: bool = False, sources: tuple = (), graphs: int = 0) -> None:
        self.sound = sound
        self.unrecorded = not sound  # a graph never checked is checked whole
        self.in_order, self.sources, self.graphs = in_order, sources, graphs
        self.orphaned: list[Any] = []  # tensors whose producer a mutation removed or unlinked
        self.displaced: list[Any] = []  # ops whose output tensor another op was linked to write
        self.edits = 0  # mutations recorded so far (the manager tells a graph unchanged since a sweep)
        self.running: str | None = None
        self.ops: dict[Any, str | None] = {}  # op -> name of the pass that last created or changed it
        # an op a pass changed (not created) -> its runtime variants before the first change: what
        # the target gate lets it keep (engine/targets.py check_made)
        self.was: dict[Any, list[str]] = {}
        self.stale: set[Any] = set()  # ops read whose recorded shapes disagreed with their rule before any change
        self.passes: dict[str, None] = {}  # the passes that said they changed the graph, in order

    def created(self, op) -> None:
        self.sound = False
        self.edits += 1
        if self.running is None:
            self.unrecorded = True
        else:
            self.ops[op] = self.running

    def changed(self, op) -> None:
        self.sound = False
        self.edits += 1
        if self.running is None:
            self.unrecorded = True
            return
        if op not in self.ops:
            self.was[op] = op.runtime_variants()
            if shape_rules()(op, info(op.kind).shape) is not None:
                self.stale.add(op)
        self.ops[op] = self.running

    def removed(self, op) -> None:
        """`op` leaves the graph: what it wrote is produced no more."""
        self.sound = False
        self.edits += 1
        self.unrecorded |= self.running is None
        self.orphaned.extend(op.outputs)

    def relinked(self, op, old, new) -> None:
        """`op` is about to write `new` (in place of its output `old`, None for a new op): `old`
        may be produced no more, and the op that wrote `new` was displaced."""
        if old is not None and old.producer is None:
            self.orphaned.append(old)
        if new.producer is not None and new.producer is not op:
            self.displaced.append(new.producer)
