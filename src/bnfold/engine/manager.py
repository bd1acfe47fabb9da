"""Runs passes over every subgraph until nothing changes, and collects what they did.

Like ONE's restart strategy, a change by any pass starts another round of all selected passes,
so folds cascade. Rounds are capped (MAX_ROUNDS), so no input can make the manager loop forever.
What passes refuse is kept only from the final round: a candidate skipped early may fold once
another pass has run. At the end the skip list is made from it by construction: exactly one entry
per batch-norm candidate left in the model, none for any other op, apart from it one entry per
TRANSPOSE left (leftovers.py), and each fold names the ops of the output that took it in (`into`).
A pass runs on a graph only where it finds an operator kind it needs (registry.PassSpec.needs).
Every graph carries the Target the model is made for (targets.py): what a pass may introduce.
"""

from __future__ import annotations

from ..ir.graph import Graph
from ..ir.model import Model
from .leftovers import explain, transposes_left
from .registry import PassSpec
from .report import Report
from .targets import Target, default_target

MAX_ROUNDS = 50


def run_passes(
    model: Model,
    specs: list[PassSpec],
    *,
    parameters: set[str] = frozenset(),
    max_rounds: int = MAX_ROUNDS,
    target: str | None = None,
) -> Report:
    """Run `specs` to a fixpoint for the runtime `target` ("litert", "onert", "any"; None: the
    input format's, targets.default_target); a pass named with its `parameters` first changes the
    model's interface, once (its module's change_interface)."""
    report = Report([s.name for s in specs])
    report.target = target or default_target(model.format.name)
    made_for = Target.of(report.target, model)
    for graph in model.graphs:
        graph.target = made_for
    for spec in specs:
        named = set(parameters) & set(spec.parameters)
        if named and model.graphs:
            report.interface = {"parameters": sorted(named), **spec.module.change_interface(model.graphs[0], named)}
            model.changed |= bool(report.interface["inputs"] or report.interface["outputs"])
    for round_no in range(1, max_rounds + 1):
        report.rounds = round_no
        report.said.clear()
        report.unsupported.clear()
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
    report.skips = explain(model, report.said, report.passes)
    report.transposes = transposes_left(model, report.said, report.passes)
    report.settle_into(model.graphs)
    return report


def op_kinds(graph: Graph) -> set[str]:
    """The operator kinds in `graph` (one sweep, like the cleanup after a change)."""
    return {op.kind for op in graph.ops}
