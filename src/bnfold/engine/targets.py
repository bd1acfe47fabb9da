"""The runtime a model is made for, as every pass sees it: what a rewrite may introduce.

Targets: "litert" (LiteRT, TFLite's runtime), "onert" (ONE's runtime) and "any" (the output runs
wherever the input did: it holds only operator kinds the input already had, and a fused
activation only where every runtime of the table runs it). What each runtime runs is
ir/runtimes.py, derived from the runtimes themselves (schemas/derive_runtimes.py); an operator or
fused activation the table never asked about is not refused (the table probes every one a pass
makes). The default target follows the output's format (.tflite: litert, .circle: onert), or the
input's when nothing is written (`default_target`).

A pass asks `refusal(graph, kind, activation)` before it makes an operator `kind` or gives one
the fused `activation`; a reason means the rewrite is refused with it (the report shows it). The
manager hands each graph its Target (`graph.target`); a pass run on a graph without one (a unit
test) may make anything. A pass whose rewrite only one runtime wants (not a refusal: LiteRT runs
both forms, slower) reads the target's name (`name_of`: replace_non_const_fc_with_batch_matmul).
"""

from __future__ import annotations

from ..errors import UsageError
from ..ir.graph import Graph
from ..ir.model import Model
from ..ir.runtimes import PROBED, RUNS

TARGETS = ("litert", "onert", "any")
FORMAT_TARGETS = {"tflite": "litert", "circle": "onert"}  # io/formats.py Format.name -> default target


class Target:
    """`name`: one of TARGETS; `kinds`: the input's operator kinds (for "any")."""

    def __init__(self, name: str, kinds: frozenset[str] = frozenset()):
        if name not in TARGETS:
            raise UsageError(f"target must be one of {', '.join(TARGETS)}, not {name!r}")
        self.name, self.kinds = name, kinds

    @classmethod
    def of(cls, name: str, model: Model) -> Target:
        """The target `name` for `model` as it is before any pass runs."""
        return cls(name, frozenset(op.kind for g in model.graphs for op in g.ops))

    def refusal(self, kind: str, activation: str = "NONE", variant: str = "") -> str | None:
        """Why this target cannot take an operator `kind` with the fused `activation`, or None. A
        `variant` names a form of the operator the table probes apart (ir/runtimes.py's "KIND:variant":
        a RoPE whose tables hold one row per position, an RMS norm of a rank-2 input)."""
        form = (f"{kind}:{variant}", activation)
        if variant and form in PROBED:
            runtimes = tuple(RUNS) if self.name == "any" else (self.name,)
            if not any(form in RUNS[runtime] for runtime in runtimes):
                what = f"{kind} ({variant.replace('_', ' ')})"
                who = "no runtime runs" if self.name == "any" else f"{self.name} does not run"
                return f"{who} {what} (the target is {self.name})"
        if self.name == "any":
            if kind not in self.kinds:
                return f"the input has no {kind}, and the target is any (only operators the input already had)"
            if activation == "NONE":
                return None
            runtimes = tuple(RUNS)
        else:
            runtimes = (self.name,)
        if (kind, activation) not in PROBED:
            return None
        for runtime in runtimes:
            if (kind, activation) not in RUNS[runtime]:
                what = kind if activation == "NONE" else f"{kind} with a fused {activation}"
                return f"{runtime} does not run {what} (the target is {self.name})"
        return None


def default_target(format_name: str) -> str:
    """The target of a model written in (or, when nothing is written, read from) that format."""
    return FORMAT_TARGETS[format_name]


def name_of(graph: Graph) -> str | None:
    """The target `graph` is made for: the manager's, else its model's format's (a pass run on its
    own, as in a unit test); None for a graph in no model."""
    if graph.target is not None:
        return graph.target.name
    return None if graph.model is None else default_target(graph.model.format.name)


def refusal(graph: Graph, kind: str, activation: str = "NONE", variant: str = "") -> str | None:
    """Why the runtime `graph` is made for cannot take `kind` with `activation` (and in the form
    `variant`, see Target.refusal) (None: it can, or the graph has no target)."""
    target = graph.target
    return None if target is None else target.refusal(kind, activation, variant)
