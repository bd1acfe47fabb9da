"""An optimize run's report as Model Explorer node data, made with its node-data builder.

Two overlays, each a value per operator (a short text) keyed by the operator's first output
tensor name in the graph of its subgraph (graphs.graph_ids):

- the optimized model (`output_node_data`): every operator that took in a fold (the report's
  `into`: a layer that absorbed a batch norm, a RELU or shift a fold left, ...) says how many ops
  it absorbed and by which passes, with the error the per-rewrite check measured for its rewrite
  when one ran (`--check-mode local`); every batch-norm candidate left says why (the report's
  skip list). Nothing else gets a value.
- the input model (`input_node_data`): the ops folded away say by which pass and into what, the
  ops that absorbed them say what, and the candidates left say why; ops are found by their
  position as read, so the names a fold gave its tensors do not matter.

A fold with nothing left to mark in the output (two TRANSPOSEs that cancel) shows only in the
input's overlay. Colours: green absorbed, blue folded away, orange left with a reason. (A run
whose check fails writes nothing, so every check error shown passed.)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from model_explorer import node_data_builder as ndb

from ..ir.model import Model
from ..values.local import fold_label
from .graphs import graph_ids

ABSORBED, GONE, LEFT = "#a5d6a7", "#90caf9", "#ffcc80"


@dataclass
class _Note:
    """What the overlay says about one operator."""

    absorbed: Counter = field(default_factory=Counter)  # pass -> ops absorbed
    gone: list[str] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)
    left: str | None = None

    def text(self) -> str:
        parts = [f"folded away by {g}" for g in self.gone]
        if self.absorbed:
            total = sum(self.absorbed.values())
            by = ", ".join(f"{name} {n}" if len(self.absorbed) > 1 else name for name, n in self.absorbed.items())
            parts.append(f"absorbed {total} op{'s' if total != 1 else ''} ({by})")
        if self.checks:
            worst = max(self.checks, key=lambda c: c["scaled_err"])
            parts.append(f"rewrite check: scaled err {worst['scaled_err']:.2e}, max abs err {worst['max_abs_err']:.2e}")
        if self.left is not None:
            parts.append(f"left: {self.left}")
        return "; ".join(parts)

    def colour(self) -> str:
        if self.left is not None:
            return LEFT
        return GONE if self.gone and not self.absorbed else ABSORBED


def output_node_data(report: dict, model: Model) -> ndb.ModelNodeData:
    """The overlay of the optimized `model` (as the run that wrote `report` left it)."""
    notes: dict[tuple[int, str], _Note] = {}
    checks = _rewrite_checks(report)
    for fold in report["folds"]:
        for op in fold.get("into", []):
            note = notes.setdefault((fold["subgraph"], op["output"]), _Note())
            note.absorbed[fold["pass"]] += len(fold["removed"])
            note.checks += checks.get((fold["subgraph"], fold_label(fold)), [])
    for skip in report["skips"]:
        notes.setdefault((skip["subgraph"], skip["at"]["output"]), _Note()).left = skip["reason"]
    return _model_node_data(notes, graph_ids(model), "bnfold: optimized")


def input_node_data(report: dict, model: Model) -> ndb.ModelNodeData:
    """The overlay of the run's input `model`: what was folded away, into what, and what was left."""
    read = [{op.index: op for op in graph.ops} for graph in model.graphs]
    notes: dict[tuple[int, str], _Note] = {}

    def note(gi: int, described: dict) -> _Note | None:
        op = read[gi].get(described.get("index")) if gi < len(read) else None
        if op is None or not op.outputs:
            return None  # an op a pass made: the input has no such op
        return notes.setdefault((gi, op.outputs[0].name), _Note())

    for fold in report["folds"]:
        gi, into = fold["subgraph"], fold.get("into", [])
        target = ", ".join(o["kind"] for o in into) or "nothing (they cancel)"
        for op in fold["removed"]:
            if (n := note(gi, op)) is not None:
                n.gone.append(f"{fold['pass']} into {target}")
        for op in into:
            if (n := note(gi, op)) is not None:
                n.absorbed[fold["pass"]] += len(fold["removed"])
    for skip in report["skips"]:
        if (n := note(skip["subgraph"], skip["at"])) is not None:
            n.left = skip["reason"]
    return _model_node_data(notes, graph_ids(model), "bnfold: input")


def _rewrite_checks(report: dict) -> dict[tuple[int, str], list[dict]]:
    """(subgraph, fold label) -> the per-rewrite check results of the rewrites holding that fold."""
    found: dict[tuple[int, str], list[dict]] = {}
    for rewrite in (report.get("check") or {}).get("rewrites", []):
        for label in rewrite["folds"]:
            found.setdefault((rewrite["subgraph"], label), []).append(rewrite)
    return found


def _model_node_data(notes: dict[tuple[int, str], _Note], ids: list[str], name: str) -> ndb.ModelNodeData:
    graphs: dict[str, ndb.GraphNodeData] = {}
    for (gi, key), note in notes.items():
        data = graphs.setdefault(ids[gi], ndb.GraphNodeData(results={}, name=name))
        data.results[key] = ndb.NodeDataResult(value=note.text(), bgColor=note.colour())
    return ndb.ModelNodeData(graphsData=graphs)
