"""Exporter parity (issue 24): a network exported by TICO, after bnfold, against the same network
exported by litert-torch (NHWC inside), after bnfold.

    python scripts/parity.py --cache DIR [--out DIR] [--only NET,...] [--rounds N] [--no-check]

For each network with both exports in the cache (scripts/zoo.py build: tico_NET.circle and
litert_NET.tflite) it runs `bnfold optimize` (default passes) on both, converts TICO's optimized
and raw models to .tflite with `bnfold convert`, and measures:

- operators and TRANSPOSEs of each optimized model;
- paired LiteRT latency (scripts/runners.py paired_speed: default kernels with XNNPACK, one thread,
  alternating rounds, medians): t(litert+bnfold) / t(TICO+bnfold), the A/A noise of that row
  (litert+bnfold against itself), and t(TICO raw) / t(TICO+bnfold);
- `bnfold optimize --check 3` of the TICO model, whole (LiteRT) and per rewrite (`--check-mode local`).

and checks the issue's targets:

    ops          TICO+bnfold ops <= 1.1 x litert+bnfold ops
    transposes   TICO+bnfold TRANSPOSEs <= litert+bnfold TRANSPOSEs + 2
    latency      t(litert+bnfold) / t(TICO+bnfold) >= 0.98, within the A/A noise:
                 ratio + |1 - A/A| >= 0.98
    checks       both checks pass
    speedup      over the networks: median of t(TICO raw) / t(TICO+bnfold) >= 1.15

It prints a markdown table with the verdicts, writes OUT/parity.md and OUT/parity.json (default:
the cache) and exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runners import paired_speed  # noqa: E402

NETWORKS = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "densenet121", "resnetv2_50"]
OPS_RATIO, EXTRA_TRANSPOSES, LATENCY_RATIO, MEDIAN_SPEEDUP = 1.1, 2, 0.98, 1.15


def bnfold(cli: list[str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*cli, *args], capture_output=True, text=True)


def counts(path: Path) -> tuple[int, int]:
    """(operators, TRANSPOSEs) of a model file."""
    from bnfold.io.reader import read_model

    ops = read_model(str(path)).op_counts()
    return sum(ops.values()), ops.get("TRANSPOSE", 0)


def last_line(proc: subprocess.CompletedProcess, prefix: str) -> str:
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    found = [line for line in lines if line.startswith(prefix)]
    return (found or lines or [f"exit {proc.returncode}"])[-1][:300]


def check(cli: list[str], model: Path, work: Path, mode: str) -> dict:
    out = work / f"{model.stem}.check-{mode}{model.suffix}"
    proc = bnfold(cli, "optimize", str(model), str(out), "--check", "3", "--check-mode", mode)
    return {"ok": proc.returncode == 0, "line": last_line(proc, "check:")}


def measure(cache: Path, work: Path, net: str, rounds: int, cli: list[str], checks: bool) -> dict:
    from bnfold.io.reader import read_model

    tico, litert = cache / f"tico_{net}.circle", cache / f"litert_{net}.tflite"
    files = {
        "tico_opt": work / f"tico_{net}.opt.circle",
        "litert_opt": work / f"litert_{net}.opt.tflite",
        "tico_opt_tflite": work / f"tico_{net}.opt.tflite",
        "tico_raw_tflite": work / f"tico_{net}.raw.tflite",
    }
    for source, target in ((tico, files["tico_opt"]), (litert, files["litert_opt"])):
        proc = bnfold(cli, "optimize", str(source), str(target), "--quiet")
        if proc.returncode != 0:
            return {"network": net, "error": f"optimize {source.name}: {last_line(proc, 'error')}"}
    for source, target in ((files["tico_opt"], files["tico_opt_tflite"]), (tico, files["tico_raw_tflite"])):
        proc = bnfold(cli, "convert", str(source), str(target))
        if proc.returncode != 0:
            return {"network": net, "error": f"convert {source.name}: {last_line(proc, 'error')}"}
    row: dict = {"network": net}
    row["tico_ops"], row["tico_transposes"] = counts(files["tico_opt"])
    row["litert_ops"], row["litert_transposes"] = counts(files["litert_opt"])
    row["tico_raw_ops"], row["tico_raw_transposes"] = counts(tico)
    models = {k: read_model(str(files[k])) for k in ("litert_opt", "tico_opt_tflite", "tico_raw_tflite")}
    graph = models["litert_opt"].graphs[0]
    x = [np.random.default_rng(0).normal(0, 1, t.shape).astype(np.float32) for t in graph.inputs]
    row["latency"], row["ms_litert"], row["ms_tico"] = paired_speed(
        models["litert_opt"], models["tico_opt_tflite"], x, rounds
    )
    row["latency_aa"] = paired_speed(models["litert_opt"], models["litert_opt"], x, rounds)[0]
    row["speedup"], row["ms_tico_raw"], _ = paired_speed(
        models["tico_raw_tflite"], models["tico_opt_tflite"], x, rounds
    )
    if checks:
        row["check_whole"], row["check_local"] = (check(cli, tico, work, mode) for mode in ("whole", "local"))
    return row


def verdicts(row: dict) -> dict[str, bool]:
    got = {
        "ops": row["tico_ops"] <= OPS_RATIO * row["litert_ops"],
        "transposes": row["tico_transposes"] <= row["litert_transposes"] + EXTRA_TRANSPOSES,
        "latency": row["latency"] + abs(1 - row["latency_aa"]) >= LATENCY_RATIO,
    }
    if "check_whole" in row:
        got["checks"] = row["check_whole"]["ok"] and row["check_local"]["ok"]
    return got


def markdown(rows: list[dict], meta: dict) -> str:
    done = [r for r in rows if "error" not in r]
    lines = [
        f"Exporter parity (issue 24): {meta['when']}, bnfold {meta['commit']}, input as cached, LiteRT "
        f"{meta['litert']}, {meta['rounds']} paired rounds, 1 thread, load average {meta['load']}",
        "",
        "| network | TICO+bnfold ops / TRANSPOSE | litert-torch+bnfold ops / TRANSPOSE | ops ratio | "
        "latency t(litert+bnfold)/t(TICO+bnfold) | A/A | ms litert / TICO | TICO raw ops / TRANSPOSE | "
        "speedup over TICO raw | check whole / local | targets missed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['network']} | {r['error']} |" + " |" * 9)
            continue
        checks = (
            f"{'pass' if r['check_whole']['ok'] else 'FAIL'} / {'pass' if r['check_local']['ok'] else 'FAIL'}"
            if "check_whole" in r
            else "not run"
        )
        missed = ", ".join(k for k, ok in verdicts(r).items() if not ok) or "none"
        lines.append(
            f"| {r['network']} | {r['tico_ops']} / {r['tico_transposes']} | {r['litert_ops']} / "
            f"{r['litert_transposes']} | {r['tico_ops'] / r['litert_ops']:.2f} | {r['latency']:.3f} | "
            f"{r['latency_aa']:.3f} | {r['ms_litert']:.2f} / {r['ms_tico']:.2f} | {r['tico_raw_ops']} / "
            f"{r['tico_raw_transposes']} | {r['speedup']:.3f} | {checks} | {missed} |"
        )
    if done:
        median = statistics.median(r["speedup"] for r in done)
        lines += [
            "",
            f"Median speedup of TICO+bnfold over TICO's raw export: {median:.3f} "
            f"(target >= {MEDIAN_SPEEDUP}: {'met' if median >= MEDIAN_SPEEDUP else 'MISSED'}).",
        ]
    return "\n".join(lines) + "\n"


def all_met(rows: list[dict]) -> bool:
    done = [r for r in rows if "error" not in r]
    return (
        len(done) == len(rows)
        and all(all(verdicts(r).values()) for r in done)
        and statistics.median(r["speedup"] for r in done) >= MEDIAN_SPEEDUP
    )


def run(cache: Path, out: Path, nets: list[str], rounds: int, cli: list[str], checks: bool) -> tuple[list[dict], str]:
    import os
    from importlib.metadata import version

    work = out / "parity"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for net in nets:
        if (cache / f"tico_{net}.circle").exists() and (cache / f"litert_{net}.tflite").exists():
            rows.append(measure(cache, work, net, rounds, cli, checks))
            print(json.dumps(rows[-1]), flush=True)
    commit = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit or "unknown",
        "litert": version("ai-edge-litert"),
        "rounds": rounds,
        "load": " ".join(f"{v:.1f}" for v in os.getloadavg()),
    }
    (out / "parity.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    text = markdown(rows, meta)
    (out / "parity.md").write_text(text)
    return rows, text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="where scripts/zoo.py build put the exports")
    parser.add_argument("--out", type=Path, help="where parity.md, parity.json and the models go (default: --cache)")
    parser.add_argument("--only", help=f"comma-separated networks (default: {','.join(NETWORKS)})")
    parser.add_argument("--rounds", type=int, default=40, help="paired LiteRT rounds per pair (default 40)")
    parser.add_argument("--no-check", action="store_true", help="skip the whole and per-rewrite --check runs")
    parser.add_argument("--bnfold", default=f"{sys.executable} -m bnfold", help="the bnfold command")
    args = parser.parse_args(argv)
    rows, text = run(
        args.cache,
        args.out or args.cache,
        args.only.split(",") if args.only else NETWORKS,
        args.rounds,
        args.bnfold.split(),
        not args.no_check,
    )
    print(text)
    return 0 if rows and all_met(rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
