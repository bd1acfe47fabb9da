"""bnfold -O1 against TICO's `tico-circle optimize --preset o1` on Circle models: operators before
and after, whether each output computes what the input did (`bnfold check`, 3 samples), and the
wall time of each tool's command.

    python scripts/o1_compare.py --tico /path/to/tico-circle [--tico-flag=--resolve-legacy-custom-ops ...]
                                 [--json out.json] MODEL.circle|RECIPE.toml ...

A recipe is built as Circle first. Both tools run as the commands a user types, each in a fresh
process (the times include their start-up: TICO imports torch). TICO's extra flags name its
opt-in counterparts of O1 members (resolve-legacy-custom-ops, fuse-legacy-fc-gelu-fc,
legalize-dynamic-fully-connected, fuse-transpose-conv-slice). A measurement script, not part of
the test run: it needs TICO installed somewhere (its own environment is fine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def op_total(path: Path) -> tuple[int, dict[str, int]]:
    from bnfold.io.reader import read_model

    counts = dict(read_model(str(path)).op_counts())
    return sum(counts.values()), counts


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - start, done


def check(original: Path, optimized: Path) -> str:
    bnfold = str(Path(sys.executable).with_name("bnfold"))
    done = subprocess.run(
        [bnfold, "check", str(original), str(optimized), "--samples", "3"], capture_output=True, text=True
    )
    line = (done.stdout + done.stderr).strip().splitlines()
    return {0: "same", 1: "DIFFERS", 4: "unverified"}.get(done.returncode, f"exit {done.returncode}") + (
        f" ({line[-1][:90]})" if done.returncode not in (0,) and line else ""
    )


def measure(model: Path, work: Path, tico: str, tico_flags: list[str]) -> dict:
    bnfold = str(Path(sys.executable).with_name("bnfold"))
    if model.suffix == ".toml":
        built = work / f"{model.stem}.circle"
        subprocess.run([bnfold, "recipe", "build", str(model), str(built)], check=True, capture_output=True)
        model = built
    row: dict = {"model": model.stem, "before": op_total(model)[0]}
    ours, theirs = work / f"{model.stem}.bnfold.circle", work / f"{model.stem}.tico.circle"
    seconds, done = timed([bnfold, "optimize", str(model), str(ours), "-O1", "--force", "-q"])
    row["bnfold"] = {
        "ops": op_total(ours)[0] if done.returncode == 0 else None,
        "s": round(seconds, 2),
        "exit": done.returncode,
    }
    row["bnfold"]["check"] = check(model, ours) if done.returncode == 0 else done.stderr.strip()[:120]
    seconds, done = timed([tico, "optimize", str(model), "-o", str(theirs), "--preset", "o1", *tico_flags])
    row["tico"] = {
        "ops": op_total(theirs)[0] if done.returncode == 0 else None,
        "s": round(seconds, 2),
        "exit": done.returncode,
    }
    row["tico"]["check"] = check(model, theirs) if done.returncode == 0 else done.stderr.strip().splitlines()[-1][:120]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--tico", required=True, help="the tico-circle program")
    parser.add_argument("--tico-flag", action="append", default=[], help="an extra flag for tico-circle optimize")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="o1-compare-") as tmp:
        rows = [measure(m, Path(tmp), args.tico, args.tico_flag) for m in args.models]
    print("| model | ops | bnfold -O1 | check | s | tico o1 | check | s |")
    print("|---|---:|---:|---|---:|---:|---|---:|")
    for r in rows:
        b, t = r["bnfold"], r["tico"]
        cells = [r["model"], r["before"], b["ops"], b["check"], b["s"], t["ops"], t["check"], t["s"]]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
