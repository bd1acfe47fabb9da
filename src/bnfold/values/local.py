"""The per-rewrite check: each rewritten region, before and after, run on its own.

Translation validation in the small: where nothing runs the whole model (custom operators) or a
whole run is too costly, every region the optimizer changed is checked by itself. It does not
depend on how the passes are written:

- Ops of the original and the optimized graph are matched by their output tensor names (bnfold
  keeps the names of tensors that survive a fold). An op is unchanged when its counterpart has the
  same kind, options, input names and constant values.
- The changed ops of both graphs, connected through the tensors they exchange and through shared
  output names, form the regions.
- A region's boundary inputs are the non-constant tensors its ops read and do not produce (they
  exist in both models); its boundary outputs are the tensors it produces that an op outside it
  reads, or that are graph outputs. Both must be the same set on both sides.
- A fold exact only given what other ops compute (a twin op's equal output, a value >= 0) names
  their outputs in its report entry's `context`; those ops count as changed, so they run too.
- Each side runs in the reference interpreter on the same random boundary inputs (normal(0, 2)
  floats, as the whole-model check), and the outputs are compared with the same criterion.

A fold may keep a tensor's name while changing its values (a scale moved backward, undone
further on): a region whose boundary output differs grows by that tensor's readers until its
outputs agree, or the difference reaches a graph output. Each region is tied to the fold-report
entries whose layer or removed ops it contains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..errors import CannotVerify, CheckFailed
from ..ir.graph import Graph, Op, Tensor
from ..ir.model import Model
from ..reference.interpreter import Interpreter
from .diff import OutputDiff, Tolerance, compare, random_input
from .strength import Spread, Strength


@dataclass
class Region:
    before: list[Op]
    after: list[Op]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    subgraph: int = 0

    @property
    def names(self) -> set[str]:
        return {t.name for op in self.before for t in op.outputs}

    def describe(self) -> str:
        kinds = lambda ops: " ".join(op.kind for op in ops) or "-"  # noqa: E731
        return f"{kinds(self.before)} -> {kinds(self.after)}"


@dataclass
class RegionResult:
    region: Region
    outputs: list[OutputDiff]
    folds: list[str] = field(default_factory=list)  # "pass at layer-output" of the report's folds
    strengths: list[Strength] = field(default_factory=list)  # how much each output's comparison proved

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    @property
    def scaled(self) -> float:
        return max((o.scaled for o in self.outputs), default=0.0)

    @property
    def max_abs(self) -> float:
        return max((o.max_abs for o in self.outputs), default=0.0)

    def as_note(self) -> dict:
        return {
            "subgraph": self.region.subgraph,
            "rewrite": self.region.describe(),
            "folds": self.folds,
            "inputs": self.region.inputs,
            "outputs": self.region.outputs,
            "passed": self.passed,
            "scaled_err": self.scaled,
            "max_abs_err": self.max_abs,
            "strength": {s.name: s.as_note() for s in self.strengths},
        }


@dataclass
class LocalResult:
    regions: list[RegionResult]
    samples: int
    tolerance: Tolerance
    backend: str = "reference interpreter, per rewrite"

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.regions)

    @property
    def scope(self) -> str:
        return f"{len(self.regions)} rewrite(s)"

    @property
    def worst(self) -> OutputDiff:
        total = OutputDiff("*")
        for r in self.regions:
            for o in r.outputs:
                total.merge(o)
        return total

    def table(self) -> str:
        lines = [f"{'rewrite':<40}  {'max abs err':>11}  {'scaled err':>11}  result"]
        for r in self.regions:
            what = r.region.describe() + (f" ({', '.join(r.folds)})" if r.folds else "")
            lines.append(f"{what:<40}  {r.max_abs:>11.3e}  {r.scaled:>11.3e}  {'ok' if r.passed else 'FAIL'}")
        return "\n".join(lines)

    def failure_message(self) -> str:
        bad = [r for r in self.regions if not r.passed]
        listed = ", ".join(f"{r.region.describe()} (scaled err {r.scaled:.3e})" for r in bad)
        return f"{len(bad)} of {len(self.regions)} rewrites outside {self.tolerance}: {listed}"


# ---- finding the regions ---------------------------------------------------------------------


def _same_value(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if hasattr(a, "fields") and hasattr(b, "fields"):
        return a.type == b.type and _same_value(a.fields(), b.fields())
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a == b


def _same_input(x, y) -> bool:
    if x is None or y is None:
        return x is None and y is None
    if x.name != y.name or x.is_const != y.is_const:
        return False
    return not x.is_const or (x.dtype == y.dtype and x.shape == y.shape and _same_value(x.buffer.data, y.buffer.data))


def _unchanged(op: Op, other: Op | None) -> bool:
    return (
        other is not None
        and other.kind == op.kind
        and [t.name for t in op.outputs] == [t.name for t in other.outputs]
        and len(op.inputs) == len(other.inputs)
        and all(_same_input(x, y) for x, y in zip(op.inputs, other.inputs))
        and _same_value(op.options, other.options)
    )


def _producers(graph: Graph) -> dict[str, Op]:
    return {t.name: op for op in graph.ops for t in op.outputs}


def find_regions(before: Graph, after: Graph, subgraph: int = 0, context: frozenset[str] = frozenset()) -> list[Region]:
    """The connected groups of changed ops (module docstring), in the original's op order; the ops
    making the tensors named in `context` (on both sides) count as changed: a fold that is exact
    only given what they compute (a twin op's equal output, a value >= 0) names them."""
    made_a, made_b = _producers(before), _producers(after)
    changed_a = [op for op in before.ops if not _unchanged(op, made_b.get(op.outputs[0].name) if op.outputs else None)]
    changed_b = [op for op in after.ops if not _unchanged(op, made_a.get(op.outputs[0].name) if op.outputs else None)]
    if context:  # in execution order, as the region runs them
        ids_a = {id(made_a[n]) for n in context if n in made_a} | set(map(id, changed_a))
        ids_b = {id(made_b[n]) for n in context if n in made_b} | set(map(id, changed_b))
        changed_a = [op for op in before.ops if id(op) in ids_a]
        changed_b = [op for op in after.ops if id(op) in ids_b]
    parent: dict[int, int] = {id(op): id(op) for op in changed_a + changed_b}

    def root(key: int) -> int:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def join(x: Op, y: Op) -> None:
        parent[root(id(x))] = root(id(y))

    for ops, made in ((changed_a, made_a), (changed_b, made_b)):
        for op in ops:
            for t in op.inputs:
                producer = made.get(t.name) if t is not None and not t.is_const else None
                if producer is not None and id(producer) in parent:
                    join(op, producer)
    for op in changed_a:
        for t in op.outputs:
            twin = made_b.get(t.name)
            if twin is not None and id(twin) in parent:
                join(op, twin)
    groups: dict[int, Region] = {}
    for side, ops in (("before", changed_a), ("after", changed_b)):
        for op in ops:
            region = groups.setdefault(root(id(op)), Region([], [], subgraph=subgraph))
            getattr(region, side).append(op)
    regions = list(groups.values())
    for region in regions:
        _set_boundary(region, before, after)
    return regions


def _boundary(ops: list[Op], graph: Graph) -> tuple[list[str], list[str]]:
    inside = set(map(id, ops))
    made = {t.name for op in ops for t in op.outputs}
    inputs = list(
        dict.fromkeys(
            t.name for op in ops for t in op.inputs if t is not None and not t.is_const and t.name not in made
        )
    )
    graph_outputs = {t.name for t in graph.outputs}
    produced = list(dict.fromkeys(t for op in ops for t in op.outputs))
    outputs = [
        t.name
        for t in produced
        if t.name in graph_outputs or any(id(user) not in inside for user in graph.consumers(t))
    ]
    return inputs, outputs


def _set_boundary(region: Region, before: Graph, after: Graph) -> None:
    in_a, out_a = _boundary(region.before, before)
    in_b, out_b = _boundary(region.after, after)
    if set(in_a) != set(in_b) and _take_shared_producers(region, set(in_a) ^ set(in_b), before, after):
        return _set_boundary(region, before, after)
    if set(out_a) != set(out_b):
        raise CannotVerify(
            f"the rewrite {region.describe()} changes which tensors leave it "
            f"({sorted(set(out_a) ^ set(out_b))}): it cannot be checked on its own"
        )
    region.inputs = list(dict.fromkeys(in_a + in_b))
    region.outputs = out_a


def _take_shared_producers(region: Region, names: set[str], before: Graph, after: Graph) -> bool:
    """A rewrite may read, instead of a tensor, another one both models compute unchanged (a layout
    change reading what was before a TRANSPOSE that stays): random values for both would be
    unrelated, so the unchanged ops making them join the region on both sides, in order. False
    when none is left to take (the names are graph inputs or made by one side only)."""
    made = _producers(before), _producers(after)
    shared = [n for n in names if n in made[0] and n in made[1]]
    grew = False
    for graph, producers, side in zip((before, after), made, (region.before, region.after)):
        new = [op for op in dict.fromkeys(producers[n] for n in shared) if op not in side]
        grew = grew or bool(new)
        side += new
        position = {id(op): i for i, op in enumerate(graph.ops)}
        side.sort(key=lambda op: position[id(op)])
    return grew


# ---- running them ----------------------------------------------------------------------------


class _Region(NamedTuple):
    """A region's ops with its inputs and outputs: what the interpreter runs (interpreter.Runnable)."""

    ops: list[Op]
    inputs: list[Tensor]
    outputs: list[Tensor]


def _run_side(model: Model, graph: Graph, ops: list[Op], inputs: dict[str, np.ndarray], outputs: list[str]):
    """The region's ops as a small graph of their own, run in the reference interpreter."""
    tensors = {t.name: t for t in graph.tensors}
    region = _Region(ops, [tensors[n] for n in inputs if n in tensors], [tensors[n] for n in outputs])
    values = [inputs[t.name] for t in region.inputs]
    return Interpreter(model).run_graph(region, values)


def fold_label(fold: dict) -> str:
    """How a rewrite's `folds` name a fold-report entry: "pass at 'layer output'"."""
    return f"{fold.get('pass')} at {fold.get('layer', {}).get('output')!r}"


def _folds_of(region: Region, folds: list[dict]) -> list[str]:
    names = region.names
    tied = []
    for f in folds:
        if f.get("subgraph", 0) != region.subgraph:
            continue
        touched = [f.get("layer", {}).get("output")] + [r.get("output") for r in f.get("removed", [])]
        if any(n in names for n in touched):
            tied.append(fold_label(f))
    return tied


def check_rewrites(
    original: Model,
    optimized: Model,
    *,
    samples: int = 1,
    seed: int = 0,
    tolerance: Tolerance = Tolerance(),
    folds: list[dict] | None = None,
    under: set[str] | None = None,
) -> LocalResult:
    """Check every rewritten region of every subgraph on its own (module docstring); with
    `under`, only the regions of subgraph 0 that feed one of those graph outputs (and every
    region of the other subgraphs, which reach the outputs only through control flow).

    A rewrite may change the values of a tensor whose name it keeps (a scale pushed backward into a
    layer, undone further on): a boundary output that differs, and is not a graph output, grows
    the region by the ops reading it, on both sides, until the region's outputs agree again or
    the difference reaches a graph output (a real difference)."""
    if len(original.graphs) != len(optimized.graphs):
        raise CannotVerify("the models have different numbers of subgraphs: rewrites cannot be matched")
    rng = np.random.default_rng(seed)
    results = []
    for index, (ga, gb) in enumerate(zip(original.graphs, optimized.graphs)):
        wanted = None if under is None or index else (_feeding(ga, under), _feeding(gb, under))
        results += _check_graph(original, optimized, ga, gb, index, rng, samples, tolerance, folds or [], wanted)
    return LocalResult(results, samples, tolerance)


def _feeding(graph: Graph, outputs: set[str]) -> set[int]:
    """The ops (by id) whose results reach one of the named graph outputs."""
    made = _producers(graph)
    seen: set[int] = set()
    stack = [made[n] for n in outputs if n in made]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        stack += [made[t.name] for t in op.inputs if t is not None and t.name in made]
    return seen


def _check_graph(original, optimized, ga, gb, index, rng, samples, tolerance, folds, wanted=None) -> list[RegionResult]:
    """Run each region; grow one whose non-graph outputs differ; a verdict is final only for the
    regions still standing at the end (a region absorbed by another is judged within it: a
    difference at a graph output may come from a boundary input that an earlier rewrite changed)."""
    tensors = ({t.name: t for t in ga.tensors}, {t.name: t for t in gb.tensors})
    graph_outputs = {t.name for t in ga.outputs} | {t.name for t in gb.outputs}
    context = frozenset(n for f in folds if f.get("subgraph", 0) == index for n in f.get("context", ()))
    regions = find_regions(ga, gb, index, context)
    owner = {id(op): region for region in regions for op in region.before + region.after}
    if wanted is not None:  # only the rewrites under some outputs (`under`)
        regions = [
            r
            for r in regions
            if any(id(op) in wanted[0] for op in r.before) or any(id(op) in wanted[1] for op in r.after)
        ]
    positions = tuple({id(op): i for i, op in enumerate(g.ops)} for g in (ga, gb))

    def alive(region: Region) -> bool:
        return owner[id((region.before + region.after)[0])] is region

    verdicts: dict[int, RegionResult] = {}
    pending = list(regions)
    while pending:
        region = pending.pop(0)
        if not alive(region):
            continue
        diffs, spreads = _run_region(original, optimized, ga, gb, region, *tensors, rng, samples, tolerance)
        grow = [d.name for d in diffs if not d.passed and d.name not in graph_outputs]
        if not grow:
            strengths = [s.strength(tolerance.rtol, tolerance.atol) for s in spreads]
            verdicts[id(region)] = RegionResult(region, diffs, _folds_of(region, folds), strengths)
            continue
        for absorbed in _grow(region, grow, (ga, gb), tensors, owner, positions):
            verdicts.pop(id(absorbed), None)
        _set_boundary(region, ga, gb)
        pending.insert(0, region)
    return [verdicts[id(r)] for r in regions if alive(r)]


def _grow(region: Region, names: list[str], graphs, tensors, owner, positions) -> list[Region]:
    """Add the readers of `names` (both sides) to `region`, with every region they belong to;
    returns the regions absorbed."""
    absorbed = []
    for graph, by_name, side in zip(graphs, tensors, (region.before, region.after)):
        for name in names:
            for user in graph.consumers(by_name[name]) if name in by_name else []:
                other = owner.get(id(user))
                if other is region:
                    continue
                if other is None:
                    side.append(user)
                    owner[id(user)] = region
                    continue
                for op in other.before + other.after:
                    owner[id(op)] = region
                region.before += other.before
                region.after += other.after
                absorbed.append(other)
    for position, side in zip(positions, (region.before, region.after)):
        side.sort(key=lambda op: position[id(op)])
    return absorbed


def _run_region(
    original, optimized, ga, gb, region, tensors_a, tensors_b, rng, samples, tolerance
) -> tuple[list[OutputDiff], list[Spread]]:
    for name in region.inputs:
        if name not in tensors_a or name not in tensors_b:
            raise CannotVerify(f"the rewrite {region.describe()} reads {name!r}, which only one model has")
    diffs, spreads = [OutputDiff(n) for n in region.outputs], [Spread(n) for n in region.outputs]
    for _ in range(samples):
        values = {n: random_input(tensors_a[n], rng) for n in region.inputs}
        want = _run_side(original, ga, region.before, values, region.outputs)
        got = _run_side(optimized, gb, region.after, values, region.outputs)
        for total, spread, n, a, b in zip(diffs, spreads, region.outputs, want, got):
            total.merge(compare(n, a, b, tolerance))
            spread.add(a)
    return diffs, spreads


def verify_rewrites(
    original: Model,
    optimized: Model,
    samples: int,
    *,
    tolerance: Tolerance = Tolerance(),
    folds: list[dict] | None = None,
    under: set[str] | None = None,
) -> LocalResult:
    """check_rewrites, raising CheckFailed (naming the failing rewrites) when one does not pass."""
    result = check_rewrites(original, optimized, samples=samples, tolerance=tolerance, folds=folds, under=under)
    if not result.passed:
        raise CheckFailed(result.failure_message(), result=result)
    return result
