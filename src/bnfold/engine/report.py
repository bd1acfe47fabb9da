"""What passes say: a `Refusal` when a match fails, a `PassResult` from each run, the run's `Report`.

Every matcher either returns what it found or a `Refusal` carrying the reason (and the op it is
about: the batch-norm candidate, never a layout op or layer on the way); the reason is shown
verbatim in the report. A pass returns a `PassResult` listing its folds and the candidates it
refused; the manager collects them into the `Report` of the whole run, whose skip list has one
entry per batch-norm candidate left in the output (leftovers.py). Ops are described by kind,
output tensor name and their position in the model as read (None for ops a pass made), which
costs nothing to compute however large the graph.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from ..ir.graph import Graph, Op


class Refusal:
    """Why a candidate cannot be folded; `at` is the op the reason is about, if one is."""

    __slots__ = ("reason", "at")

    def __init__(self, reason: str, at: Op | None = None):
        self.reason, self.at = reason, at

    def __str__(self) -> str:
        return self.reason

    def prefixed(self, prefix: str) -> Refusal:
        return Refusal(f"{prefix}{self.reason}", self.at)


# One float16 rounding of a weight that was already float16: the error a fold adds to it.
FLOAT16_ROUNDING = 2.0**-11


def float16_note(written: list[str]) -> dict:
    """Report details for a fold that rewrote float16 weights (empty when it rewrote none)."""
    if not written:
        return {}
    return {
        "float16_weights": written,
        "added_error_bound": f"each rewritten float16 weight is rounded once more: relative error <= "
        f"2^-11 ({FLOAT16_ROUNDING:.2e}) per weight",
    }


def describe(op: Op) -> dict:
    return {"index": op.index, "kind": op.kind, "output": op.outputs[0].name if op.outputs else None}


AS_IS = frozenset({str, int, float, bool, type(None)})  # already JSON-ready: most of a report's values


def _plain(value):
    """JSON-friendly copy of report details (asked of every value of a report: a 36k-operator
    graph's holds ~400k, so the common exact types are answered first)."""
    kind = type(value)
    if kind in AS_IS:
        return value
    if kind is dict:  # a plain value inside is taken without a call
        return {k: v if type(v) in AS_IS else _plain(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in AS_IS else _plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Refusal):
        return value.reason
    return value


class PassResult:
    """What one run of one pass over one graph did. `skipped[i]` is the op `skips[i]` is about,
    `into[i]` the ops that took in `folds[i]` (the report's `into`, viewers' node data);
    `unsupported`: the rewrites refused because the target runtime cannot run what they would make."""

    __slots__ = ("folds", "skips", "skipped", "into", "not_folded", "unsupported")

    def __init__(self):
        self.unsupported: list[dict] = []
        self.folds: list[dict] = []
        self.skips: list[dict] = []
        self.skipped: list[Op] = []
        self.into: list[list[Op]] = []
        self.not_folded: list[dict] = []  # refusals about ops that are no batch-norm candidate

    @property
    def changed(self) -> bool:
        return bool(self.folds)

    def fold(self, layer: Op, removed: list[Op], *, into: list[Op] | None = None, **details) -> dict:
        """Record a fold (ops are described as they are now: call before rewiring them away);
        `into`: the ops that take it in, when not just `layer`."""
        record = {"layer": describe(layer), "removed": [describe(op) for op in removed], **details}
        self.folds.append(record)
        self.into.append([layer] if into is None else list(into))
        return record

    def made(self, op: Op | None) -> None:
        """An op the last fold made (the RELU or the shift it leaves): it carries that fold too."""
        if op is not None:
            self.into[-1].append(op)

    def skip(self, at: Op, reason: str | Refusal, **details) -> None:
        self.skips.append({"at": describe(at), "reason": str(reason), **details})
        self.skipped.append(at)

    def not_for_target(self, at: Op, reason: str) -> None:
        """A rewrite at `at` refused because the target cannot run what it would make (targets.py):
        a skip like any other, and listed in the report's `target` whatever op it is about."""
        self.skip(at, reason)
        self.unsupported.append({"at": describe(at), "reason": reason})

    def refuse_value(self, at: Op, reason: str) -> None:
        """An op a constant fold or rewrite could not take, and why (the report's `not_folded`: the
        skip list is about batch-norm candidates only)."""
        self.not_folded.append({"at": describe(at), "reason": reason})

    def refuse(self, refusal: Refusal, fallback: Op, **details) -> None:
        """Record a refusal at the op it is about (or at `fallback`)."""
        self.skip(refusal.at or fallback, refusal.reason, **details)


class Said(NamedTuple):
    """One refusal a pass recorded in the current round: the op it is about and its record."""

    pass_name: str
    op: Op
    record: dict


class Report:
    """Everything a run of the pass manager did, as the JSON report shows it.

    `said` collects the passes' refusals of the current round; at the end of the run the manager
    turns them into `skips`, one entry per batch-norm candidate left (leftovers.explain), and each
    fold's ops in `into` into its `into` entry (settle_into)."""

    __slots__ = (
        "passes",
        "folds",
        "skips",
        "transposes",
        "notes",
        "rounds",
        "converged",
        "interface",
        "said",
        "into",
        "not_folded",
        "target",
        "unsupported",
    )

    def __init__(self, passes: list[str]):
        self.passes = passes
        self.target: str | None = None  # the runtime the passes made the model for (targets.py)
        self.unsupported: list[dict] = []  # the final round's rewrites refused for the target
        self.folds: list[dict] = []
        self.skips: list[dict] = []
        self.transposes: list[dict] = []  # one entry per TRANSPOSE left (leftovers.py)
        self.notes: list[dict] = []
        self.rounds = 0
        self.converged = True
        # the main subgraph's inputs and outputs whose layout a pass parameter changed, and those it
        # left with why: {"inputs": [...], "outputs": [...], "kept": [...]}; None when none was named
        self.interface: dict | None = None
        self.said: list[Said] = []
        self.into: list[list[Op]] = []
        # what the passes of the final round could not fold that is no batch-norm candidate (a
        # constant a kernel cannot compute): {"pass", "subgraph", "at", "reason"}
        self.not_folded: list[dict] = []

    def add(self, pass_name: str, graph_index: int, result: PassResult) -> None:
        where = {"pass": pass_name, "subgraph": graph_index}
        self.folds.extend({**where, **f} for f in result.folds)
        self.into.extend(result.into)
        self.said.extend(Said(pass_name, op, {**where, **s}) for op, s in zip(result.skipped, result.skips))
        self.not_folded.extend({**where, **n} for n in result.not_folded)
        self.unsupported.extend({**where, **u} for u in result.unsupported)

    def settle_into(self, graphs: list[Graph]) -> None:
        """Give each fold its `into`: the ops of the output that took it in, described as they are
        at the end of the run (a later fold may have renamed their output or removed them)."""
        for record, ops in zip(self.folds, self.into):
            graph = graphs[record["subgraph"]]
            record["into"] = [describe(op) for op in {id(op): op for op in ops}.values() if graph.contains(op)]

    def counts(self) -> dict[str, tuple[int, int]]:
        return pass_counts(
            {"passes": self.passes, "folds": self.folds, "skips": self.skips, "transposes": self.transposes}
        )

    def to_dict(self) -> dict:
        """The report as plain JSON-ready values (numpy arrays and scalars made lists and numbers)."""
        interface = {} if self.interface is None else {"interface": self.interface}
        not_folded = {"not_folded": self.not_folded} if self.not_folded else {}
        return _plain(
            {
                "passes": self.passes,
                "target": {"name": self.target, "refused": self.unsupported},
                "rounds": self.rounds,
                "converged": self.converged,
                "folds": self.folds,
                "skips": self.skips,
                "transposes": self.transposes,
                "notes": self.notes,
                **interface,
                **not_folded,
            }
        )

    def to_json(self) -> str:
        import json  # only a report asked for needs it (~3 ms of a start)

        return json.dumps(self.to_dict(), indent=2)


def pass_counts(report: dict) -> dict[str, tuple[int, int]]:
    """Per pass of a report (a Report or its JSON form): (chains it folded, things left in the
    output it answers for). Each batch-norm candidate and TRANSPOSE left counts once, for the pass
    whose reason its entry gives (the most specific of those that refused it); one no pass that
    ran spoke about counts for none. So the counts, with those, add up to what `inspect
    --leftovers` lists (leftover_counts)."""
    folds = Counter(f["pass"] for f in report["folds"])
    left = Counter(entry["pass"] for entry in (*report["skips"], *report.get("transposes", [])))
    return {name: (folds[name], left[name]) for name in report["passes"]}


def leftover_counts(report: dict) -> tuple[int, int, int]:
    """(batch-norm candidates left, TRANSPOSEs left, of those how many no pass that ran spoke
    about): what `inspect --leftovers` lists, from the report of the run that wrote the model."""
    entries = (*report["skips"], *report.get("transposes", []))
    return len(report["skips"]), len(report.get("transposes", [])), sum(1 for e in entries if e["pass"] is None)
