"""The region of a TRANSPOSE: every tensor its permutation is carried to, what stops it, which operands
would need a transpose into the layout, and what moving it would gain (the algebra and the cost rule:
propagation.py, which grows a region here and rewrites it there)."""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np

from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import info
from .layout import transpose_perm
from .permute import Crossing, Perm, compose, cross, inverse, is_identity, moved_shape
from .quantization import scale_count

TRANSPOSE = "TRANSPOSE"


class Region:
    __slots__ = ("carried", "seeds", "crossed", "merges", "flattens", "stops", "sides", "retargets", "conflict")

    def __init__(self):
        self.carried: dict[Tensor, Perm] = {}
        self.seeds: dict[Op, None] = {}
        self.crossed: dict[Op, Crossing] = {}
        self.merges: dict[Op, Perm] = {}  # TRANSPOSE readers -> their composed permutation
        self.flattens: dict[Op, list[Op]] = {}  # RESHAPE -> the FCs after it; FC -> [FC]
        self.stops: dict[Tensor, list[str]] = {}  # carried tensors kept for these reasons
        self.sides: dict[Tensor, Perm] = {}  # operands transposed into the layout
        self.retargets: dict[Op, Perm] = {}  # TRANSPOSEs making a carried tensor -> new perm
        self.conflict: str | None = None

    def removed(self, graph: Graph) -> int:
        return sum(op.outputs[0] not in self.stops for op in self.seeds) + sum(
            self.cancels(graph, u) for u in self.merges
        )

    def cancels(self, graph: Graph, u: Op) -> bool:
        """Whether TRANSPOSE reader `u` goes: its permutation composes to the identity, and its output
        is no graph output — or is one the op making its input can write directly under its name."""
        if not is_identity(self.merges[u]):
            return False
        t, y = u.input(0), u.outputs[0]
        return not graph.is_observed(y) or (t is not None and self.writes_directly(graph, t, u))

    def writes_directly(self, graph: Graph, t: Tensor, u: Op) -> bool:
        return t.producer in self.crossed and graph.has_single_use(t, u) and t not in self.stops

    def transposed(self) -> list[Tensor]:
        """The tensors the rewrite puts a new TRANSPOSE on: the stops but the seeds' outputs (a
        seed kept), and the sides."""
        outputs = {op.outputs[0] for op in self.seeds}
        return [t for t in self.stops if t not in outputs] + list(self.sides)

    def added(self) -> int:
        return len(self.transposed())

    def gain(self, graph: Graph) -> int:
        return -1 if self.conflict else self.removed(graph) - self.added()

    def why_not(self, graph: Graph, seed: Op) -> str:
        """Why the region of `seed` is not rewritten (one line for the report)."""
        if self.conflict:
            return self.conflict
        removed, added = self.removed(graph), self.added()
        if removed == added == 0 and seed.outputs[0] in self.stops:
            return "; ".join(self.stops[seed.outputs[0]])
        reasons = list(dict.fromkeys(r for rs in self.stops.values() for r in rs))
        reasons += [f"{t.name!r} would need a transpose into the layout" for t in self.sides]
        return (
            f"moving it would add {added} transpose(s) to remove {removed} ({'; '.join(reasons) or 'nothing meets it'})"
        )


def crossing_giving(u: Op, wanted: Perm, output: int = 0) -> tuple[Perm, Crossing] | None:
    """(s, crossing) for a data input of `u` carrying s that leaves u's `output` carrying `wanted`."""
    for t in (x for x in u.inputs if x is not None and not x.is_const and len(x.shape) <= 6):
        for s in itertools.permutations(range(len(t.shape))):
            crossing = cross(u, t, s)
            if isinstance(crossing, Crossing) and crossing.outputs[output] == wanted:
                return s, crossing
    return None


def grow(graph: Graph, seed: Op, scope, sides_allowed: bool, absorb: bool = False) -> Region:
    region = Region()
    work: deque[Tensor] = deque()

    def carry(t: Tensor, p: Perm) -> None:
        region.carried[t] = p
        work.append(t)

    def add_seed(op: Op) -> None:
        region.seeds[op] = None
        perm = transpose_perm(op)
        assert perm is not None  # a seed is a TRANSPOSE that only permutes
        carry(op.outputs[0], perm)

    add_seed(seed)
    while work and region.conflict is None:
        t = work.popleft()
        p = region.carried[t]
        if graph.is_observed(t):
            region.stops.setdefault(t, []).append(f"it reaches graph output {t.name!r}")
        for u in graph.consumers(t):
            if u in region.seeds or u in region.retargets:  # a carried tensor's TRANSPOSE moved already
                region.conflict = f"TRANSPOSE -> {u.outputs[0].name!r} would be moved twice"
            if u in region.crossed or u in region.merges or u in region.flattens or u in region.seeds:
                continue
            why = _visit(graph, region, u, t, p, scope, sides_allowed, add_seed, carry, absorb)
            if why:
                region.stops.setdefault(t, []).append(why)
    if region.conflict is None:
        _collect_sides(region)
    return region


def _visit(
    graph, region: Region, u: Op, t: Tensor, p: Perm, scope, sides_allowed, add_seed, carry, absorb: bool
) -> str | None:
    """Take reader `u` of carried `t` into the region; the reason it cannot take the layout."""
    where = f"reader {u.kind}{'' if u.index is None else f' #{u.index}'}"
    if u.kind == TRANSPOSE:
        q = transpose_perm(u)
        if q is None or u.input(0) is not t:
            return f"{where} has a non-constant permutation"
        region.merges[u] = compose(p, q)
        return None
    if scope is None and (fcs := _flatten_readers(graph, u, t, p)) is not None:
        region.flattens[u] = fcs
        return None
    if info(u.kind).layout in (None, "transpose"):
        return f"{where} cannot take the other layout"
    crossing = cross(u, t, p)
    if isinstance(crossing, str):
        return f"{where} cannot take the other layout ({crossing})"
    if scope is not None and info(u.kind).layout not in scope:
        return f"{where} is not among the operators this pass moves transposes across"
    problem = quantization_problem(u, crossing)
    if problem:
        return f"{where}: {problem}"
    for i in crossing.data:
        s = u.inputs[i]
        if s is None:
            return f"{where} has no input {i}"
        if s is t or s in region.carried:
            continue
        if _seedable(region, s, p) and s.producer is not None:
            add_seed(s.producer)
        elif absorb and _absorb(graph, region, s, p, add_seed, carry):
            continue
        elif not sides_allowed:
            return f"{where} also reads {s.name!r}, which is not in the same layout"
    region.crossed[u] = crossing
    for out, q in zip(u.outputs, crossing.outputs):
        if q is not None:
            carry(out, q)
    return None


def _absorb(graph: Graph, region: Region, s: Tensor, p: Perm, add_seed, carry) -> bool:
    """Take the ops making operand `s` into the region backward, so that s carries p without a new
    transpose: each crosses with its data operands carrying some permutation, back to TRANSPOSEs
    (seeds when their permutation is that one, else they make the carried tensor directly with a
    composed permutation: a channel shuffle). All or nothing; their other outputs are carried on."""
    plan = _plan_back(graph, region, s, p)
    if plan is None:
        return False
    crossed, seeds, retargets = plan
    region.crossed.update(crossed)
    for op in seeds:
        add_seed(op)
    for op, (q, carried) in retargets.items():
        region.retargets[op] = q
        carry(op.outputs[0], carried)
    for op, crossing in crossed.items():
        for out, q in zip(op.outputs, crossing.outputs):
            if q is not None and out not in region.carried:
                carry(out, q)
    return True


def _plan_back(graph: Graph, region: Region, s: Tensor, p: Perm):
    """(ops crossed, seeds, TRANSPOSEs retargeted -> (new perm, perm carried)) making s carry p, or None."""
    crossed: dict[Op, Crossing] = {}
    seeds: dict[Op, None] = {}
    retargets: dict[Op, tuple[Perm, Perm]] = {}
    wanted: dict[Tensor, Perm] = {}
    todo = [(s, p)]
    while todo:
        t, p = todo.pop()
        op = t.producer
        if wanted.setdefault(t, p) != p or t in region.sides:
            return None
        if op is None or any(op in part for part in (region.merges, region.flattens, region.seeds, region.crossed)):
            return None
        if op in crossed or op in seeds or op in retargets:
            if op in crossed and crossed[op].outputs[op.outputs.index(t)] != p:
                return None
            continue
        if op.kind == TRANSPOSE:
            r = transpose_perm(op)
            if r is None or op.inputs[0] in region.carried or (r != p and graph.is_observed(t)):
                return None
            if r == p:
                seeds[op] = None
            else:
                retargets[op] = (compose(r, inverse(p)), p)
            continue
        found = None if info(op.kind).layout in (None, "transpose") else crossing_giving(op, p, op.outputs.index(t))
        if found is None or quantization_problem(op, found[1]):
            return None
        crossed[op] = crossing = found[1]
        for i in crossing.data:
            d = op.inputs[i]
            if d is None:
                return None
            if d in region.carried:
                if region.carried[d] != crossing.perm:
                    return None
            else:
                todo.append((d, crossing.perm))
    return crossed, seeds, retargets


def _seedable(region: Region, s: Tensor, p: Perm) -> bool:
    producer = s.producer
    return (
        producer is not None
        and producer.kind == TRANSPOSE
        and producer not in region.merges
        and producer.inputs[0] not in region.carried
        and transpose_perm(producer) == p
    )


def quantization_problem(u: Op, crossing: Crossing) -> str | None:
    for index in crossing.consts:
        const = u.inputs[index]
        if const is None:
            continue
        q = const.quantization
        if q is not None and scale_count(q) > 1:
            return f"its constant {const.name!r} is quantized per channel"
    return None


def _collect_sides(region: Region) -> None:
    for u, crossing in region.crossed.items():
        for i in crossing.data:
            s = u.inputs[i]
            if s is None:
                continue
            want = region.carried.get(s, region.sides.get(s, crossing.perm))
            if want != crossing.perm:
                region.conflict = (
                    f"{u.kind} -> {u.outputs[0].name!r} would read {s.name!r} in two layouts "
                    f"({list(want)} and {list(crossing.perm)})"
                )
                return
            if s not in region.carried:
                region.sides[s] = crossing.perm


def _flatten_readers(graph: Graph, u: Op, t: Tensor, p: Perm) -> list[Op] | None:
    """The FULLY_CONNECTED layers flattening carried `t` (batch first and kept) to [N, features]:
    `u` itself when it reads t without keep_num_dims, or those reading `u`, a RESHAPE to [N,
    features], when they alone read it; and their weights can take permuted columns."""
    if p[0] != 0 or len(t.shape) < 3:
        return None
    if u.kind == "FULLY_CONNECTED":
        flat = u.input(0) is t and not getattr(u.options, "keepNumDims", False)
        return [u] if flat and _takes_columns(u, t, int(np.prod(t.shape[1:], dtype=np.int64))) else None
    out = u.outputs[0] if len(u.outputs) == 1 else None
    if (
        u.kind != "RESHAPE"
        or u.input(0) is not t
        or out is None
        or len(out.shape) != 2
        or out.shape[0] != t.shape[0]
        or graph.is_observed(out)
        or int(np.prod(t.shape[1:])) != out.shape[1]
    ):  # shapes that disagree (a corrupt file): no flatten
        return None
    readers = graph.consumers(out)
    if not all(
        fc.kind == "FULLY_CONNECTED" and fc.input(0) is out and _takes_columns(fc, out, out.shape[1]) for fc in readers
    ):
        return None
    return readers or None


def _takes_columns(fc: Op, x: Tensor, features: int) -> bool:
    """fc reads x as data only and has constant [units, features] weights, not quantized per column."""
    w = fc.input(1)
    return (
        w is not None
        and w.is_const
        and len(w.shape) == 2
        and w.shape[1] == features
        and x not in fc.inputs[1:]
        and getattr(w.quantization, "quantizedDimension", 0) in (0, None)
    )


def feature_order(shape, p: Perm) -> np.ndarray:
    """g with x[f] = x'[g[f]]: x the flattened t (batch first), x' the flattened t'."""
    moved = moved_shape(shape, p)
    index = np.arange(int(np.prod(moved[1:], dtype=np.int64))).reshape(moved[1:])
    return np.transpose(index, [a - 1 for a in p[1:]]).reshape(-1)
