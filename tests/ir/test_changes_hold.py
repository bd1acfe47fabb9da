"""The gate's look at what changed (ir/invariants.py: changes_hold) against the whole check it
stands in for (validate_model), on the fuzzers' graphs (tests/o1_fuzzing.py's O1 patterns and
near misses, tests/layout_fuzzing.py's layout-heavy and in-place graphs): as the passes leave
them, and after a random fault made through the graph's mutation methods inside a pass (a read
of nothing, a second writer, a backward edge or a cycle, a producer removed, an output taken
over, a wrong options table). changes_hold may say "holds" only where the whole check passes;
any disagreement fails. The counts make sure both sides were exercised: faults the whole check
refuses, and graphs the narrowed check judged without falling back."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from bnfold.api import apply_passes
from bnfold.engine import manager
from bnfold.errors import ModelError
from bnfold.io.reader import read_model
from bnfold.ir import invariants
from bnfold.ir.graph import Graph, Options
from bnfold.selection import select
from layout_fuzzing import in_place_graph, random_graph
from o1_fuzzing import o1_graph, to_bytes

SEEDS = range(40)


class Judged(Exception):
    """Raised in place of the gate once both checks have judged the graph."""


def verdicts(model) -> tuple[bool, bool]:
    """(changes_hold for every graph, validate_model passes); the record is read first, since
    validate_model refreshes what it keeps of the order."""
    narrowed = all(invariants.changes_hold(model, graph) for graph in model.graphs)
    try:
        invariants.validate_model(model, None)
    except ModelError:
        return narrowed, False
    return narrowed, True


def _fault(rng: random.Random, graph: Graph) -> str:
    """One random edit through the mutation methods, as a broken pass would make it."""
    ops = graph.ops
    op, other = rng.choice(ops), rng.choice(ops)
    x = next((t for t in op.inputs if t is not None), None)
    kind = rng.choice(["unproduced", "second_writer", "backward", "self_loop", "removed", "taken", "options", "none"])
    if kind == "unproduced" and x is not None:
        graph.set_input(op, op.inputs.index(x), graph.add_tensor("fault", x.dtype, x.shape))
    elif kind == "second_writer" and x is not None and op.outputs:
        graph.add_op("ABS", [x], [op.outputs[0]], after=op)
    elif kind == "backward" and x is not None and other.outputs:
        graph.set_input(op, op.inputs.index(x), other.outputs[0])
    elif kind == "self_loop" and x is not None and op.outputs:
        graph.set_input(op, op.inputs.index(x), op.outputs[0])
    elif kind == "removed":
        graph.remove_op(op)
    elif kind == "taken" and other.outputs and op is not other and op.outputs:
        graph.set_output(other, 0, op.outputs[0])
    elif kind == "options":
        op.options = Options("Conv2DOptions", padding=1, strideW=0, strideH=1)
    else:
        return "none"
    return kind


def _run(model_bytes: bytes, passes: list[str], tmp_path, rng: random.Random, counts: Counter, monkeypatch) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(model_bytes)
    model = read_model(str(path))

    def judge(model, path=None):
        narrowed, whole = verdicts(model)
        assert whole, "the passes left a graph the reader refuses"
        assert not narrowed or whole
        counts["passes, narrowed held" if narrowed else "passes, fell back"] += 1
        graph = model.graphs[0]
        if graph.ops:
            graph.changes.running = "fault"
            kind = _fault(rng, graph)
            graph.changes.running = None
            narrowed, whole = verdicts(model)
            assert not (narrowed and not whole), f"changes_hold passed a {kind} fault the reader refuses"
            counts[f"fault {kind}, whole {'passes' if whole else 'refuses'}"] += 1
            counts["faults refused"] += not whole
            counts["faults judged by the record alone"] += narrowed
        raise Judged

    monkeypatch.setattr(manager, "check_output", judge)
    try:
        apply_passes(model, passes)
        counts["untouched (no gate)"] += 1
    except Judged:
        pass


def _cases():
    for seed in SEEDS:
        yield f"o1 {seed}", to_bytes(o1_graph(seed).recipe)
        yield f"layout {seed}", to_bytes(random_graph(seed))
        yield f"in place {seed}", to_bytes(in_place_graph(seed))


def test_changes_hold_never_passes_what_the_whole_check_refuses(tmp_path, monkeypatch):
    o1 = select("O1", {}, default=False).names()
    default = select(None, {}, default=True).names()
    counts: Counter = Counter()
    rng = random.Random(0)
    np.random.seed(0)
    for _name, data in _cases():
        if data is None:
            continue
        for passes in (default, o1):
            _run(data, passes, tmp_path, rng, counts, monkeypatch)
    assert counts["faults refused"] >= 50, dict(counts)
    assert counts["passes, narrowed held"] >= 50, dict(counts)
    assert counts["faults judged by the record alone"] >= 20, dict(counts)
