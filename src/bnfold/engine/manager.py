"""Runs passes over every subgraph until nothing changes, and collects what they did.

Like ONE's restart strategy, a change by any pass starts another round of all selected passes,
so folds cascade. Rounds are capped (MAX_ROUNDS), so no input can make the manager loop forever.
What passes refuse is kept only from the final round: a candidate skipped early may fold once
another pass has run. At the end the skip list is made from it by construction: exactly one entry
per batch-norm candidate left in the model, none for any other op, apart from it one entry per
TRANSPOSE left (leftovers.py), and each fold names the ops of the output that took it in (`into`).
A pass runs on a graph only where it finds an operator kind it needs (registry.PassSpec.needs).
Every graph carries the Target the model is made for (targets.py): what a pass may introduce;
the output gate refuses an op a pass made that the target cannot run (targets.check_made). A graph
the target's runtime computes by the luck of its own plan (targets.Target.left_as_is: onert and a
graph output another op reads) gets no pass at all, and the report's `target` says why.
After the rounds, what no op reads any more goes from every graph (deadcode.py), once.
A graph the input held without a LiteRT in-place clobber leaves without one (planner.py).

Each graph records the ops a pass creates or changes as it runs (`graph.changes`, naming the
pass); after the last round the model goes through the output gate (ir/invariants.py:
check_output), so a pass that broke the graph is an InternalError naming it (exit 3) before
anything checks values or writes a file. The gate here also holds the passes to the model's
interface: every graph input and output keeps its shape, except those the interface parameters
made NHWC, each permuted exactly once (`check_interface`). A graph the passes left untouched
(`untouched`: still sound since the reader, no pass said it changed it) has nothing new to check:
the gate's sweep and the planner's second simulation are not run on it.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from ..errors import BnfoldError, InternalError
from ..ir.changes import Changes
from ..ir.graph import Graph
from ..ir.invariants import check_output, culprit
from ..ir.model import Format, Model
from .deadcode import orphan_buffers, remove_dead_code, sweep
from .leftovers import explain, transposes_left
from .registry import PassSpec
from .report import Report
from .targets import Target, check_made, default_target

if TYPE_CHECKING:
    from .planner import Overwrites

MAX_ROUNDS = 50
LEFT_WHY = "left as it is (the runtime computes it right only by the luck of a plan a rewrite may change)"
REORDERED_WHY = "run earlier, so LiteRT reads their inputs before an op in place overwrites them (engine/planner.py)"
KEPT_WHY = "their reads keep LiteRT from running another op in place over a buffer still read (engine/planner.py)"


def run_passes(
    model: Model,
    specs: list[PassSpec],
    *,
    parameters: AbstractSet[str] = frozenset(),
    max_rounds: int = MAX_ROUNDS,
    target: str | None = None,
    writes: Format | None = None,
    plan_input: bool = True,
) -> Report:
    """Run `specs` to a fixpoint for the runtime `target` ("litert", "onert", "any"; None: the
    format's, targets.default_target) and the format the model will be written in (`writes`; None:
    its own); a pass named with its `parameters` first changes the model's interface, once (its
    spec's change_interface). `plan_input`: simulate LiteRT's plan of the input before the passes
    (check_in_place); False, for a caller that can run them again on the same input: not taken,
    and a graph the passes leave with any clobber raises InputPlanNeeded."""
    report = Report([s.name for s in specs])
    report.target = target or default_target((writes or model.format).name)
    made_for = Target.of(report.target, model, writes)
    for graph in model.graphs:
        graph.target = made_for
    left = {i: why for i, g in enumerate(model.graphs) if specs and (why := made_for.left_as_is(g))}
    orphans = orphan_buffers(model) if specs else 0  # before the passes: what the input brought dead
    inherited = _input_plans(model) if specs and plan_input else None
    interface = [_interface(graph) for graph in model.graphs]
    to_nhwc = None
    recorders = [graph.changes or Changes() for graph in model.graphs]
    for graph, changes in zip(model.graphs, recorders, strict=True):
        graph.changes = changes
    for spec in specs:
        named = set(parameters) & set(spec.parameters)
        if named and model.graphs and spec.interface is not None:
            to_nhwc = spec.name, spec.interface.permutation
            recorders[0].running = spec.name
            report.interface = {"parameters": sorted(named), **spec.change_interface(model.graphs[0], named)}
            model.changed |= bool(report.interface["inputs"] or report.interface["outputs"])
    # per graph, its state after a sweep that kept no dead op: the last sweep would find it clean
    clean: list[tuple[int, int] | None] = [None] * len(model.graphs)
    for round_no in range(1, max_rounds + 1):
        report.rounds = round_no
        report.said.clear()
        report.not_folded.clear()
        report.unsupported.clear()
        changed = False
        kinds = [set() if index in left else op_kinds(graph) for index, graph in enumerate(model.graphs)]
        for spec in specs:
            for index, graph in enumerate(model.graphs):
                # a pass without the kinds it needs in this graph has no candidate here: it would
                # fold nothing and refuse nothing, so skipping it (and its import) leaves the
                # report as it was. The kinds are the graph's as the pass would see it: taken
                # again after every change (a fold may add the kind a later pass needs).
                if spec.needs.isdisjoint(kinds[index]):
                    continue
                recorders[index].running = spec.name
                result = _run(spec, graph, index)
                report.add(spec.name, index, result)
                if result.changed:
                    recorders[index].passes[spec.name] = None
                    changed = True
                    model.changed = True
                    kept = sweep(graph)
                    clean[index] = None if kept else _state(graph, recorders[index])
                    kinds[index] = op_kinds(graph)
        if not changed:
            break
    else:
        report.converged = False
    if specs:
        unchanged = {i for i, graph in enumerate(model.graphs) if clean[i] == _state(graph, recorders[i])}
        dead, kept = remove_dead_code(model, orphans, swept=unchanged)
        if any(dead.values()):
            report.notes.append({"dead_code_removed": dead})
        if kept:
            report.notes.append({"dead_code_kept": {"operators": kept, "why": KEPT_WHY}})
    for index, why in left.items():
        report.unsupported.append({"at": f"subgraph {index}", "reason": f"{LEFT_WHY}: {why}"})
    for changes in recorders:
        changes.running = None  # what library code changes from now on is not a pass's
    check_interface(model, interface, report.interface, to_nhwc)
    moved = check_in_place(model, inherited) if specs else 0
    if moved:
        report.notes.append({"reordered": {"operators": moved, "why": REORDERED_WHY}})
    if not all(untouched(graph) for graph in model.graphs):
        check_output(model)
    check_made(model)
    report.skips = explain(model, report.said, report.passes)
    report.transposes = transposes_left(model, report.said, report.passes)
    report.settle_into(model.graphs)
    return report


class InputPlanNeeded(Exception):
    """A graph left the passes with a clobber, and the run did not simulate the input's plan
    (run_passes(plan_input=False)): whether the input had it cannot be told now. The caller runs
    the passes again on the input read anew, with its plan."""


def _input_plans(model: Model) -> list[Overwrites]:
    """Each graph's clobbers in LiteRT's plan of the input, which the output may keep."""
    from .planner import overwrites  # loaded by a run that asks for the plan (or finds a clobber)

    return [overwrites(graph) for graph in model.graphs]


def check_in_place(model: Model, inherited: list[Overwrites] | None) -> int:
    """No graph leaves the passes with a clobber (planner.py) its input did not have. One a
    rewrite made is first undone by order (run_readers_first: the late readers run before the op
    that would overwrite what they read); one left is bnfold's bug, exit 3, and nothing is written.
    Without the input's plans (`inherited` None), a graph left without any clobber has no new one,
    and one with a clobber raises InputPlanNeeded (nearly every model has none: simulating the
    input first costs a 36k-operator graph ~0.06 s and every run the planner's import).
    Returns how many ops were moved."""
    moved = 0
    for index, graph in enumerate(model.graphs):
        if untouched(graph):
            continue
        from .planner import clobbers, new_clobbers, run_readers_first  # (a graph the passes changed)

        if inherited is None:
            if clobbers(graph):
                raise InputPlanNeeded(f"subgraph {index} has a clobber")
            continue
        known = inherited[index]
        if not new_clobbers(graph, known):
            continue
        moved += run_readers_first(graph, known)
        for clobber in new_clobbers(graph, known)[:1]:
            by = culprit(model, clobber.writer, clobber.reader)
            raise InternalError(f"{by} left subgraph {index} unsafe: {clobber.describe()}")
    if moved:
        model.changed = True
    return moved


def _state(graph: Graph, changes: Changes) -> tuple[int, int]:
    """What tells a graph unchanged since: the mutations its record counted, and its tensors (a
    tensor added without an op is no recorded mutation, and the sweep would remove it)."""
    return changes.edits, len(graph.tensors)


def untouched(graph: Graph) -> bool:
    """The graph is as the reader (or the last gate) left it: sound (no mutation method touched it
    and no op left it since, ir/changes.py: Changes) and no pass said it changed it. Its
    checks after the rounds are the ones it passed then: the gate's sweep and the planner's
    simulation would find what they found on the input, so they are not run again."""
    changes = graph.changes
    return changes is not None and changes.sound and not changes.passes


def _run(spec: PassSpec, graph: Graph, index: int):
    """One pass over one graph; a pass that crashes is bnfold's bug, told with the pass's name
    (BNFOLD_DEBUG=1 shows the traceback, exits.py)."""
    try:
        return spec.run(graph)
    except BnfoldError:
        raise
    except Exception as e:
        raise InternalError(f"pass {spec.name} failed on subgraph {index}: {type(e).__name__}: {e}") from e


def op_kinds(graph: Graph) -> set[str]:
    """The operator kinds in `graph` (one sweep, like the cleanup after a change)."""
    return {op.kind for op in graph.ops}


def _interface(graph: Graph) -> dict[str, list[tuple[int, ...]]]:
    """The shapes of a graph's inputs and outputs, by position."""
    return {"input": [t.shape for t in graph.inputs], "output": [t.shape for t in graph.outputs]}


def check_interface(model: Model, before: list[dict], interface: dict | None, to_nhwc: tuple | None) -> None:
    """Every graph input and output has the shape it had before the run, except in graph 0 those
    the interface change lists (`interface`: Report.interface), which are `to_nhwc` = (pass name,
    permutation) of it, once, wherever the tensor sits. Raises InternalError naming the pass."""
    for g_index, (graph, shapes) in enumerate(zip(model.graphs, before, strict=True)):
        for side, tensors in (("input", graph.inputs), ("output", graph.outputs)):
            made_nhwc = {r["name"] for r in interface[f"{side}s"]} if interface and g_index == 0 else set()
            if len(tensors) != len(shapes[side]):
                raise InternalError(
                    f"{culprit(model, None)} left graph {g_index} with {len(tensors)} {side}s, not {len(shapes[side])}"
                )
            for position, (t, was) in enumerate(zip(tensors, shapes[side], strict=True)):
                expected, by = was, None
                if t.name in made_nhwc and to_nhwc is not None:
                    name, perm = to_nhwc
                    expected, by = tuple(was[i] for i in perm), f"pass {name}"
                if t.shape != expected:
                    by = by or culprit(model, t.producer)  # only now: it sweeps the recorded changes
                    raise InternalError(
                        f"{by} made graph {g_index} {side} {position} {t.name!r} {list(t.shape)}, "
                        f"not {list(expected)} (was {list(was)})"
                    )
