"""The runtime a model is made for, as every pass sees it: what a rewrite may introduce.

Targets: "litert" (LiteRT, TFLite's runtime), "onert" (ONE's runtime) and "any" (the output runs
wherever the input did: it holds only operator kinds the input already had, and a fused
activation only where every runtime of the table runs it). What each runtime runs is
ir/runtimes.py, derived from the runtimes themselves (schemas/derive_runtimes.py); an operator or
fused activation the table never asked about is not refused (the table probes every one a pass
makes). The default target follows the output's format (.tflite: litert, .circle: onert), or the
input's when nothing is written (`default_target`).

A pass asks `refusal(graph, kind, activation, constant_inputs)` before it makes an operator `kind`,
gives one the fused `activation` or makes it read constants at `constant_inputs` (a runtime may
refuse a constant operand: onert a BATCH_MATMUL's left one); a reason means the rewrite is refused
with it (the report shows it). The manager hands each graph its Target (`graph.target`); a pass run
on a graph without one (a unit test) may make anything. The manager's output gate (`check_made`)
asks the same of every op a pass created or changed, so a pass that forgot to ask is bnfold's bug
(exit 3, naming it), never a model the target refuses. A pass whose rewrite only one runtime wants
(not a refusal: LiteRT runs both forms, slower) reads the target's name (`name_of`:
replace_non_const_fc_with_batch_matmul).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from ..errors import InternalError, UsageError
from ..ir.graph import Graph, Op
from ..ir.model import Model

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

    def refusal_of(self, op: Op, kept: Iterable[str] = ()) -> str | None:
        """Why this target cannot run `op` as it is (its kind, fused activation, constant operands,
        rank and type), but for the variants `kept` (what the op had before a pass changed it);
        None when it can."""
        if self.name == "any" and op.kind not in self.kinds:
            return self.refusal(op.kind)
        variants = [v for v in op.runtime_variants() if v not in kept]
        if op.kind in self.kinds:  # the kind alone the input had: no new refusal (nor for any)
            variants = [v for v in variants if v != "NONE"]
        return self._refused(op.kind, variants, self._runtimes())

    def refusal(
        self,
        kind: str,
        activation: str = "NONE",
        constant_inputs: Iterable[int] = (),
        *,
        rank: int | None = None,
        dtype: str | None = None,
        form: str | None = None,
    ) -> str | None:
        """Why this target cannot take an operator `kind` with the fused `activation`, reading
        constants at `constant_inputs`, making a first output of `rank` and `dtype`, in the `form`
        the table probes apart (a RoPE whose tables hold several rows that differ: "tables_of_several_rows");
        or None."""
        if self.name == "any" and kind not in self.kinds:
            return f"the input has no {kind}, and the target is any (only operators the input already had)"
        runtimes = self._runtimes()
        variants = [f"constant input {i}" for i in constant_inputs]
        variants += [] if activation == "NONE" and self.name == "any" else [activation]
        variants += [] if rank is None else [f"rank {rank}"]
        variants += [] if dtype is None else [f"type {dtype}"]
        variants += [] if form is None else [f"form {form}"]
        return self._refused(kind, variants, runtimes)

    def _runtimes(self) -> tuple[str, ...]:
        """The runtimes this target must run on (every runtime of the table for "any")."""
        return tuple(_table().RUNS) if self.name == "any" else (self.name,)

    def _refused(self, kind: str, variants: Iterable[str], runtimes: tuple[str, ...]) -> str | None:
        table = _table()
        for variant in variants:
            if (kind, variant) not in table.PROBED:
                continue  # never asked: not refused
            for runtime in runtimes:
                if (kind, variant) not in table.RUNS[runtime]:
                    every = " (the target any takes only what every runtime runs)" if self.name == "any" else ""
                    return f"{runtime} does not run {_described(kind, variant)}{every}"
        return None


@functools.cache
def _table():
    """ir/runtimes.py, imported when a target is first asked: a run where no pass is about to make
    or change an op never loads the table. (Cached: an import statement per question would cost
    ~1.4 us, thousands of times on an op-heavy graph.)"""
    from ..ir import runtimes

    return runtimes


def _described(kind: str, variant: str) -> str:
    if variant == "NONE":
        return kind
    if variant.startswith("constant input"):
        return f"{kind} with a {variant}"
    if variant.startswith("rank "):
        return f"{kind} of {variant}"
    if variant.startswith("type "):
        return f"{kind} of {variant.removeprefix('type ')}"
    if variant.startswith("form "):
        return f"{kind} ({variant.removeprefix('form ').replace('_', ' ')})"
    return f"{kind} with a fused {variant}"


def first_refusal(graph: Graph, kinds: Iterable[str]) -> str | None:
    """The first reason the target of `graph` gives against one of the operator `kinds` a rewrite
    would make together (None: it runs them all)."""
    return next(filter(None, (refusal(graph, kind) for kind in kinds)), None)


def check_made(model: Model) -> None:
    """The output gate for the target: no op a pass created is one the target cannot run, and no
    op a pass changed gained what the target cannot run (a pass asks `refusal` before it rewrites;
    this holds the passes that forgot to). Raises InternalError naming the pass; costs a lookup per
    changed op."""
    for index, graph in enumerate(model.graphs):
        if graph.target is None or graph.changes is None:
            continue
        kept = graph.changes.was
        for op, by in graph.changes.ops.items():
            reason = graph.target.refusal_of(op, kept.get(op, ())) if by is not None and graph.contains(op) else None
            if reason is not None:
                raise InternalError(
                    f"pass {by} made subgraph {index} {op.kind} (output {op.outputs[0].name!r}): {reason}"
                )


def default_target(format_name: str) -> str:
    """The target of a model written in (or, when nothing is written, read from) that format."""
    return FORMAT_TARGETS[format_name]


def name_of(graph: Graph) -> str | None:
    """The target `graph` is made for: the manager's, else its model's format's (a pass run on its
    own, as in a unit test); None for a graph in no model."""
    if graph.target is not None:
        return graph.target.name
    return None if graph.model is None else default_target(graph.model.format.name)


def refusal(
    graph: Graph,
    kind: str,
    activation: str = "NONE",
    constant_inputs: Iterable[int] = (),
    *,
    rank: int | None = None,
    dtype: str | None = None,
    form: str | None = None,
) -> str | None:
    """Why the runtime `graph` is made for cannot take `kind` with `activation`, constants at
    `constant_inputs`, a first output of `rank` and `dtype`, in `form` (None: it can, or the graph
    has no target)."""
    target = graph.target
    if target is None:
        return None
    return target.refusal(kind, activation, constant_inputs, rank=rank, dtype=dtype, form=form)
