"""The single-model overhead (`python scripts/bench.py --overhead MODEL`): what one
`bnfold optimize IN OUT` process costs against the floor any Python file-to-file tool pays.

The floor is a process that starts the interpreter, imports numpy and copies the file
(shutil.copyfile). Two models, interleaved with their floors, --runs whole processes each, every
run into an absent output with no dirty pages left by the one before (os.sync):
  fold:      MODEL itself (default passes; keras ResNet50V2 folds 21 batch norms);
  unchanged: MODEL after one `bnfold optimize`, which no pass changes again, so bnfold's output
             is a copy of its input (checked byte-identical).
Figures per model: wall and CPU seconds (medians), and the ratio to the floor as the median of
the run-by-run ratios (each bnfold run against the floor run beside it, so drift cancels).

Targets (issue 26, item 6): fold <= 1.5x the floor, unchanged <= 1.2x. Pass/miss is printed; a
miss never fails.
"""

from __future__ import annotations

import filecmp
import os
import statistics
from pathlib import Path

TARGETS = {"fold": 1.5, "unchanged": 1.2}
# The floor: start the interpreter, import numpy, copy the file.
FLOOR_SRC = "import shutil, sys; import numpy; shutil.copyfile(sys.argv[1], sys.argv[2])"


def measure(model: Path, out: Path, runs: int, run_child, bnfold: str, python: str) -> dict:
    unchanged = out / ("overhead-unchanged" + model.suffix)
    made = run_child([bnfold, "optimize", str(model), str(unchanged), "--quiet", "--force"])
    if made["rc"] != 0:
        raise RuntimeError(f"bnfold optimize failed on {model}: {made['stderr']}")
    target = out / ("overhead-output" + model.suffix)
    copied = run_child([bnfold, "optimize", str(unchanged), str(target), "--quiet", "--force"])
    identical = copied["rc"] == 0 and filecmp.cmp(unchanged, target, shallow=False)
    inputs = {"fold": model, "unchanged": unchanged}
    samples = {(name, side): [] for name in inputs for side in ("floor", "bnfold")}
    for _ in range(runs):
        for name, path in inputs.items():
            for side, argv in (
                ("floor", [python, "-c", FLOOR_SRC, str(path), str(target)]),
                ("bnfold", [bnfold, "optimize", str(path), str(target), "--quiet"]),
            ):
                _fresh(target)
                result = run_child(argv)
                if result["rc"] != 0:
                    raise RuntimeError(f"{' '.join(argv)} failed ({result['rc']}): {result['stderr']}")
                samples[name, side].append(result)
    _fresh(target)
    row = {"model": str(model), "bytes": model.stat().st_size, "runs": runs, "unchanged_copy_identical": identical}
    for name in inputs:
        floor, ours = samples[name, "floor"], samples[name, "bnfold"]
        for key in ("seconds", "cpu"):
            row[f"{name}_floor_{key}"] = statistics.median(r[key] for r in floor)
            row[f"{name}_bnfold_{key}"] = statistics.median(r[key] for r in ours)
            row[f"{name}_ratio_{key}"] = statistics.median(b[key] / f[key] for f, b in zip(floor, ours))
            row[f"{name}_floor_{key}_samples"] = [round(r[key], 4) for r in floor]
            row[f"{name}_bnfold_{key}_samples"] = [round(r[key], 4) for r in ours]
        row[f"{name}_bnfold_peak_rss"] = max(r["rss"] for r in ours)
    row["loadavg_1min_after"] = os.getloadavg()[0]
    return row


def _fresh(path: Path) -> None:
    """No output file and no dirty pages from the run before."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    os.sync()


def report(row: dict) -> list[str]:
    lines = [
        f"single-model overhead: {row['model']} ({row['bytes'] / (1 << 20):.1f} MB), median of {row['runs']} "
        f"interleaved runs against the floor (python, import numpy, copy the file)"
    ]
    for name, limit in TARGETS.items():
        ratio = row[f"{name}_ratio_seconds"]
        lines.append(
            f"  {name:9}: floor {row[f'{name}_floor_seconds']:.3f} s, bnfold {row[f'{name}_bnfold_seconds']:.3f} s: "
            f"{ratio:.2f}x wall [{'pass' if ratio <= limit else 'MISS'}, <= {limit}x], "
            f"{row[f'{name}_ratio_cpu']:.2f}x CPU; peak RSS {row[f'{name}_bnfold_peak_rss'] / (1 << 20):.0f} MB"
        )
    lines.append(
        f"  unchanged output byte-identical to its input: {row['unchanged_copy_identical']}; "
        f"load average {row['loadavg_1min_after']:.1f} after"
    )
    return lines
