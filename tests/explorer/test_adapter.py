"""The adapter (bnfold.explorer.main): Circle and TFLite through bnfold's reader, as graph-builder graphs."""

from __future__ import annotations

import pytest

pytest.importorskip("model_explorer")

from model_explorer.utils import convert_adapter_response  # noqa: E402

from bnfold.explorer.graphs import graph_ids  # noqa: E402
from bnfold.explorer.main import BnfoldAdapter  # noqa: E402
from bnfold.io.atomic import save_model  # noqa: E402
from bnfold.io.formats import CIRCLE  # noqa: E402
from bnfold.io.reader import read_model  # noqa: E402
from bnfold.recipe.chef import build, load_recipe  # noqa: E402
from conftest import DATA, RECIPES  # noqa: E402


def while_with_custom_op(tmp_path):
    """Foundation_While_000 (WHILE with cond/body subgraphs, a signature) plus a custom operator
    after the loop, as Circle."""
    recipe = load_recipe(RECIPES / "Foundation_While_000.toml")
    recipe["operand"].append({"name": "final", "shape": [1, 5]})
    recipe["operation"].append(
        {"type": "CUSTOM", "custom_code": "BnfoldProbe", "inputs": ["ofm"], "outputs": ["final"]}
    )
    recipe["output"] = ["final"]
    recipe["signature"][0]["outputs"] = {"y": "final"}
    path = tmp_path / "while_custom.circle"
    save_model(build(recipe, CIRCLE), str(path), CIRCLE)
    return path


def converted(path) -> dict:
    return convert_adapter_response(BnfoldAdapter().convert(str(path), {}))


def test_circle_subgraphs_signature_and_custom_operator(tmp_path):
    path = while_with_custom_op(tmp_path)
    graphs = converted(path)["graphs"]
    assert [g["id"] for g in graphs] == ["main", "cond", "body"]
    main = {n["id"]: n for n in graphs[0]["nodes"]}
    assert [main[k]["label"] for k in ("GraphInputs", "0", "1", "GraphOutputs")] == [
        "GraphInputs",
        "WHILE",
        "BnfoldProbe",
        "GraphOutputs",
    ]
    assert main["0"]["subgraphIds"] == ["cond", "body"]
    assert {"key": "custom operator", "value": "BnfoldProbe"} in main["1"]["attrs"]
    assert main["1"]["incomingEdges"] == [{"sourceNodeId": "0", "sourceNodeOutputId": "1", "targetNodeInputId": "0"}]
    assert main["GraphOutputs"]["incomingEdges"][0]["sourceNodeId"] == "1"
    attrs = graphs[0]["groupNodeAttributes"][""]
    assert attrs["format"] == "circle" and attrs["signature serving_default"] == "inputs: x=ifm; outputs: y=final"
    body = [n["label"] for n in graphs[2]["nodes"]]
    assert body == ["GraphInputs", "ADD", "MUL", "GraphOutputs"]
    # a constant is no node: it is listed with the input it feeds
    mul = graphs[2]["nodes"][2]
    assert [e["sourceNodeId"] for e in mul["incomingEdges"]] == ["GraphInputs"]
    assert {"key": "constant", "value": "yes"} in mul["inputsMetadata"][1]["attrs"]


def test_every_operator_of_a_tflite_model_keyed_by_its_output(tmp_path):
    model = read_model(str(DATA / "resnet_v2_mini.tflite"))
    (graph,) = converted(DATA / "resnet_v2_mini.tflite")["graphs"]
    ops = [n for n in graph["nodes"] if n["id"] not in ("GraphInputs", "GraphOutputs")]
    assert [n["label"] for n in ops] == [op.kind for op in model.graphs[0].ops]
    names = [next(a["value"] for a in n["outputsMetadata"][0]["attrs"] if a["key"] == "tensor_name") for n in ops]
    assert names == [op.outputs[0].name for op in model.graphs[0].ops]
    assert graph["id"] == graph_ids(model)[0] == "main"


def test_unreadable_file_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.circle"
    bad.write_bytes(b"\x10\x00\x00\x00CIR0" + b"\xff" * 8)
    with pytest.raises(Exception) as info:
        BnfoldAdapter().convert(str(bad), {})
    assert str(bad) in str(info.value) and "\n" not in str(info.value)


def test_graph_ids_are_those_of_model_explorers_own_tflite_adapter(tmp_path):
    """Node data is keyed by graph id: unnamed subgraphs get the ids Model Explorer's built-in
    TFLite adapter gives them (the signature's key, else subgraph_N), so an overlay applies under both."""
    import json

    import ai_edge_model_explorer_adapter as builtin

    from bnfold.io.formats import TFLITE

    recipe = build(load_recipe(RECIPES / "Foundation_While_000.toml"), TFLITE)
    for graph in recipe.graphs:
        graph.name = None
    path = tmp_path / "unnamed.tflite"
    save_model(recipe, str(path), TFLITE)
    for p in (path, DATA / "resnet_v2_mini.tflite"):
        theirs = json.loads(builtin.ConvertFlatbufferDirectlyToJson(builtin.VisualizeConfig(), str(p)))
        assert graph_ids(read_model(str(p))) == [g["id"] for g in theirs[0]["subgraphs"]]
    assert graph_ids(read_model(str(path))) == ["serving_default", "subgraph_1", "subgraph_2"]
