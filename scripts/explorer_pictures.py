"""The README's pictures: a ResNetV2 block of tests/data/resnet_v2_mini.tflite before and after the folds,
as Model Explorer's page shows them through bnfold's adapter with bnfold's node data.

Optimizes the model (writing both overlays), converts the input to Circle (the same operators and
tensor names, opened by the same adapter), serves both with `python -m model_explorer
--extensions=bnfold.explorer`, loads each page in headless Chromium (tests/explorer/harness.py),
hides the side panel, zooms to fit and saves the region of the second block (s0b1: the batch norm
before its ReLU, three convolutions, the max-pool shortcut, the residual ADD). The regions are
pixel boxes of the 700x6000 viewport, found by looking at the full page once; re-check them if
Model Explorer's layout changes.

Usage: python scripts/explorer_pictures.py [OUT_DIR]   (default docs/)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "explorer"))

from harness import Browser, Server  # noqa: E402
from model_explorer.config import ModelExplorerConfig  # noqa: E402

from bnfold.cli import run  # noqa: E402

VIEWPORT = (700, 6000)
BLOCK = {
    "before": {"x": 120, "y": 1145, "width": 460, "height": 900},  # ADD -> MUL, ADD -> ... -> ADD
    "after": {"x": 120, "y": 1700, "width": 460, "height": 770},
}  # ADD -> RELU -> ... -> ADD


def picture(server: Server, model: Path, node_data: Path, png: Path, clip: dict, profile: Path) -> None:
    config = ModelExplorerConfig().add_model_from_path(str(model)).add_node_data_from_path(str(node_data))
    with Browser(profile, *VIEWPORT) as browser:
        browser.open(f"{server.base}/?data={config.to_url_param_value()}")
        browser.wait_for("document.body.innerText.includes('bnfold:') && !!document.querySelector('canvas')", 120)
        for button in (".hide-toggle", ".zoom-fit"):
            browser.settle()  # the page draws again when the node data arrives; panels and zoom animate
            browser.evaluate(f"document.querySelector('{button}').click()")
        browser.settle()
        browser.screenshot(png, clip=clip)


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else ROOT / "docs"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        before, after = tmp / "resnet_v2_mini.circle", tmp / "resnet_v2_mini.opt.circle"
        nd_before, nd_after = tmp / "nd_in.json", tmp / "nd.json"
        source = ROOT / "tests" / "data" / "resnet_v2_mini.tflite"
        assert (
            run(
                [
                    "optimize",
                    str(source),
                    str(after),
                    "-q",
                    "--node-data",
                    str(nd_after),
                    "--node-data-input",
                    str(nd_before),
                ]
            )
            == 0
        )
        assert run(["convert", str(source), str(before)]) == 0
        server = Server(before, nd_before, tmp / "server.log")
        try:
            for name, model, nd in (("before", before, nd_before), ("after", after, nd_after)):
                png = out_dir / f"explorer_resnet_v2_block_{name}.png"
                picture(server, model, nd, png, BLOCK[name], tmp / f"profile-{name}")
                print(f"wrote {png} ({png.stat().st_size} bytes)")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
