"""How long Model Explorer takes to open a model through bnfold's adapter (target: 700 operators < 2 s).

Starts the real server (`python -m model_explorer --extensions=bnfold.explorer`) and times the request
the page sends to open a file, the adapter's `convert` command: bnfold reads the model, builds the
graphs, the server serializes them and the page receives them. Each model is opened RUNS times; the
best and the median are printed with the operator count.

Usage: python scripts/explorer_open_time.py MODEL.circle [MODEL ...] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "explorer"))

from harness import Server  # noqa: E402

from bnfold.io.reader import read_model  # noqa: E402


def open_time(server: Server, path: Path) -> float:
    command = {
        "cmdId": "convert",
        "extensionId": "bnfold_flatbuffer",
        "modelPath": str(path.resolve()),
        "settings": {},
        "deleteAfterConversion": False,
    }
    request = urllib.request.Request(
        f"{server.base}/apipost/v1/send_command",
        data=json.dumps(command).encode(),
        headers={"Content-Type": "application/json"},
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as r:
        graphs = json.loads(r.read())
    elapsed = time.perf_counter() - start
    assert "graphs" in graphs, graphs
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "nd.json"
        empty.write_text("{}")
        server = Server(args.models[0].resolve(), empty, Path(tmp) / "server.log")
        try:
            for path in args.models:
                ops = sum(len(g.ops) for g in read_model(str(path)).graphs)
                times = [open_time(server, path) for _ in range(args.runs)]
                print(
                    f"{path.name}: {ops} operators, {path.stat().st_size / 2**20:.1f} MB: open "
                    f"best {min(times):.3f} s, median {statistics.median(times):.3f} s over {args.runs} runs"
                )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
