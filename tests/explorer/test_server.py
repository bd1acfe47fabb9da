"""Model Explorer's real server with the adapter and an optimize run's node data, asked over HTTP as its page asks.

The server is started as a user starts it (`python -m model_explorer MODEL --extensions=bnfold.explorer
--node_data_paths=ND`); the test then does what the web page does with the address it prints: list the
extensions, pick the adapter for the file's extension, send it the `convert` command, and read the
node-data file. One test also loads the page in headless Chromium (Debian's `chromium`, driven by
harness.py) and saves a screenshot; it is skipped, with the reason, where no such browser is installed.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest

pytest.importorskip("model_explorer")

from harness import CHROMIUM, Browser, Server  # noqa: E402

from bnfold.cli import run  # noqa: E402
from bnfold.explorer.graphs import graph_ids  # noqa: E402
from bnfold.io.reader import read_model  # noqa: E402
from conftest import DATA  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """resnet_v2_mini optimized to Circle with its node data, served with the adapter."""
    tmp = tmp_path_factory.mktemp("served")
    out, nd = tmp / "resnet_v2_mini.opt.circle", tmp / "nd.json"
    assert (
        run(
            [
                "optimize",
                str(DATA / "resnet_v2_mini.tflite"),
                str(out),
                "-q",
                "--check",
                "1",
                "--check-mode",
                "local",
                "--node-data",
                str(nd),
            ]
        )
        == 0
    )
    server = Server(out, nd, tmp / "server.log")
    yield server, out, nd, tmp
    server.stop()


def test_page_gets_every_operator_and_every_overlay_key(served):
    server, model_path, nd, _ = served
    data = json.loads(urllib.parse.unquote(urllib.parse.urlparse(server.page).query.split("data=", 1)[1]))
    assert data["models"] == [{"url": str(model_path)}] and data["nodeData"] == [str(nd)]

    # As the page does: the adapter registered for the file's extension, then its convert command.
    adapters = [e for e in server.get("/api/v1/get_extensions") if "circle" in e.get("fileExts", [])]
    assert [a["id"] for a in adapters] == ["bnfold_flatbuffer"]
    response = server.post(
        "/apipost/v1/send_command",
        {
            "cmdId": "convert",
            "extensionId": adapters[0]["id"],
            "modelPath": data["models"][0]["url"],
            "settings": {"const_element_count_limit": 16},
            "deleteAfterConversion": False,
        },
    )
    assert "error" not in response
    model = read_model(str(model_path))
    graphs = {g["id"]: g for g in response["graphs"]}
    assert list(graphs) == graph_ids(model)
    for gid, graph in zip(graph_ids(model), model.graphs):
        nodes = [n for n in graphs[gid]["nodes"] if n["id"] not in ("GraphInputs", "GraphOutputs")]
        assert [n["label"] for n in nodes] == [op.kind for op in graph.ops]  # every operator, in order

    # The node data, as the page reads it; every key names an output the page can match.
    overlay = json.loads(server.get("/api/v1/read_text_file", path=data["nodeData"][0])["content"])
    assert overlay == json.loads(nd.read_text())
    for gid, results in overlay.items():
        names = {
            a["value"]
            for n in graphs[gid]["nodes"]
            for item in n["outputsMetadata"]
            for a in item["attrs"]
            if a["key"] == "tensor_name"
        }
        assert results["results"] and set(results["results"]) <= names


def test_unreadable_model_is_an_error_message(served, tmp_path):
    server = served[0]
    bad = tmp_path / "bad.circle"
    bad.write_bytes(b"\x10\x00\x00\x00CIR0" + b"\xff" * 8)
    response = server.post(
        "/apipost/v1/send_command",
        {
            "cmdId": "convert",
            "extensionId": "bnfold_flatbuffer",
            "modelPath": str(bad),
            "settings": {},
            "deleteAfterConversion": False,
        },
    )
    assert response["error"].startswith("ModelError: ") and str(bad) in response["error"]


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no headless browser: Debian's chromium is not installed (.ci/run installs it with apt-get where it can)",
)
def test_page_in_headless_chromium(served):
    """The page itself: it converts the model through the adapter, draws the graph and lists the overlay."""
    server, model_path, _, tmp = served
    png = tmp / "page.png"
    with Browser(tmp / "profile") as browser:
        browser.open(server.page)
        ops = len(read_model(str(model_path)).graphs[0].ops)
        browser.wait_for(
            f"document.body.innerText.includes('{ops + 2} nodes') && "
            "document.body.innerText.includes('bnfold: optimized') && !!document.querySelector('canvas')",
            timeout=120,
        )
        browser.screenshot(png)
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(head[16:20], "big") == 1280
    assert png.stat().st_size > 20_000  # a drawn page, not a blank one
