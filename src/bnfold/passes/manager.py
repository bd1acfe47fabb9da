"""Runs passes over every subgraph until nothing changes, and collects what they did.

Like ONE's restart strategy, a change by any pass starts another round of all selected passes,
so folds cascade. Rounds are capped (MAX_ROUNDS), so no input can make the manager loop forever.
Skips are kept only from the final round: a candidate skipped early may fold once another pass
has run, and the report lists what was left unfolded at the end.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import Graph, Op
from ..ir.model import Model
from .registry import PassSpec

MAX_ROUNDS = 50


def describe(graph: Graph, op: Op) -> dict:
    index = graph.ops.index(op) if op in graph.ops else None
    return {"index": index, "kind": op.kind, "output": op.outputs[0].name if op.outputs else None}


def _plain(value):
    """JSON-friendly copy of report details."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass
class Report:
    passes: list[str]
    folds: list[dict] = field(default_factory=list)
    skips: list[dict] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    rounds: int = 0
    converged: bool = True

    def counts(self) -> dict[str, tuple[int, int]]:
        folds = Counter(f["pass"] for f in self.folds)
        skips = Counter(s["pass"] for s in self.skips)
        return {name: (folds[name], skips[name]) for name in self.passes}

    def to_json(self) -> str:
        return json.dumps(_plain({"passes": self.passes, "rounds": self.rounds, "converged": self.converged,
                                  "folds": self.folds, "skips": self.skips, "notes": self.notes}), indent=2)


class PassLog:
    """What a pass is handed to record its folds and skips."""

    def __init__(self, report: Report, pass_name: str, graph: Graph, graph_index: int):
        self.report = report
        self.pass_name = pass_name
        self.graph = graph
        self.graph_index = graph_index

    def _where(self) -> dict:
        return {"pass": self.pass_name, "subgraph": self.graph_index}

    def fold(self, layer: Op, removed: list[Op], **details) -> None:
        """Record a fold. Call before removing `removed` from the graph, so indices are real."""
        self.report.folds.append({**self._where(), "layer": describe(self.graph, layer),
                                  "removed": [describe(self.graph, op) for op in removed], **details})

    def skip(self, anchor: Op, reason: str, **details) -> None:
        self.report.skips.append({**self._where(), "at": describe(self.graph, anchor), "reason": reason, **details})

    def note(self, message: str, **details) -> None:
        self.report.notes.append({**self._where(), "note": message, **details})


def run_passes(model: Model, specs: list[PassSpec], *, max_rounds: int = MAX_ROUNDS) -> Report:
    report = Report([s.name for s in specs])
    functions = [(spec, spec.load()) for spec in specs]
    for round_no in range(1, max_rounds + 1):
        report.rounds = round_no
        report.skips.clear()
        changed = False
        for spec, run in functions:
            for index, graph in enumerate(model.graphs):
                if run(graph, PassLog(report, spec.name, graph, index)):
                    changed = True
                    model.changed = True
                    graph.cleanup()
        if not changed:
            break
    else:
        report.converged = False
    return report
