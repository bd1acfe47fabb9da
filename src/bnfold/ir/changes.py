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
    clears it)."""

    def __init__(self, sound: bool = False) -> None:
        self.sound = sound
        self.running: str | None = None
        self.ops: dict[Any, str | None] = {}  # op -> name of the pass that last created or changed it
        # an op a pass changed (not created) -> its runtime variants before the first change: what
        # the target gate lets it keep (engine/targets.py check_made)
        self.was: dict[Any, list[str]] = {}
        self.stale: set[Any] = set()  # ops read whose recorded shapes disagreed with their rule before any change
        self.passes: dict[str, None] = {}  # the passes that said they changed the graph, in order

    def created(self, op) -> None:
        self.sound = False
        if self.running is not None:
            self.ops[op] = self.running

    def changed(self, op) -> None:
        self.sound = False
        if self.running is None:
            return
        if op not in self.ops:
            self.was[op] = op.runtime_variants()
            if shape_rules()(op, info(op.kind).shape) is not None:
                self.stale.add(op)
        self.ops[op] = self.running
