"""The report's invariant on every recipe and every real-exporter fixture: after an optimize run, the
skip list has exactly one entry for each batch-norm candidate in the model as written and read
back, none for any other op, each with a reason (engine/leftovers.py); and the report's
`transposes` one entry with a reason for each TRANSPOSE left.

The written model is enumerated afresh (candidates.candidates on the file read back) and matched
to the report by subgraph, kind and output tensor name — the same link `bnfold inspect --leftovers
--report` relies on."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bnfold import api
from bnfold.engine.candidates import candidates
from bnfold.io.atomic import save_model
from bnfold.io.reader import read_model
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.recipe.rules import expectation
from conftest import DATA, RECIPES

RECIPE_NAMES = sorted(p.stem for p in RECIPES.glob("*.toml"))
# the layout repros (issue 38) are models bnfold gets wrong until their fixes land: their own test
# (tests/ir/test_gate.py) holds them to exit 3 with nothing written, or a sound output
MODELS = sorted(
    p.relative_to(DATA).as_posix()
    for p in DATA.rglob("*")
    if p.suffix in (".tflite", ".circle") and "layout_repros" not in p.parts and "layout_known" not in p.parts
)
# the last resort of leftovers.position_reason: no recipe or fixture should need it
GENERIC = "no pass that ran matched it"


def check_invariant(model, passes, tmp_path, suffix) -> list[dict]:
    report = api.apply_passes(model, passes)
    out = tmp_path / f"out{suffix}"
    save_model(model, str(out), model.format)
    written = read_model(str(out))
    want = Counter((gi, c.op.kind, c.op.outputs[0].name) for gi, g in enumerate(written.graphs) for c in candidates(g))
    got = Counter((s["subgraph"], s["at"]["kind"], s["at"]["output"]) for s in report.skips)
    assert got == want, (got - want, want - got)
    assert all(n == 1 for n in got.values()), [k for k, n in got.items() if n > 1]
    for s in report.skips:
        assert isinstance(s["reason"], str) and s["reason"] and GENERIC not in s["reason"], s
        assert set(s["reasons"]) <= set(report.passes) and all(s["reasons"].values())
        assert s["pass"] is None if not s["reasons"] else s["reasons"][s["pass"]] == s["reason"]
        assert s["at"] in s["chain"]
    assert len(json.loads(report.to_json())["skips"]) == len(report.skips)
    transposes = Counter(
        (gi, op.outputs[0].name) for gi, g in enumerate(written.graphs) for op in g.ops if op.kind == "TRANSPOSE"
    )
    assert Counter((t["subgraph"], t["at"]["output"]) for t in report.transposes) == transposes
    assert all(t["reason"] and GENERIC not in t["reason"] for t in report.transposes), report.transposes
    return report.skips


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_every_recipe_has_one_entry_per_candidate_left(name, tmp_path):
    recipe = load_recipe(RECIPES / f"{name}.toml")
    fmt = recipe_format(recipe)
    own = expectation(recipe).passes
    for passes in [None] + ([own] if own is not None else []):
        check_invariant(build(recipe, fmt, where=name), passes, tmp_path, fmt.extension)


@pytest.mark.parametrize("name", MODELS)
def test_every_fixture_has_one_entry_per_candidate_left(name, tmp_path):
    path = DATA / name
    check_invariant(read_model(str(path)), None, tmp_path, path.suffix)


def test_the_fixtures_leave_what_they_should_and_say_why(tmp_path):
    """Two real models whose batch norm must stay: the report says why, once per op."""
    skips = check_invariant(read_model(str(DATA / "conv_relu_bn.tflite")), None, tmp_path, ".tflite")
    assert [s["at"]["kind"] for s in skips] == ["MUL", "ADD"]
    assert all("fused RELU" in s["reasons"]["fuse_batchnorm_with_conv"] for s in skips)
    skips = check_invariant(read_model(str(DATA / "conv_bn_two_consumers.tflite")), None, tmp_path, ".tflite")
    assert [s["at"]["kind"] for s in skips] == ["MUL", "ADD"] and all("graph output" in s["reason"] for s in skips)
