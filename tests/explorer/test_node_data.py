"""optimize --node-data / --node-data-input and Optimized.node_data(): every fold and every leftover, nothing else."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("model_explorer")

import bnfold  # noqa: E402
from bnfold.cli import run  # noqa: E402
from bnfold.explorer.graphs import graph_ids  # noqa: E402
from bnfold.io.reader import read_model  # noqa: E402
from conftest import DATA, RECIPES, build_recipe  # noqa: E402

RESNET = DATA / "resnet_v2_mini.tflite"


def optimize_with_node_data(src, tmp_path, *extra):
    out, report, nd, nd_in = (tmp_path / n for n in (f"o{src.suffix}", "r.json", "nd.json", "nd_in.json"))
    assert (
        run(
            [
                "optimize",
                str(src),
                str(out),
                "-q",
                "--report",
                str(report),
                "--node-data",
                str(nd),
                "--node-data-input",
                str(nd_in),
                *extra,
            ]
        )
        == 0
    )
    return (
        read_model(str(out)),
        json.loads(report.read_text()),
        json.loads(nd.read_text()),
        json.loads(nd_in.read_text()),
    )


def keyed(node_data: dict) -> dict[tuple[str, str], dict]:
    return {(gid, key): r for gid, graph in node_data.items() for key, r in graph["results"].items()}


def expected_output_keys(report: dict, ids: list[str]) -> set[tuple[str, str]]:
    return {(ids[f["subgraph"]], op["output"]) for f in report["folds"] for op in f["into"]} | {
        (ids[s["subgraph"]], s["at"]["output"]) for s in report["skips"]
    }


def test_resnet_v2_every_fold_with_its_rewrite_check(tmp_path):
    model, report, nd, nd_in = optimize_with_node_data(RESNET, tmp_path, "--check", "1", "--check-mode", "local")
    ids = graph_ids(model)
    results = keyed(nd)
    assert set(results) == expected_output_keys(report, ids)
    assert len(report["folds"]) == 9 and all(f["into"] for f in report["folds"])  # every fold has a node to show it
    outputs = {(ids[0], op.outputs[0].name): op for op in model.graphs[0].ops}
    assert set(results) <= set(outputs)  # keyed by tensor names the optimized model has
    fc = results[(ids[0], "StatefulPartitionedCall_1:0")]
    head = next(f for f in report["folds"] if any(o["output"] == "StatefulPartitionedCall_1:0" for o in f["into"]))
    (rewrite,) = [
        r for r in report["check"]["rewrites"] if f"{head['pass']} at {head['layer']['output']!r}" in r["folds"]
    ]
    assert fc["value"] == (
        f"absorbed 2 ops (fuse_preactivation_batchnorm); rewrite check: scaled err "
        f"{rewrite['scaled_err']:.2e}, max abs err {rewrite['max_abs_err']:.2e}"
    )
    assert fc["bgColor"] == "#a5d6a7"
    assert sum(r["value"].startswith("absorbed 1 op (fuse_activation_function)") for r in results.values()) == 3
    assert all("rewrite check" in r["value"] for r in results.values())  # every rewrite's error is shown

    # The input: the 12 MUL/ADD folded away (by position as read), the ops that took them in.
    source = read_model(str(RESNET))
    gone = {
        (ids[0], source.graphs[0].ops[r["index"]].outputs[0].name)
        for f in report["folds"]
        for r in f["removed"]
        if r["index"] is not None
    }
    took = {
        (ids[0], source.graphs[0].ops[o["index"]].outputs[0].name)
        for f in report["folds"]
        for o in f["into"]
        if o["index"] is not None
    }
    inputs = keyed(nd_in)
    assert len(gone) == 12 and set(inputs) == gone | took
    assert all(inputs[k]["value"].startswith("folded away by fuse_preactivation_batchnorm into ") for k in gone)
    assert {
        source.graphs[0].ops[i].kind for i in {r["index"] for f in report["folds"] for r in f["removed"]} - {None}
    } == {"MUL", "ADD"}


def test_leftovers_say_why(tmp_path):
    src = build_recipe("Neg_Conv_BN_MultiConsumer_000", tmp_path)
    model, report, nd, nd_in = optimize_with_node_data(src, tmp_path)
    assert report["skips"] and not report["folds"]
    results = keyed(nd)
    assert set(results) == expected_output_keys(report, graph_ids(model))
    for s in report["skips"]:
        entry = results[(graph_ids(model)[s["subgraph"]], s["at"]["output"])]
        assert entry == {"value": f"left: {s['reason']}", "bgColor": "#ffcc80"}
    assert keyed(nd_in) == results  # nothing changed: the same ops, the same names


def test_library_matches_the_command(tmp_path):
    model, report, nd, nd_in = optimize_with_node_data(RESNET, tmp_path)
    result = bnfold.optimize(str(RESNET))
    assert json.loads(result.node_data().to_json_string()) == nd
    assert json.loads(result.input_node_data().to_json_string()) == nd_in
    assert json.loads(result.input_node_data(read_model(str(RESNET))).to_json_string()) == nd_in


def test_side_file_rules(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    out, model_file = tmp_path / "o.tflite", tmp_path / "other.tflite"
    model_file.write_bytes(src.read_bytes())
    assert run(["optimize", str(src), str(out), "--node-data", str(out)]) == 2  # this run's own output
    assert (
        run(
            [
                "optimize",
                str(src),
                str(out),
                "--node-data",
                str(tmp_path / "a.json"),
                "--node-data-input",
                str(tmp_path / "a.json"),
            ]
        )
        == 2
    )  # the two overlays in one file
    assert run(["optimize", str(src), str(out), "--node-data-input", str(model_file)]) == 2  # a model, no --force
    assert not out.exists() and model_file.read_bytes() == src.read_bytes()  # refused before any work
    assert run(["optimize", str(src), str(out), "-q", "--force", "--node-data-input", str(model_file)]) == 0
    assert json.loads(model_file.read_text())["main"]["results"]  # --force replaces it
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_input_overlay_of_an_in_place_run_is_of_the_input(tmp_path):
    src = tmp_path / "m.tflite"
    src.write_bytes(RESNET.read_bytes())
    nd_in = tmp_path / "nd_in.json"
    assert run(["optimize", str(src), "--in-place", "-q", "--node-data-input", str(nd_in)]) == 0
    assert json.loads(nd_in.read_text()) == json.loads(
        bnfold.optimize(str(RESNET)).input_node_data(str(RESNET)).to_json_string()
    )


def test_refused_without_the_extra(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "model_explorer" else real(name, *a)
    )
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    assert run(["optimize", str(src), str(tmp_path / "o.tflite"), "--node-data", str(tmp_path / "nd.json")]) == 2
    assert "pip install 'bnfold[explorer]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [src]


@pytest.mark.parametrize("recipe", sorted(p.stem for p in RECIPES.glob("*.toml")))
def test_every_recipe_every_fold_and_leftover_and_nothing_else(recipe, tmp_path):
    """The invariant over every recipe: the optimized overlay has a value exactly for the ops the
    report's folds name in `into` and the candidates its skips name; every fold has such an op
    unless it removed TRANSPOSEs that met with nothing crossed between them; the input overlay marks exactly
    the ops as read that the folds removed or put into, and the leftovers the input has."""
    src = build_recipe(recipe, tmp_path)
    result = bnfold.optimize(str(src))
    model, report = result.model, result.report
    ids = graph_ids(model)
    assert set(keyed(json.loads(result.node_data().to_json_string()))) == expected_output_keys(report, ids)
    for fold in report["folds"]:
        graph = model.graphs[fold["subgraph"]]
        assert fold["into"] or (fold["pass"] == "remove_redundant_transpose" and not fold.get("crossed"))
        made = {t.name for op in graph.ops for t in op.outputs}
        assert all(op["output"] in made for op in fold["into"])
    source = read_model(str(src))

    def as_read(gi, described):
        index = described["index"]
        return None if index is None else (ids[gi], source.graphs[gi].ops[index].outputs[0].name)

    marked = (
        {as_read(f["subgraph"], op) for f in report["folds"] for op in f["removed"] + f["into"]}
        | {as_read(s["subgraph"], s["at"]) for s in report["skips"]}
    ) - {None}
    assert set(keyed(json.loads(result.input_node_data().to_json_string()))) == marked


def test_the_core_never_imports_model_explorer(tmp_path):
    """Only the explorer package imports Model Explorer: a run without --node-data does not load it."""
    import subprocess
    import sys

    out = tmp_path / "o.circle"
    code = (
        "import sys, bnfold; from bnfold.cli import run; "
        f"assert run(['optimize', {str(RESNET)!r}, {str(out)!r}, '-q', '--check', '1']) == 0; "
        "import bnfold.explorer; print(sorted(m for m in sys.modules if m.startswith('model_explorer')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
