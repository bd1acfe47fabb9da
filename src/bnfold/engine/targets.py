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
(exit 3, naming it), never a model the target refuses. Some faults are about the graph around an
op, not the op: onert (its Python API) may overwrite a graph output that another op reads. A graph
that holds one, or an op in a form the runtime computes otherwise than the model says, is left as
it is (`left_as_is`, asked by the manager before any pass: what the runtime computed on it was the
luck of its plan); a rewrite that would add a reader to a graph output asks `unkept_output`, and the
gate holds the passes that forgot to. A pass whose rewrite only one runtime wants
(not a refusal: LiteRT runs both forms, slower) reads the target's name (`name_of`:
replace_non_const_fc_with_batch_matmul).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from ..errors import InternalError, UsageError
from ..ir.graph import Graph, Op, Tensor
from ..ir.model import Format, Model

TARGETS = ("litert", "onert", "any")
OUTPUT_READ = "form reads_graph_output"  # the table's variant: a graph output that an op of the kind reads
DEQUANTIZE_READ = "form reads_float16_dequantize_output"  # ... one a float16 constant's DEQUANTIZE writes
PLANNED = ("rank ", "type ", "form ")  # the variants whose miscomputation left_as_is heeds
FORMAT_TARGETS = {"tflite": "litert", "circle": "onert"}  # io/formats.py Format.name -> default target


class Target:
    """`name`: one of TARGETS; `kinds`: the input's operator kinds (for "any"); `writes`: the format
    the model will be written in (its operator kinds are what a pass may make: match.format_has),
    None when that is the model's own."""

    def __init__(self, name: str, kinds: frozenset[str] = frozenset(), writes: Format | None = None):
        if name not in TARGETS:
            raise UsageError(f"target must be one of {', '.join(TARGETS)}, not {name!r}")
        self.name, self.kinds, self.writes = name, kinds, writes

    @classmethod
    def of(cls, name: str, model: Model, writes: Format | None = None) -> Target:
        """The target `name` for `model` as it is before any pass runs, written in `writes` (None:
        the model's own format)."""
        return cls(name, frozenset(op.kind for g in model.graphs for op in g.ops), writes or model.format)

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

    def left_as_is(self, graph: Graph) -> str | None:
        """Why no pass may change `graph` for this target (None: they may): the runtime computes the
        input otherwise than the model says, in a way its own memory or shape plan decides, so what
        ran right on it did so by luck a rewrite can change. Either an op in a rank, type or form
        the runtime runs computing something else (ir/miscomputed.py: onert's keep_num_dims
        FULLY_CONNECTED, its MINIMUM of rank 5), or a graph output another op reads (onert frees it
        after its last reader: `unkept_output`). A kind or a fused activation computed otherwise is
        so whatever the plan (LiteRT ignores a fused TANH): the passes may replace it."""
        from ..ir.miscomputed import OTHERWISE  # small: the table itself only where an output is read

        runtimes = self._runtimes()
        anywhere = frozenset().union(*(OTHERWISE[r] for r in runtimes))  # one look-up a variant (every op is asked)
        for op in graph.ops:
            for variant in op.runtime_variants():
                if (op.kind, variant) not in anywhere or not variant.startswith(PLANNED):
                    continue  # a kind or a fused activation computed otherwise is so always: a pass may replace it
                wrong = next(r for r in runtimes if (op.kind, variant) in OTHERWISE[r])
                what = _described(op.kind, variant)
                return f"{wrong} runs {what} computing something else (output {op.outputs[0].name!r})"
        return self.unkept_output(graph)

    def unkept_output(self, graph: Graph, readers: Iterable[tuple[Tensor, str]] = ()) -> str | None:
        """Why the runtime may not keep a graph output of `graph` that another op reads (onert may
        overwrite any; LiteRT's default XNNPACK run leaves one a float16 constant's DEQUANTIZE writes
        uncomputed when it delegates the reader), counting the (output, reader kind) pairs a rewrite
        would add (`readers`); None when it keeps them."""
        observed = set(graph.outputs)
        pairs = [(t, r.kind) for t in graph.outputs for r in graph.consumers(t)]
        for t, kind in [*pairs, *((t, k) for t, k in readers if t in observed)]:
            for runtime in self._runtimes():
                if not _keeps_read_output(runtime, kind, OUTPUT_READ):
                    return f"{runtime} may overwrite a graph output another op reads ({t.name!r}, read by {kind})"
                if _dequantizes_float16_constant(t.producer) and not _keeps_read_output(runtime, kind, DEQUANTIZE_READ):
                    return (
                        f"{runtime}'s default delegate leaves uncomputed a graph output that a float16 constant's"
                        f" DEQUANTIZE writes ({t.name!r}) once a {kind} it delegates reads it"
                    )
        return None

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


def _keeps_read_output(runtime: str, kind: str, variant: str) -> bool:
    """Whether `runtime` keeps a graph output that an op of `kind` reads (`variant`: any such output,
    or one a float16 constant's DEQUANTIZE writes). The table probes it per reader kind; a kind it
    did not probe counts as failing where every probed kind failed (then the fault is the runtime's
    memory plan, not the reader's: onert 0.1.0's)."""
    table = _table()
    if (kind, variant) in table.PROBED:
        return (kind, variant) in table.RUNS[runtime]
    return _some_reader_kept(runtime, variant)


@functools.cache
def _some_reader_kept(runtime: str, variant: str) -> bool:
    table = _table()
    return any((k, v) in table.RUNS[runtime] for k, v in table.PROBED if v == variant)


def _dequantizes_float16_constant(op: Op | None) -> bool:
    x = None if op is None or op.kind != "DEQUANTIZE" else op.input(0)
    return x is not None and x.is_const and x.dtype == "FLOAT16"


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
        if graph.changes.passes:  # a graph no pass changed is the input's (or left as it is)
            _check_outputs_kept(graph, index)


def _check_outputs_kept(graph: Graph, index: int) -> None:
    """No pass made a graph output another op reads where the runtime may not keep it (the input
    had none: a graph with one is left as it is, Target.left_as_is). Names the pass that changed
    the output's producer or a reader."""
    assert graph.target is not None and graph.changes is not None
    reason = graph.target.unkept_output(graph)
    if reason is None:
        return
    ops = graph.changes.ops
    outputs = [t for t in graph.outputs if graph.consumers(t)]
    near = [op for t in outputs for op in (t.producer, *graph.consumers(t)) if op is not None and ops.get(op)]
    by = ops[near[0]] if near else ", ".join(graph.changes.passes) or "a pass"
    raise InternalError(f"pass {by} left subgraph {index} so: {reason}")


def default_target(format_name: str) -> str:
    """The target of a model written in (or, when nothing is written, read from) that format."""
    return FORMAT_TARGETS[format_name]


def written_format(graph: Graph) -> Format | None:
    """The format `graph`'s model will be written in: the manager's target's (a .tflite input
    written as .circle is Circle), else, for a graph without one (a unit test), the model's own."""
    if graph.target is not None and graph.target.writes is not None:
        return graph.target.writes
    return None if graph.model is None else graph.model.format


def writes_circle(graph: Graph) -> bool:
    """Whether `graph`'s model will be written as Circle (`written_format`)."""
    written = written_format(graph)
    return written is not None and written.name == "circle"


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


def unkept_output(graph: Graph, readers: Iterable[tuple[Tensor, str]]) -> str | None:
    """Why the runtime `graph` is made for may not keep its graph outputs once the (output, reader
    kind) pairs `readers` read them too (onert may overwrite a graph output another op reads);
    None: it keeps them, or the graph has no target."""
    target = graph.target
    return None if target is None else target.unkept_output(graph, readers)
