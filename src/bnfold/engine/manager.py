"""Runs passes over every subgraph until nothing changes, and collects what they did.

Like ONE's restart strategy, a change by any pass starts another round of all selected passes,
so folds cascade. Rounds are capped (MAX_ROUNDS), so no input can make the manager loop forever.
What passes refuse is kept only from the final round: a candidate skipped early may fold once
another pass has run. At the end the skip list is made from it by construction: exactly one entry
per batch-norm candidate left in the model, none for any other op, apart from it one entry per
TRANSPOSE left (leftovers.py), and each fold names the ops of the output that took it in (`into`).
A pass runs on a graph only where it finds an operator kind it needs (registry.PassSpec.needs).
After the rounds, what no op reads any more goes from every graph (deadcode.py), once.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from ..ir.graph import Graph
from ..ir.model import Model
from .deadcode import orphan_buffers, remove_dead_code
from .leftovers import explain, transposes_left
from .registry import PassSpec
from .report import Report

MAX_ROUNDS = 50


def run_passes(
    model: Model, specs: list[PassSpec], *, parameters: AbstractSet[str] = frozenset(), max_rounds: int = MAX_ROUNDS
) -> Report:
    """Run `specs` to a fixpoint; a pass named with its `parameters` first changes the model's
    interface, once (its module's change_interface)."""
    report = Report([s.name for s in specs])
    orphans = orphan_buffers(model) if specs else 0  # before the passes: what the input brought dead
    for spec in specs:
        named = set(parameters) & set(spec.parameters)
        if named and model.graphs:
            report.interface = {"parameters": sorted(named), **spec.module.change_interface(model.graphs[0], named)}
            model.changed |= bool(report.interface["inputs"] or report.interface["outputs"])
    for round_no in range(1, max_rounds + 1):
        report.rounds = round_no
        report.said.clear()
        report.not_folded.clear()
        changed = False
        kinds = [op_kinds(graph) for graph in model.graphs]
        for spec in specs:
            for index, graph in enumerate(model.graphs):
                # a pass without the kinds it needs in this graph has no candidate here: it would
                # fold nothing and refuse nothing, so skipping it (and its import) leaves the
                # report as it was. The kinds are the graph's as the pass would see it: taken
                # again after every change (a fold may add the kind a later pass needs).
                if spec.needs.isdisjoint(kinds[index]):
                    continue
                result = spec.run(graph)
                report.add(spec.name, index, result)
                if result.changed:
                    changed = True
                    model.changed = True
                    graph.cleanup()
                    kinds[index] = op_kinds(graph)
        if not changed:
            break
    else:
        report.converged = False
    if specs:
        dead = remove_dead_code(model, orphans)
        if any(dead.values()):
            report.notes.append({"dead_code_removed": dead})
    report.skips = explain(model, report.said, report.passes)
    report.transposes = transposes_left(model, report.said, report.passes)
    report.settle_into(model.graphs)
    return report


def op_kinds(graph: Graph) -> set[str]:
    """The operator kinds in `graph` (one sweep, like the cleanup after a change)."""
    return {op.kind for op in graph.ops}
