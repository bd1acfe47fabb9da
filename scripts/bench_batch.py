"""The batch-mode benchmark (`python scripts/bench.py --batch DIR`): many models in one run.

Over the models under DIR (walked as `bnfold optimize --out-dir` walks it), in the same run and
interleaved, median of --runs whole processes, each run into an empty output directory:
  loop:  a shell loop, one `bnfold optimize IN OUT -q` process per model (what CI does today);
  batch: `bnfold optimize --out-dir OUT -j 2 DIR -q`.
Figures: models/s of the batch, loop seconds / batch seconds, the batch's peak RSS (the largest
single process, workers included) against one `bnfold optimize` of the largest model, and
whether every batch output is byte-identical to the loop's. Then DIR's models plus a truncated
model and a text file named .tflite: every good model must be written, with two one-line errors
and exit status 1.

Targets (issue 26): >= 10 models/s with -j 2 on a 2-core machine, >= 3x the loop, peak memory
bounded by the workers times the largest model. Pass/miss is printed; a miss never fails.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import statistics
from pathlib import Path

MB = 1 << 20
TARGETS = {"models_per_s": 10.0, "vs_loop": 3.0}


def measure(collection: Path, out: Path, runs: int, run_child, bnfold: str, jobs: int = 2) -> dict:
    from bnfold.batch import collect

    work = out / "batch-bench"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    todo = collect([str(collection)], str(work / "loop"))
    script = work / "loop.sh"
    script.write_text(
        "".join(
            f"mkdir -p '{os.path.dirname(j.output)}' && {bnfold} optimize '{j.input}' '{j.output}' -q\n" for j in todo
        )
    )
    commands = {
        "loop": ["/bin/sh", str(script)],
        "batch": [bnfold, "optimize", "--out-dir", str(work / "batch"), "-j", str(jobs), str(collection), "-q"],
    }
    samples = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            shutil.rmtree(work / name, ignore_errors=True)
            samples[name].append(run_child(argv))
    largest = max((j.input for j in todo), key=os.path.getsize)
    single = run_child([bnfold, "optimize", largest, str(work / ("single" + Path(largest).suffix)), "-q"])
    loop_s = statistics.median(r["seconds"] for r in samples["loop"])
    batch_s = statistics.median(r["seconds"] for r in samples["batch"])
    row = {
        "collection": str(collection),
        "models": len(todo),
        "jobs": jobs,
        "runs": runs,
        "loop_s": loop_s,
        "batch_s": batch_s,
        "models_per_s": len(todo) / batch_s,
        "vs_loop": loop_s / batch_s,
        "loop_cpu_s": statistics.median(r["cpu"] for r in samples["loop"]),
        "batch_cpu_s": statistics.median(r["cpu"] for r in samples["batch"]),
        "loop_samples": [round(r["seconds"], 3) for r in samples["loop"]],
        "batch_samples": [round(r["seconds"], 3) for r in samples["batch"]],
        "exit_codes": sorted({r["rc"] for rs in samples.values() for r in rs}),
        "batch_peak_rss": max(r["rss"] for r in samples["batch"]),
        "largest_model": largest,
        "largest_model_bytes": os.path.getsize(largest),
        "largest_single_rss": single["rss"],
        "identical": _identical(todo, work),
        "bad_files": _bad_files(collection, work, run_child, bnfold, jobs),
        "loadavg_1min_after": os.getloadavg()[0],
    }
    return row


def _identical(todo, work: Path) -> bool:
    """Every output of the last batch run equals the loop's for the same model."""
    return all(
        filecmp.cmp(j.output, j.output.replace(str(work / "loop"), str(work / "batch"), 1), shallow=False) for j in todo
    )


def _bad_files(collection: Path, work: Path, run_child, bnfold: str, jobs: int) -> dict:
    """The collection plus a truncated model and a text file named .tflite."""
    bad = work / "bad-set"
    shutil.copytree(collection, bad)
    sample = next(p for p in sorted(bad.rglob("*.tflite")))
    (bad / "zz_truncated.tflite").write_bytes(sample.read_bytes()[: max(8, sample.stat().st_size // 3)])
    (bad / "zz_notes.tflite").write_text("release notes, saved under the wrong name\n")
    out = work / "bad-out"
    result = run_child([bnfold, "optimize", "--out-dir", str(out), "-j", str(jobs), str(bad), "-q"])
    good = [
        p.relative_to(bad)
        for p in bad.rglob("*")
        if p.suffix in (".tflite", ".circle") and not p.name.startswith("zz_")
    ]
    errors = [line for line in result["stderr"].splitlines() if line]
    written = all((out / g).is_file() for g in good)
    return {
        "exit": result["rc"],
        "errors": errors,
        "good_written": written,
        "met": result["rc"] == 1 and len(errors) == 2 and written,
    }


def report(row: dict) -> list[str]:
    verdict = {k: "pass" if row[k] >= limit else "MISS" for k, limit in TARGETS.items()}
    bounded = row["batch_peak_rss"] <= row["jobs"] * max(row["largest_single_rss"], 1)
    bad = row["bad_files"]
    return [
        f"batch: {row['models']} models under {row['collection']}, median of {row['runs']} runs, -j {row['jobs']}",
        f"  shell loop {row['loop_s']:.2f} s, batch {row['batch_s']:.2f} s: {row['models_per_s']:.1f} models/s "
        f"[{verdict['models_per_s']}, >= {TARGETS['models_per_s']}], {row['vs_loop']:.2f}x the loop "
        f"[{verdict['vs_loop']}, >= {TARGETS['vs_loop']}]",
        f"  CPU seconds (user + system, all processes): loop {row['loop_cpu_s']:.2f}, batch {row['batch_cpu_s']:.2f} "
        f"({row['loop_cpu_s'] / row['batch_cpu_s']:.2f}x); load average {row['loadavg_1min_after']:.1f} after",
        f"  peak RSS {row['batch_peak_rss'] / MB:.0f} MB (largest single process); one optimize of the largest model "
        f"({row['largest_model_bytes'] / MB:.1f} MB) {row['largest_single_rss'] / MB:.0f} MB: "
        f"{'within' if bounded else 'ABOVE'} {row['jobs']} x that",
        f"  outputs byte-identical to the loop's: {row['identical']}",
        f"  truncated model + text file among the good: exit {bad['exit']}, {len(bad['errors'])} error line(s), "
        f"every good model written: {bad['good_written']} [{'pass' if bad['met'] else 'MISS'}]",
        *(f"    {line}" for line in bad["errors"]),
    ]
