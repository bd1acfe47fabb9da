"""bnfold next to TICO's Circle optimizer on the same Circle models (issue 35).

    python scripts/tico_circle.py --cache DIR [--out DIR] [--only NAME,...] [--inputs N]

For every .circle model of the zoo's cache (scripts/zoo.py build), `tico-circle optimize IN -o OUT
--preset o1` (pip `tico` >= 0.3, a zoo extra: never a dependency of bnfold) and `bnfold optimize IN
OUT` (default passes, target onert) each write an optimized copy; then per tool: operators after,
TRANSPOSEs after, batch-norm candidates left (engine/candidates.py, the zoo's definition), the
largest error against the raw export relative to its largest output (onert, cpu backend, one
thread, on `--inputs` normal(0, 2) inputs; LiteRT where onert cannot run a model), wall time of the
whole command, and whether `tico-circle verify` accepts the file (every file bnfold writes must
pass). Prints a markdown table and writes DIR_OUT/tico_circle.md and .json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runners import RUNNERS  # noqa: E402
from zoo import candidates, op_counts, random_inputs  # noqa: E402

TOOLS = ("raw", "tico-circle", "bnfold")


def optimize(tool: str, path: Path, out: Path, bin_dir: Path) -> tuple[float, str]:
    """Run one optimizer; (wall seconds, error text or "")."""
    if tool == "tico-circle":
        argv = [str(bin_dir / "tico-circle"), "optimize", str(path), "-o", str(out), "--preset", "o1"]
    else:
        argv = [str(bin_dir / "bnfold"), "optimize", str(path), str(out), "--quiet"]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return seconds, "" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"


def verify(path: Path, bin_dir: Path) -> bool:
    proc = subprocess.run([str(bin_dir / "tico-circle"), "verify", str(path)], capture_output=True, text=True)
    return proc.returncode == 0


def relative_error(original, optimized, inputs) -> tuple[float, str]:
    """max |a - b| / max |a| over the inputs, and the runtime that ran both models."""
    for runtime in ("onert", "litert"):
        try:
            run_a, run_b = RUNNERS[runtime](original), RUNNERS[runtime](optimized)
            worst = scale = 0.0
            for x in inputs:
                for a, b in zip(run_a(x), run_b(x)):
                    worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))))
                    scale = max(scale, float(np.max(np.abs(a))))
            return (worst / scale if scale else worst), runtime
        except Exception:  # this runtime cannot run one of them: the next one runs both
            continue
    return float("nan"), "none"


def measure(path: Path, work: Path, samples: int, bin_dir: Path) -> dict:
    from bnfold.io.reader import read_model

    original = read_model(str(path))
    inputs = random_inputs(original, samples)
    row: dict = {"model": path.stem}
    for tool in TOOLS:
        out = path if tool == "raw" else work / f"{path.stem}.{tool}.circle"
        entry: dict = {}
        if tool != "raw":
            entry["seconds"], error = optimize(tool, path, out, bin_dir)
            if error:
                row[tool] = {"error": error, **entry}
                continue
            entry["verify"] = verify(out, bin_dir)
        model = read_model(str(out))
        counts = op_counts(model)
        entry.update(ops=sum(counts.values()), transposes=counts.get("TRANSPOSE", 0), bn_left=len(candidates(model)))
        if tool != "raw":
            entry["rel_err"], entry["runtime"] = relative_error(original, model, inputs)
        row[tool] = entry
    return row


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        f"tico-circle {meta['tico']} `optimize --preset o1` and bnfold {meta['bnfold']} (default passes, target "
        f"onert) on the same Circle exports ({meta['when']}); error: max |raw - optimized| / max |raw| on "
        f"{meta['inputs']} normal(0, 2) inputs in onert (cpu, 1 thread); time: the whole command",
        "",
        "| model | ops raw → tico-circle / bnfold | TRANSPOSE raw → tico / bnfold | BN candidates raw → tico / bnfold "
        "| rel err tico / bnfold | seconds tico / bnfold | verify tico / bnfold |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        raw, tico, ours = r["raw"], r["tico-circle"], r["bnfold"]

        def cell(entry: dict, key: str, fmt: str = "{}") -> str:
            return fmt.format(entry[key]) if key in entry else "error"

        lines.append(
            f"| {r['model']} | {raw['ops']} → {cell(tico, 'ops')} / {cell(ours, 'ops')} "
            f"| {raw['transposes']} → {cell(tico, 'transposes')} / {cell(ours, 'transposes')} "
            f"| {raw['bn_left']} → {cell(tico, 'bn_left')} / {cell(ours, 'bn_left')} "
            f"| {cell(tico, 'rel_err', '{:.2g}')} / {cell(ours, 'rel_err', '{:.2g}')} "
            f"| {cell(tico, 'seconds', '{:.1f}')} / {cell(ours, 'seconds', '{:.1f}')} "
            f"| {cell(tico, 'verify')} / {cell(ours, 'verify')} |"
        )
    errors = [f"- {r['model']} {t}: {r[t]['error']}" for r in rows for t in TOOLS if "error" in r.get(t, {})]
    return "\n".join(lines + ([""] + errors if errors else [])) + "\n"


def main(argv: list[str]) -> int:
    from importlib.metadata import version

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="the zoo's cache (scripts/zoo.py build)")
    parser.add_argument("--out", type=Path, help="where the table and the optimized models go (default: --cache)")
    parser.add_argument("--only", help="comma-separated model names (default: every .circle of the cache)")
    parser.add_argument("--inputs", type=int, default=2, help="inputs for the error (default 2)")
    args = parser.parse_args(argv)
    out = args.out or args.cache
    work = out / "tico_circle"
    work.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else sorted(p.stem for p in args.cache.glob("*.circle"))
    bin_dir = Path(sys.executable).parent
    rows = []
    for name in names:
        rows.append(measure(args.cache / f"{name}.circle", work, args.inputs, bin_dir))
        print(json.dumps(rows[-1]), flush=True)
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "tico": version("tico"),
        "bnfold": version("bnfold"),
        "inputs": args.inputs,
    }
    text = markdown(rows, meta)
    (out / "tico_circle.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / "tico_circle.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
