"""The registry's `needs` (the operator kinds a pass needs, engine/registry.py) and the manager's
gating by them: on every recipe and fixture model, a pass whose kinds a graph lacks finds nothing
there (no fold, no refusal, the graph as it was), so runs skipping it are the runs that do not:
the same report and the same bytes; and every pass still folds somewhere with the gating on."""

from __future__ import annotations

import io

import pytest

from bn_models import apply_for_no_target
from bnfold.engine import manager
from bnfold.engine.manager import op_kinds, run_passes
from bnfold.engine.registry import PASSES, resolve
from bnfold.io.reader import read_model
from bnfold.io.writer import serialize
from bnfold.ir.ops import OPS
from conftest import DATA, RECIPES, build_recipe

FIXTURES = sorted(p for ext in ("tflite", "circle") for p in [*DATA.glob(f"*.{ext}"), *DATA.glob(f"zoo/*.{ext}")])
EVERY_KIND = frozenset(OPS) | frozenset().union(*(p.needs for p in PASSES))  # what no pass lacks
SETS = {"default": resolve(p.name for p in PASSES if p.default), "every pass": list(PASSES)}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> list:
    """Every recipe built and written in its format, then the fixture models."""
    where = tmp_path_factory.mktemp("recipes")
    return [build_recipe(p.stem, where) for p in sorted(RECIPES.glob("*.toml"))] + FIXTURES


def _bytes(model) -> bytes:
    out = io.BytesIO()
    serialize(model, out, model.format)
    return out.getvalue()


def _shape(graph) -> list:
    """The graph's structure: each op's kind, operands, outputs and options, in order."""
    return [
        (op.kind, [t and t.name for t in op.inputs], [t.name for t in op.outputs], repr(op.options)) for op in graph.ops
    ]


def test_a_pass_finds_nothing_in_a_graph_without_the_kinds_it_needs(models):
    lacking = 0
    for path in models:
        model = read_model(str(path))
        for index, graph in enumerate(model.graphs):
            kinds = op_kinds(graph)
            for spec in (s for s in PASSES if s.needs.isdisjoint(kinds)):
                before = _shape(graph)
                result = spec.run(graph)
                assert not result.folds and not result.skips, (path.name, index, spec.name)
                assert _shape(graph) == before, (path.name, index, spec.name)
                lacking += 1
        assert _bytes(model) == _bytes(read_model(str(path))), path.name
    assert lacking > 1000  # the property was tried, not vacuous


@pytest.mark.parametrize("selection", SETS)
def test_skipping_passes_without_their_kinds_changes_no_run(models, selection, monkeypatch):
    specs = SETS[selection]
    gated = [(run_passes(m := read_model(str(path)), specs).to_dict(), _bytes(m)) for path in models]
    monkeypatch.setattr(manager, "op_kinds", lambda graph: EVERY_KIND)  # no pass lacks its kinds: none skipped
    ungated = [(run_passes(m := read_model(str(path)), specs).to_dict(), _bytes(m)) for path in models]
    for path, (report, data), (want_report, want_data) in zip(models, gated, ungated):
        assert report == want_report, path.name
        assert data == want_data, path.name
    assert sum(len(report["folds"]) for report, _ in gated) > 100


# INSTANCE_NORM runs in no runtime of the target table (ir/runtimes.py): every target refuses
# fuse_instnorm's rewrite, which folds only made for no target
MADE_FOR_NO_TARGET = {"fuse_instnorm"}


def _folds(path, spec) -> list[dict]:
    model = read_model(str(path))
    if spec.name in MADE_FOR_NO_TARGET:
        return apply_for_no_target(model, spec.name).folds
    return run_passes(model, [spec]).folds


# ONE options whose rewrite bnfold refuses (each candidate reported) or which ask for what bnfold
# always does: they fold nowhere (tests/passes/test_fuse_bcq.py and its neighbours); fuse_attention,
# bnfold's, reports each attention and writes none (no target runtime runs ATTENTION)
NEVER_FOLDS = {
    "fuse_attention",
    "fuse_bcq",
    "shuffle_weight_to_16x1float32",
    "exp_disable_sep_transposeconv_actfunc",
}


@pytest.mark.parametrize("spec", PASSES, ids=lambda s: s.name)
def test_every_pass_still_folds_where_its_kinds_are(models, spec):
    folded = (path for path in models if _folds(path, spec))
    if spec.name in NEVER_FOLDS:
        assert next(folded, None) is None, f"{spec.name} folds: take it out of NEVER_FOLDS and say what it does"
        return
    assert next(folded, None) is not None, f"no recipe or fixture folds with {spec.name} alone"
