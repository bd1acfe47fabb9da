"""Runs passes over every subgraph until nothing changes, and collects what they did.

Like ONE's restart strategy, a change by any pass starts another round of all selected passes,
so folds cascade. Rounds are capped (MAX_ROUNDS), so no input can make the manager loop forever.
What passes refuse is kept only from the final round: a candidate skipped early may fold once
another pass has run. At the end the skip list is made from it by construction: exactly one entry
per batch-norm candidate left in the model, none for any other op, apart from it one entry per
TRANSPOSE left (leftovers.py), and each fold names the ops of the output that took it in (`into`).
"""

from __future__ import annotations

from ..ir.model import Model
from .leftovers import explain, transposes_left
from .registry import PassSpec
from .report import Report

MAX_ROUNDS = 50


def run_passes(model: Model, specs: list[PassSpec], *, parameters: set[str] = frozenset(),
               max_rounds: int = MAX_ROUNDS) -> Report:
    """Run `specs` to a fixpoint; a pass named with its `parameters` first changes the model's
    interface, once (its module's change_interface)."""
    report = Report([s.name for s in specs])
    for spec in specs:
        named = set(parameters) & set(spec.parameters)
        if named and model.graphs:
            report.interface = {"parameters": sorted(named), **spec.module.change_interface(model.graphs[0], named)}
            model.changed |= bool(report.interface["inputs"] or report.interface["outputs"])
    for round_no in range(1, max_rounds + 1):
        report.rounds = round_no
        report.said.clear()
        changed = False
        for spec in specs:
            for index, graph in enumerate(model.graphs):
                result = spec.run(graph)
                report.add(spec.name, index, result)
                if result.changed:
                    changed = True
                    model.changed = True
                    graph.cleanup()
        if not changed:
            break
    else:
        report.converged = False
    report.skips = explain(model, report.said, report.passes)
    report.transposes = transposes_left(model, report.said, report.passes)
    report.settle_into(model.graphs)
    return report
