"""Benchmark `bnfold optimize` at model scale against baselines measured in the same run.

Usage:
  python scripts/bench.py [--out DIR] [--runs N] [--skip-large] [--json PATH]
                          [--resnet50v2 PATH] [--infer-iters N] [--rebuild] [--profile]
                          [--ops-runs N] [--only-ops]
  python scripts/bench.py --batch DIR [--runs N]
  python scripts/bench.py --overhead MODEL [--runs N]

What it measures (whole processes, median of --runs, every figure a ratio to a baseline timed in
the same run so a slow or busy machine shifts both sides alike):
  (a) `bnfold optimize IN OUT` process time / a Python file-copy process (shutil.copyfile):
      the floor any file-to-file tool pays (interpreter start + moving the bytes).
  (b) the same / a read+write round trip through the bindings' object API (ModelT.InitFromObj,
      ModelT.Pack into flatbuffers.Builder(1024), Finish, write), the way LiteRT's
      flatbuffer_utils does it: what a tool gets without bnfold's zero-copy reader/writer.
  (c) peak RSS of the bnfold process / model file size (child's ru_maxrss from os.wait4).
  (d) seconds per MB across the synthetic scale series, whole process and "work" (load + passes
      + save timed inside the process, i.e. without interpreter start-up and imports, which are
      a fixed cost); flatness = max/min of work s/MB over 10 MB..1 GB.
  (e) LiteRT inference time original / optimized (speed-up; >1 is faster), default Interpreter
      with XNNPACK as LiteRT ships it, paired runs alternating which model goes first.
  (f) time per operator across the op-heavy series (3k / 12k / 48k CONV->MUL->ADD blocks, i.e.
      9k / 36k / 144k operators, tiny tensors): in-process work (load + passes + save) / operators,
      with the default passes and with `--passes ""`; flatness = max/min over the series.
The 3 GB model (offset-buffer layout) goes through `bnfold optimize` end to end and both the
original and the result are run once in LiteRT; outputs are compared.

Batch mode (`--batch DIR`, alone): scripts/bench_batch.py's docstring says what it measures.
Single-model overhead (`--overhead MODEL`, alone): scripts/bench_overhead.py's docstring says.

Two further series (`--op-heavy`, `--unchanged`; both on by default, `--only-perf` runs just them):
  op-heavy: graphs of N CONV_2D -> MUL -> ADD blocks with tiny weights (3k, 12k, 48k blocks:
      9k..144k operators), where cost is per operator, not per byte: `bnfold optimize` (default
      passes, which fold every block), a read + full rewrite with no pass (`--passes ""
      --external-buffers`, so the output must be re-serialized) and LiteRT's object-API round
      trip, each with seconds per operator and peak RSS.
  unchanged: a model no pass changes (resnet_post after one `bnfold optimize`), whose output is a
      copy of the input: `bnfold optimize` against the floor process (python, import numpy, copy
      the file), with the output checked byte-identical; and the start-up of that run and of one
      that folds (resnet_pre): what it imports past numpy (ms, from `python -X importtime`) and
      how many of bnfold's modules it loads.

Models are built by scripts/bench_models.py with bnfold's IR and writer under --out (reused when
the builder's source is unchanged; --rebuild forces). Targets are reported as pass/miss; a miss
never makes the script fail. Benchmarks live here, never in the test suite.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MB = 1 << 20
PY = sys.executable
BNFOLD = str(Path(PY).with_name("bnfold"))

# Children run with bytecode caching on, as an installed package has it: a session environment
# with PYTHONDONTWRITEBYTECODE=1 would make every run of an editable install recompile bnfold's
# modules (~30 ms), a cost no pip-installed copy pays. compile_bnfold() writes the caches first.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

COPY_SRC = "import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])"

# The object-API round trip, as LiteRT's flatbuffer_utils.read_model / write_model do it.
OBJAPI_SRC = """
import sys, flatbuffers
from ai_edge_litert import schema_py_generated as schema
with open(sys.argv[1], "rb") as f:
    buf = bytearray(f.read())
model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(buf, 0))
builder = flatbuffers.Builder(1024)
builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
with open(sys.argv[2], "wb") as f:
    f.write(builder.Output())
"""

# bnfold optimize with the fixed start-up cost (interpreter, imports) timed apart from the work.
WORK_SRC = """
import sys, time
t0 = time.perf_counter()
from bnfold import cli
t1 = time.perf_counter()
rc = cli.run(["optimize", sys.argv[1], sys.argv[2], "--quiet", *sys.argv[3:]])
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, rc)
"""

# Paired LiteRT timing: both interpreters in one process, same input, alternating order.
INFER_SRC = """
import json, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter
orig_path, opt_path, iters, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
def load(path):
    it = Interpreter(model_path=path)
    it.allocate_tensors()
    return it
interps = {"orig": load(orig_path), "opt": load(opt_path)}
rng = np.random.default_rng(0)
feeds = [rng.normal(0.0, 1.0, d["shape"]).astype(d["dtype"]) for d in interps["orig"].get_input_details()]
outs = {}
for key, it in interps.items():
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x)
    it.invoke()  # warm-up (XNNPACK packs weights on first run)
    outs[key] = [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
t = time.perf_counter()
interps["orig"].invoke()
iters = max(iters, min(5000, int(budget / (2 * (time.perf_counter() - t) + 1e-9))))  # small models: more pairs
iters += iters % 2  # as many orig-first pairs as opt-first
times = {"orig": [], "opt": []}
for i in range(iters):
    for key in (("orig", "opt") if i % 2 == 0 else ("opt", "orig")):
        t = time.perf_counter()
        interps[key].invoke()
        times[key].append(time.perf_counter() - t)
diff = max(float(np.max(np.abs(a.astype(np.float64) - b))) for a, b in zip(outs["orig"], outs["opt"]))
scale = max(float(np.max(np.abs(a))) for a in outs["orig"])
print(json.dumps({"times": times, "max_abs_diff": diff, "max_abs_out": scale}))
"""

# Run one model in LiteRT once (for the 3 GB check): load, invoke, save the outputs.
RUN_ONCE_SRC = """
import sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter
t = time.perf_counter()
it = Interpreter(model_path=sys.argv[1])
it.allocate_tensors()
rng = np.random.default_rng(0)
for d in it.get_input_details():
    it.set_tensor(d["index"], rng.normal(0.0, 1.0, d["shape"]).astype(d["dtype"]))
it.invoke()
np.save(sys.argv[2], it.get_tensor(it.get_output_details()[0]["index"]))
print(time.perf_counter() - t)
"""

TARGETS = {
    "a": ("bnfold / file copy", "<=", 3.0),
    "b": ("bnfold / object-API round trip", "<=", 0.4),
    "c": ("peak RSS / model size", "<=", 2.5),
    "d": ("work s/MB flatness 10 MB..1 GB (max/min)", "<=", 1.5),
    "e": ("inference speed-up, every model", ">=", 1.0),
    "e_pre": ("inference speed-up, pre-activation model", ">=", 1.05),
    "f": ("time per operator flatness, op series 3k..48k blocks (max/min)", "<=", 1.5),
}


# ---- processes -----------------------------------------------------------------------------
# A small launcher between the bench and each measured process: Linux starts a child's ru_maxrss at
# the RSS of the process that forked it, so forking from the (large) bench process would inflate
# every figure. The launcher (~10 MB) spawns the command, reaps it with os.wait4 and reports
# wall seconds (spawn to reap), the command's own peak RSS, its exit code and its CPU seconds
# (user + system; less sensitive than wall time to other work on a shared machine) on a pipe.
LAUNCH_SRC = """
import os, sys, time
fd, argv = int(sys.argv[1]), sys.argv[2:]
t = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - t
cpu = usage.ru_utime + usage.ru_stime
os.write(fd, f"{seconds} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)} {cpu}".encode())
"""


def run_child(argv: list[str], *, capture: bool = False) -> dict:
    """Run one whole process through the launcher: wall seconds, peak RSS (bytes), exit code,
    stdout (when `capture`) and the tail of stderr."""
    report_r, report_w = os.pipe()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [PY, "-S", "-c", LAUNCH_SRC, str(report_w), *argv],
            pass_fds=(report_w,),
            stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
            stderr=err,
            env=CHILD_ENV,
        )
        os.close(report_w)
        out = proc.stdout.read() if capture else b""
        report = os.read(report_r, 200).decode()
        os.close(report_r)
        proc.wait()
        if capture:
            proc.stdout.close()
        err.seek(0)
        stderr = err.read()[-4000:].decode(errors="replace")
    if proc.returncode != 0 or not report:
        return {"seconds": 0.0, "cpu": 0.0, "rss": 0, "rc": proc.returncode or -1, "stdout": "", "stderr": stderr}
    seconds, rss_kb, rc, cpu = report.split()
    return {
        "seconds": float(seconds),
        "cpu": float(cpu),
        "rss": int(rss_kb) * 1024,
        "rc": int(rc),
        "stdout": out.decode(),
        "stderr": stderr,
    }


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def timed_commands(commands: dict[str, list[str]], out: Path, runs: int) -> dict[str, dict]:
    """Run every command `runs` times, interleaved (so drift hits all alike); each run starts
    with no output file and no dirty pages from the previous one. Median seconds and max RSS."""
    samples = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            _remove(out)
            os.sync()
            result = run_child(argv, capture=name.startswith("work"))
            if result["rc"] != 0:
                raise RuntimeError(f"{name} failed ({result['rc']}): {' '.join(argv)}\n{result['stderr']}")
            samples[name].append(result)
    _remove(out)
    summary = {}
    for name, results in samples.items():
        summary[name] = {
            "seconds": statistics.median(r["seconds"] for r in results),
            "cpu": statistics.median(r["cpu"] for r in results),
            "all_seconds": [round(r["seconds"], 4) for r in results],
            "peak_rss": max(r["rss"] for r in results),
        }
        if name.startswith("work"):
            parsed = [tuple(float(v) for v in r["stdout"].split()[:2]) for r in results]
            summary[name]["startup"] = statistics.median(p[0] for p in parsed)
            summary[name]["work"] = statistics.median(p[1] for p in parsed)
    return summary


def compile_bnfold() -> str:
    """Write bnfold's bytecode caches (what `pip install` does), so no timed run compiles source."""
    from importlib.util import find_spec

    package = str(Path(find_spec("bnfold").origin).parent)
    subprocess.run([PY, "-m", "compileall", "-q", package], env=CHILD_ENV, check=False, stdout=subprocess.DEVNULL)
    return package


# ---- models --------------------------------------------------------------------------------
def builder_stamp() -> str:
    """Models are rebuilt when their builder or bnfold's writer changes."""
    digest = hashlib.sha256((HERE / "bench_models.py").read_bytes())
    digest.update((HERE.parent / "src" / "bnfold" / "io" / "writer.py").read_bytes())
    return digest.hexdigest()[:16]


def ensure_model(
    out_dir: Path,
    name: str,
    kind: str,
    *,
    nbytes: int = 0,
    external: bool = False,
    rebuild: bool = False,
    blocks: int = 0,
) -> Path:
    """Build a bench model unless an up-to-date one (same builder source) is already there."""
    path = out_dir / f"{name}.tflite"
    stamp = out_dir / f"{name}.stamp"
    want = f"{builder_stamp()} {kind} {nbytes} {external} {blocks}"
    if not rebuild and path.exists() and stamp.exists() and stamp.read_text() == want:
        return path
    import bench_models

    t = time.perf_counter()
    size = bench_models.build(kind, str(path), nbytes=nbytes, external=external, blocks=blocks)
    stamp.write_text(want)
    print(f"  built {path.name}: {size / MB:.1f} MB in {time.perf_counter() - t:.1f} s", flush=True)
    return path


def fold_count(model: Path, out_dir: Path) -> dict:
    """One `bnfold optimize --report` run: what the default passes folded (not timed)."""
    report = out_dir / "fold-report.json"
    opt = out_dir / f"{model.stem}.opt.tflite"
    result = run_child([BNFOLD, "optimize", str(model), str(opt), "--quiet", "--report", str(report)])
    if result["rc"] != 0:
        raise RuntimeError(f"bnfold optimize failed on {model}: {result['stderr']}")
    data = json.loads(report.read_text())
    return {"path": opt, "folds": _count_folds(data), "report": data}


def _count_folds(report) -> int:
    """Total folds in a --report JSON, whatever its exact shape (passes are still being written)."""
    if isinstance(report, dict):
        total = 0
        for key, value in report.items():
            if key in ("folds", "folded") and isinstance(value, list):
                total += len(value)
            elif key in ("folds", "folded") and isinstance(value, int):
                total += value
            else:
                total += _count_folds(value)
        return total
    if isinstance(report, list):
        return sum(_count_folds(v) for v in report)
    return 0


# ---- measurements --------------------------------------------------------------------------
def measure_process(model: Path, out_dir: Path, runs: int, *, objapi: bool = True) -> dict:
    """(a), (b), (c) and the work split for one model. "rewrite" is `bnfold optimize --passes ""`
    (read + lossless write, no pass): the foundation's figure, apart from what the passes cost."""
    out = out_dir / "bench-output.tflite"
    commands = {
        "copy": [PY, "-c", COPY_SRC, str(model), str(out)],
        "bnfold": [BNFOLD, "optimize", str(model), str(out)],
        "rewrite": [BNFOLD, "optimize", str(model), str(out), "--passes", ""],
        "work": [PY, "-c", WORK_SRC, str(model), str(out)],
        "work_rewrite": [PY, "-c", WORK_SRC, str(model), str(out), "--passes", ""],
    }
    if objapi:
        commands["objapi"] = [PY, "-c", OBJAPI_SRC, str(model), str(out)]
    m = timed_commands(commands, out, runs)
    size = model.stat().st_size
    load = os.getloadavg()[0]
    row = {
        "size": size,
        "copy_s": m["copy"]["seconds"],
        "bnfold_s": m["bnfold"]["seconds"],
        "rewrite_s": m["rewrite"]["seconds"],
        "rewrite_rss": m["rewrite"]["peak_rss"],
        "cpu_s": {k: v["cpu"] for k, v in m.items()},
        "loadavg_1min_after": load,
        "bnfold_rss": m["bnfold"]["peak_rss"],
        "copy_rss": m["copy"]["peak_rss"],
        "startup_s": m["work"]["startup"],
        "work_s": m["work"]["work"],
        "work_rewrite_s": m["work_rewrite"]["work"],
        "samples": {k: v["all_seconds"] for k, v in m.items()},
    }
    row["a"] = row["bnfold_s"] / row["copy_s"]
    row["a_rewrite"] = row["rewrite_s"] / row["copy_s"]
    row["a_cpu"] = m["bnfold"]["cpu"] / m["copy"]["cpu"]
    row["c_rewrite"] = row["rewrite_rss"] / size
    row["c"] = row["bnfold_rss"] / size
    row["s_per_mb"] = row["bnfold_s"] / (size / MB)
    row["work_s_per_mb"] = row["work_s"] / (size / MB)
    row["work_rewrite_s_per_mb"] = row["work_rewrite_s"] / (size / MB)
    if objapi:
        row["objapi_s"] = m["objapi"]["seconds"]
        row["objapi_rss"] = m["objapi"]["peak_rss"]
        row["b"] = row["bnfold_s"] / row["objapi_s"]
        row["b_rewrite"] = row["rewrite_s"] / row["objapi_s"]
        row["b_cpu"] = m["bnfold"]["cpu"] / m["objapi"]["cpu"]
    return row


def measure_ops_series(out_dir: Path, runs: int, rebuild: bool) -> dict:
    """(f): in-process work per operator over the op-heavy series, default passes and none."""
    rows = {}
    for name, blocks in OPS_SERIES:
        path = ensure_model(out_dir, name, "ops", blocks=blocks, rebuild=rebuild)
        print(f"measuring {name}", flush=True)
        out = out_dir / "bench-output.tflite"
        m = timed_commands(
            {
                "work": [PY, "-c", WORK_SRC, str(path), str(out)],
                "work_rewrite": [PY, "-c", WORK_SRC, str(path), str(out), "--passes", ""],
            },
            out,
            runs,
        )
        ops = 3 * blocks
        rows[name] = {
            "blocks": blocks,
            "ops": ops,
            "size": path.stat().st_size,
            "folds": fold_count(path, out_dir)["folds"],
            "work_s": m["work"]["work"],
            "work_rewrite_s": m["work_rewrite"]["work"],
            "peak_rss": m["work"]["peak_rss"],
            "loadavg_1min_after": os.getloadavg()[0],
            "us_per_op": 1e6 * m["work"]["work"] / ops,
            "us_per_op_rewrite": 1e6 * m["work_rewrite"]["work"] / ops,
            "samples": {k: v["all_seconds"] for k, v in m.items()},
        }
        _remove(out_dir / f"{path.stem}.opt.tflite")
    return {
        "rows": rows,
        "flatness_f": _flatness(r["us_per_op"] for r in rows.values()),
        "flatness_f_rewrite": _flatness(r["us_per_op_rewrite"] for r in rows.values()),
    }


def print_ops_series(series: dict) -> None:
    head = (
        f"{'model':<10}{'blocks':>8}{'ops':>8}{'folds':>7}{'work s':>9}{'us/op':>8}"
        f"{'rewrite s':>10}{'us/op rw':>9}{'RSS MB':>8}"
    )
    print(head)
    print("-" * len(head))
    for name, r in series["rows"].items():
        print(
            f"{name:<10}{r['blocks']:>8}{r['ops']:>8}{r['folds']:>7}{r['work_s']:>9.2f}{r['us_per_op']:>8.1f}"
            f"{r['work_rewrite_s']:>10.2f}{r['us_per_op_rewrite']:>9.1f}{r['peak_rss'] / MB:>8.0f}"
        )
    print(
        f"(f) max/min time per operator: default passes {series['flatness_f']:.2f}, "
        f"--passes '' {series['flatness_f_rewrite']:.2f} (target <= {TARGETS['f'][2]})"
    )


def measure_inference(orig: Path, opt: Path, iters: int, budget: float) -> dict:
    """(e): median original time / median optimized time over paired alternating runs (at least
    `iters` pairs, more for fast models until about `budget` seconds are spent)."""
    r = run_child([PY, "-c", INFER_SRC, str(orig), str(opt), str(iters), str(budget)], capture=True)
    if r["rc"] != 0:
        return {"error": r["stderr"].strip().splitlines()[-1] if r["stderr"].strip() else f"exit {r['rc']}"}
    data = json.loads(r["stdout"].strip().splitlines()[-1])
    t_orig, t_opt = statistics.median(data["times"]["orig"]), statistics.median(data["times"]["opt"])
    return {
        "orig_ms": 1000 * t_orig,
        "opt_ms": 1000 * t_opt,
        "e": t_orig / t_opt,
        "max_abs_diff": data["max_abs_diff"],
        "max_abs_out": data["max_abs_out"],
        "iters": len(data["times"]["orig"]),
    }


def big_model_check(model: Path, out_dir: Path) -> dict:
    """The 3 GB model end to end: `bnfold optimize` (offset layout), then LiteRT runs the original
    and the result once each and the outputs are compared."""
    import numpy as np

    opt = out_dir / f"{model.stem}.opt.tflite"
    _remove(opt)
    os.sync()
    res = run_child([BNFOLD, "optimize", str(model), str(opt), "--quiet"])
    check = {
        "optimize_rc": res["rc"],
        "optimize_s": res["seconds"],
        "optimize_rss": res["rss"],
        "size": model.stat().st_size,
    }
    if res["rc"] != 0:
        check["error"] = res["stderr"].strip()
        return check
    check["opt_size"] = opt.stat().st_size
    check["opt_offset_layout"] = _offset_layout(opt)
    check["input_offset_layout"] = _offset_layout(model)
    outputs = {}
    for key, path in (("orig", model), ("opt", opt)):
        npy = out_dir / f"big-{key}.npy"
        r = run_child([PY, "-c", RUN_ONCE_SRC, str(path), str(npy)], capture=True)
        check[f"litert_{key}_rc"] = r["rc"]
        check[f"litert_{key}_rss"] = r["rss"]
        if r["rc"] != 0:
            check[f"litert_{key}_error"] = r["stderr"].strip().splitlines()[-1:]
            continue
        check[f"litert_{key}_s"] = float(r["stdout"].split()[-1])
        outputs[key] = np.load(npy)
    if len(outputs) == 2:
        check["max_abs_diff"] = float(np.max(np.abs(outputs["orig"].astype(np.float64) - outputs["opt"])))
        check["max_abs_out"] = float(np.max(np.abs(outputs["orig"])))
    check["runtime"] = "litert"
    _remove(opt)
    return check


def _offset_layout(path: Path) -> bool:
    """True when the file's weights live after the flatbuffer (any Buffer.offset > 1)."""
    import mmap

    from ai_edge_litert import schema_py_generated as schema

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        root = schema.Model.GetRootAs(m, 0)
        return any(root.Buffers(i).Offset() > 1 for i in range(root.BuffersLength()))


def profile_optimize(model: Path, out_dir: Path) -> str:
    """cProfile of one `bnfold optimize` process (for when (a)/(b)/(c) miss): top functions."""
    prof = out_dir / f"{model.stem}.prof"
    out = out_dir / "bench-output.tflite"
    run_child([PY, "-m", "cProfile", "-o", str(prof), "-m", "bnfold", "optimize", str(model), str(out), "--quiet"])
    _remove(out)
    import io
    import pstats

    text = io.StringIO()
    stats = pstats.Stats(str(prof), stream=text)
    stats.sort_stats("cumulative").print_stats(25)
    stats.sort_stats("tottime").print_stats(20)
    return text.getvalue()


# ---- op-heavy and unchanged-model series -------------------------------------------------------
# The floor any Python tool pays: start the interpreter, import numpy, copy the file.
FLOOR_SRC = "import shutil, sys; import numpy; shutil.copyfile(sys.argv[1], sys.argv[2])"
OP_HEAVY_BLOCKS = (3000, 12000, 48000)


def measure_op_heavy(out_dir: Path, blocks: int, runs: int, rebuild: bool) -> dict:
    """One op-heavy model: default optimize, pass-less full rewrite and the object-API round
    trip, interleaved; seconds (median), seconds per operator and peak RSS of each."""
    name = f"ops_{blocks // 1000}k" if blocks % 1000 == 0 else f"ops_{blocks}"  # as OPS_SERIES names them
    model = ensure_model(out_dir, name, "ops", blocks=blocks, rebuild=rebuild)
    out = out_dir / "bench-output.tflite"
    commands = {
        "objapi": [PY, "-c", OBJAPI_SRC, str(model), str(out)],
        "bnfold": [BNFOLD, "optimize", str(model), str(out), "--quiet"],
        "rewrite": [BNFOLD, "optimize", str(model), str(out), "--quiet", "--passes", "", "--external-buffers"],
    }
    m = timed_commands(commands, out, runs)
    ops = 3 * blocks
    row = {"blocks": blocks, "operators": ops, "size": model.stat().st_size, "loadavg_1min_after": os.getloadavg()[0]}
    for name, r in m.items():
        row[f"{name}_s"], row[f"{name}_rss"] = r["seconds"], r["peak_rss"]
        row[f"{name}_us_per_op"] = 1e6 * r["seconds"] / ops
        row[f"{name}_samples"] = r["all_seconds"]
    row["bnfold_vs_objapi"] = row["bnfold_s"] / row["objapi_s"]
    row["rewrite_vs_objapi"] = row["rewrite_s"] / row["objapi_s"]
    return row


def measure_unchanged(out_dir: Path, runs: int, rebuild: bool) -> dict:
    """Against the floor process, interleaved: a model no pass changes (resnet_post after one
    `bnfold optimize`; its output is a copy, checked byte-identical) with the default passes and
    with `--passes ""`, and resnet_pre (ResNet50V2-shaped, pre-activation batch norms) with the
    default passes, which fold."""
    source = ensure_model(out_dir, "resnet_post", "resnet_post", rebuild=rebuild)
    pre = ensure_model(out_dir, "resnet_pre", "resnet_pre", rebuild=rebuild)
    model = out_dir / "unchanged.tflite"
    result = run_child([BNFOLD, "optimize", str(source), str(model), "--quiet"])
    if result["rc"] != 0:
        raise RuntimeError(f"bnfold optimize failed on {source}: {result['stderr']}")
    out = out_dir / "bench-output.tflite"
    check = run_child([BNFOLD, "optimize", str(model), str(out)], capture=True)
    identical = check["rc"] == 0 and out.read_bytes() == model.read_bytes() and "unchanged" in check["stdout"]
    commands = {
        "floor": [PY, "-c", FLOOR_SRC, str(model), str(out)],
        "bnfold": [BNFOLD, "optimize", str(model), str(out), "--quiet"],
        "no_passes": [BNFOLD, "optimize", str(model), str(out), "--quiet", "--passes", ""],
        "floor_pre": [PY, "-c", FLOOR_SRC, str(pre), str(out)],
        "bnfold_pre": [BNFOLD, "optimize", str(pre), str(out), "--quiet"],
    }
    m = timed_commands(commands, out, runs)
    row = {
        "size": model.stat().st_size,
        "size_pre": pre.stat().st_size,
        "byte_identical": identical,
        "loadavg_1min_after": os.getloadavg()[0],
        "startup": measure_startup(model, out, runs),  # (the start-up of one run: imports past numpy)
        "startup_pre": measure_startup(pre, out, runs),
    }
    for name, r in m.items():
        row[f"{name}_s"], row[f"{name}_rss"], row[f"{name}_samples"] = r["seconds"], r["peak_rss"], r["all_seconds"]
    row["bnfold_vs_floor"] = row["bnfold_s"] / row["floor_s"]
    row["no_passes_vs_floor"] = row["no_passes_s"] / row["floor_s"]
    row["pre_vs_floor"] = row["bnfold_pre_s"] / row["floor_pre_s"]
    row["pre_rss_vs_size"] = row["bnfold_pre_rss"] / row["size_pre"]
    _remove(model)
    return row


# The program as `bnfold` runs it, telling at its exit (exits.leave runs the atexit handlers) which
# modules it loaded past numpy, in the order they were loaded.
LOADED_SRC = """
import atexit, sys
import numpy
first = set(sys.modules)
atexit.register(lambda: print(" ".join(m for m in sys.modules if m not in first), file=sys.stderr))
sys.argv = ["bnfold", *sys.argv[1:]]
from bnfold.__main__ import main
main()
"""
# A fresh process importing those modules after numpy, in that order: their whole import cost.
IMPORT_SRC = """
import importlib, sys, time
import numpy
start = time.process_time()
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
print(time.process_time() - start)
"""


def measure_startup(model: Path, out: Path, runs: int) -> dict:
    """What `bnfold optimize IN OUT --quiet` imports past numpy (which the program imports first):
    how many of bnfold's modules (every import of the run, lazy ones included), and what importing
    all it loaded costs, in CPU ms (median of `runs` fresh processes importing them after numpy, in the
    order the run loaded them)."""
    argv = ["optimize", str(model), str(out), "--quiet"]
    done = subprocess.run([PY, "-c", LOADED_SRC, *argv], capture_output=True, text=True, env=CHILD_ENV)
    if done.returncode != 0:
        raise RuntimeError(f"bnfold optimize failed on {model}: {done.stderr[-2000:]}")
    loaded = done.stderr.split("\n")[-2].split()
    times = []
    for _ in range(runs):
        timed = subprocess.run([PY, "-c", IMPORT_SRC, *loaded], capture_output=True, text=True, env=CHILD_ENV)
        times.append(1000 * float(timed.stdout))
    ours = [name for name in loaded if name.split(".")[0] == "bnfold"]
    return {"imports_ms": statistics.median(times), "modules": len(ours), "imports_ms_all": times}


def print_perf_series(op_heavy: list[dict], unchanged: dict | None) -> None:
    if op_heavy:
        head = (
            f"{'blocks':>7}{'ops':>8}{'MB':>6}{'objAPI s':>10}{'us/op':>7}{'RSS MB':>8}{'bnfold s':>10}{'us/op':>7}"
            f"{'RSS MB':>8}{'ratio':>7}{'rewrite s':>10}{'us/op':>7}{'RSS MB':>8}{'ratio':>7}"
        )
        print(head)
        print("-" * len(head))
        for r in op_heavy:
            print(
                f"{r['blocks']:>7}{r['operators']:>8}{r['size'] / MB:>6.1f}"
                f"{r['objapi_s']:>10.2f}{r['objapi_us_per_op']:>7.0f}{r['objapi_rss'] / MB:>8.0f}"
                f"{r['bnfold_s']:>10.2f}{r['bnfold_us_per_op']:>7.0f}{r['bnfold_rss'] / MB:>8.0f}"
                f"{r['bnfold_vs_objapi']:>7.2f}{r['rewrite_s']:>10.2f}{r['rewrite_us_per_op']:>7.0f}"
                f"{r['rewrite_rss'] / MB:>8.0f}{r['rewrite_vs_objapi']:>7.2f}"
            )
        for key in ("bnfold", "rewrite", "objapi"):
            per_op = [r[f"{key}_us_per_op"] for r in op_heavy]
            print(f"  {key}: time per operator max/min over the series {max(per_op) / min(per_op):.2f}")
    if unchanged:
        u = unchanged
        print(
            f"unchanged model ({u['size'] / MB:.1f} MB): floor {u['floor_s']:.3f} s, "
            f"bnfold optimize {u['bnfold_s']:.3f} s ({u['bnfold_vs_floor']:.2f}x), "
            f"--passes '' {u['no_passes_s']:.3f} s ({u['no_passes_vs_floor']:.2f}x), "
            f"peak RSS {u['bnfold_rss'] / MB:.0f} MB, byte-identical: {u['byte_identical']}"
        )
        print(
            f"resnet_pre ({u['size_pre'] / MB:.1f} MB, default passes): floor {u['floor_pre_s']:.3f} s, "
            f"bnfold optimize {u['bnfold_pre_s']:.3f} s ({u['pre_vs_floor']:.2f}x), "
            f"peak RSS {u['bnfold_pre_rss'] / MB:.0f} MB ({u['pre_rss_vs_size']:.2f}x the file)"
        )
        for label, key in (("unchanged", "startup"), ("resnet_pre", "startup_pre")):
            if key in u:
                print(
                    f"start-up, {label}: imports past numpy {u[key]['imports_ms']:.1f} ms of CPU (median), "
                    f"{u[key]['modules']} of bnfold's modules loaded"
                )


# ---- report --------------------------------------------------------------------------------
def _flatness(values) -> float:
    values = list(values)
    return max(values) / min(values)


def series_scaling(series: list[dict]) -> dict:
    """(d) several ways: s/MB of the in-process work (load + passes + save; judged), of the
    pass-less rewrite's work, of the whole process (start-up included, so small models look
    slow per MB), and the marginal cost between consecutive sizes (whole process: the slope,
    which a fixed start-up cost does not affect)."""
    out = {
        "work s/MB, default passes (judged)": _flatness(r["work_s_per_mb"] for r in series),
        "work s/MB, --passes ''": _flatness(r["work_rewrite_s_per_mb"] for r in series),
        "whole-process s/MB, default passes": _flatness(r["s_per_mb"] for r in series),
    }
    for label, key in (("default passes", "bnfold_s"), ("--passes ''", "rewrite_s")):
        slopes = [(b[key] - a[key]) / ((b["size"] - a["size"]) / MB) for a, b in zip(series, series[1:])]
        out[f"marginal whole-process s/MB, {label}"] = _flatness(slopes) if min(slopes) > 0 else float("nan")
    return out


def verdict(key: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    _, op, limit = TARGETS[key]
    ok = value <= limit if op == "<=" else value >= limit
    return "pass" if ok else "MISS"


def targets_summary(rows: dict, flatness: float | None) -> list[dict]:
    """Targets judged where the issue sets them: (a)-(c) on the ~100 MB models and larger
    (on 10 MB files interpreter start-up dominates), both for the default passes and for the
    pass-less rewrite; (e) wherever inference was measured."""
    out = []
    for name, row in rows.items():
        judged = row["size"] >= 90 * MB
        for key in ("a", "b", "c"):
            for variant, field in (("default passes", key), ("--passes ''", f"{key}_rewrite")):
                if field in row and judged:
                    out.append(
                        {
                            "target": key,
                            "model": name,
                            "run": variant,
                            "value": row[field],
                            "verdict": verdict(key, row[field]),
                        }
                    )
        if "e" in row.get("inference", {}):
            e = row["inference"]["e"]
            out.append({"target": "e", "model": name, "run": "default passes", "value": e, "verdict": verdict("e", e)})
            if row.get("preactivation"):
                out.append(
                    {
                        "target": "e_pre",
                        "model": name,
                        "run": "default passes",
                        "value": e,
                        "verdict": verdict("e_pre", e),
                    }
                )
    if flatness is not None:
        out.append(
            {
                "target": "d",
                "model": "scale series",
                "run": "default passes",
                "value": flatness,
                "verdict": verdict("d", flatness),
            }
        )
    return out


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(rows: dict) -> None:
    """Two tables: the default `bnfold optimize` against the baselines, then the pass-less rewrite
    and CPU-time ratios (the latter as a cross-check when the machine is shared)."""
    head = (
        f"{'model':<12}{'MB':>7}{'copy s':>8}{'objAPI s':>9}{'bnfold s':>9}{'(a)':>7}{'(b)':>6}"
        f"{'RSS MB':>8}{'(c)':>6}{'s/MB':>9}{'work s/MB':>10}{'folds':>6}{'infer ms':>13}{'(e)':>7}"
    )
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        inf = r.get("inference", {})
        ms = f"{inf['orig_ms']:.1f}/{inf['opt_ms']:.1f}" if "orig_ms" in inf else "-"
        print(
            f"{name:<12}{r['size'] / MB:>7.1f}{r['copy_s']:>8.3f}{_fmt(r.get('objapi_s'), '.3f'):>9}"
            f"{r['bnfold_s']:>9.3f}{r['a']:>7.2f}{_fmt(r.get('b'), '.2f'):>6}{r['bnfold_rss'] / MB:>8.0f}"
            f"{r['c']:>6.2f}{r['s_per_mb']:>9.5f}{r['work_s_per_mb']:>10.5f}{_fmt(r.get('folds'), 'd'):>6}"
            f"{ms:>13}{_fmt(inf.get('e'), '.3f'):>7}"
        )
    head = (
        f"{'model':<12}{'rewrite s':>10}{'(a) rw':>8}{'(b) rw':>8}{'RSS MB rw':>10}{'(c) rw':>8}"
        f"{'startup s':>10}{'work s':>8}{'(a) cpu':>8}{'(b) cpu':>8}{'load':>6}"
    )
    print()
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        print(
            f"{name:<12}{r['rewrite_s']:>10.3f}{r['a_rewrite']:>8.2f}{_fmt(r.get('b_rewrite'), '.2f'):>8}"
            f"{r['rewrite_rss'] / MB:>10.0f}{r['c_rewrite']:>8.2f}{r['startup_s']:>10.3f}{r['work_s']:>8.3f}"
            f"{r['a_cpu']:>8.2f}{_fmt(r.get('b_cpu'), '.2f'):>8}{r['loadavg_1min_after']:>6.1f}"
        )


def markdown_table(result: dict) -> str:
    """docs/measurements.md's Performance table, from a bench JSON (figures copied, never retyped)."""
    names = {
        "resnet50v2": "ResNet50V2",
        "scale_10mb": "scale 10 MB",
        "scale_100mb": "scale 100 MB",
        "scale_1gb": "scale 1 GB",
        "scale_3gb": "scale 3 GB",
    }
    lines = [
        "| model | MB | copy s | object API s | bnfold s | (a) | (b) | peak RSS MB | (c) "
        '| `--passes ""` s | (a) | (b) | (c) | LiteRT ms orig / opt | (e) |',
        "|" + "---|" * 15,
    ]
    big = result.get("big_model_check") or {}
    for name, r in result["models"].items():
        inf = r.get("inference", {})
        spec = ".2f" if inf.get("orig_ms", 99) < 1 else ".1f"
        infer = f"{inf['orig_ms']:{spec}} / {inf['opt_ms']:{spec}}" if "orig_ms" in inf else ""
        if name == "scale_3gb" and "litert_opt_s" in big:
            infer = f"load + 1 run: {big['litert_orig_s']:.2f} s / {big['litert_opt_s']:.2f} s"
        objapi = _fmt(r.get("objapi_s"), ".3f") if "objapi_s" in r else "(cannot)"
        cells = [
            names.get(name, name),
            f"{r['size'] / MB:.1f}",
            f"{r['copy_s']:.3f}",
            objapi,
            f"{r['bnfold_s']:.3f}",
            f"{r['a']:.2f}",
            _fmt(r.get("b"), ".2f").replace("-", ""),
            f"{r['bnfold_rss'] / MB:.0f}",
            f"{r['c']:.2f}",
            f"{r['rewrite_s']:.3f}",
            f"{r['a_rewrite']:.2f}",
            _fmt(r.get("b_rewrite"), ".2f").replace("-", ""),
            f"{r['c_rewrite']:.2f}",
            infer,
            _fmt(inf.get("e"), ".3f").replace("-", ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine_info() -> dict:
    info = {
        "cores": os.cpu_count(),
        "bytecode": "cached (compileall, as an installed package)",
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["mem_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    from importlib.metadata import version

    for pkg in ("bnfold", "ai-edge-litert", "flatbuffers", "numpy"):
        info[pkg] = version(pkg)
    return info


# ---- main ----------------------------------------------------------------------------------
SERIES = (
    ("scale_10mb", 10 * MB, False),
    ("scale_100mb", 100 * MB, False),
    ("scale_1gb", 1024 * MB, False),
    ("scale_3gb", 3 * 1024 * MB, True),
)
OPS_SERIES = (("ops_3k", 3000), ("ops_12k", 12000), ("ops_48k", 48000))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="bench-out", help="directory for generated models and results")
    p.add_argument("--runs", type=int, default=5, help="process runs per command (median reported)")
    p.add_argument("--skip-large", action="store_true", help="skip the 1 GB and 3 GB models")
    p.add_argument("--json", default=None, help="JSON results path (default OUT/bench.json)")
    default_r50 = "/work/models/resnet50v2.tflite"
    p.add_argument(
        "--resnet50v2",
        default=default_r50 if os.path.exists(default_r50) else None,
        help="also measure this TFLite model (default: %(default)s when it exists)",
    )
    p.add_argument("--infer-iters", type=int, default=20, help="paired LiteRT iterations per model")
    p.add_argument(
        "--infer-budget",
        type=float,
        default=4.0,
        help="seconds of paired LiteRT runs per model (at least --infer-iters pairs)",
    )
    p.add_argument("--rebuild", action="store_true", help="rebuild models even if up to date")
    p.add_argument(
        "--markdown", metavar="JSON", help="print docs/measurements.md's table of an earlier run's JSON and exit"
    )
    p.add_argument("--profile", action="store_true", help="cProfile bnfold optimize on the 100 MB models")
    p.add_argument(
        "--ops-runs", type=int, default=3, help="process runs per command in the op-heavy series (0 skips it)"
    )
    p.add_argument("--only-ops", action="store_true", help="measure only the op-heavy series")
    p.add_argument(
        "--op-heavy",
        default=",".join(map(str, OP_HEAVY_BLOCKS)),
        metavar="N,N",
        help="block counts of the op-heavy series ('' skips it; default %(default)s)",
    )
    p.add_argument("--op-heavy-runs", type=int, default=3, help="process runs per command in the op-heavy series")
    p.add_argument("--no-unchanged", action="store_true", help="skip the unchanged-model row")
    p.add_argument("--only-perf", action="store_true", help="run only the op-heavy series and the unchanged-model row")
    p.add_argument(
        "--batch",
        metavar="DIR",
        default=None,
        help="measure only batch mode over the models under DIR against a shell loop (scripts/bench_batch.py)",
    )
    p.add_argument(
        "--overhead",
        metavar="MODEL",
        default=None,
        help="measure only one optimize of MODEL, and of its optimized (unchanged) form, against the floor "
        "process (scripts/bench_overhead.py)",
    )
    return p.parse_args(argv)


def build_models(out_dir: Path, args) -> dict:
    """name -> (path, inference measured, pre-activation) for the model-scale table."""
    print("building models", flush=True)
    models = {
        "resnet_post": (ensure_model(out_dir, "resnet_post", "resnet_post", rebuild=args.rebuild), True, False),
        "resnet_pre": (ensure_model(out_dir, "resnet_pre", "resnet_pre", rebuild=args.rebuild), True, True),
    }
    if args.resnet50v2:
        models["resnet50v2"] = (Path(args.resnet50v2), True, True)
    for name, nbytes, external in SERIES:
        if args.skip_large and nbytes > 100 * MB:
            continue
        path = ensure_model(out_dir, name, "scale", nbytes=nbytes, external=external, rebuild=args.rebuild)
        models[name] = (path, nbytes <= 100 * MB, False)
    return models


def _one_series(name: str, row: dict, report: list[str], args, out_dir: Path) -> int:
    """Print a series measured alone (--batch, --overhead) and write its JSON (bench-NAME.json)."""
    print("\n".join(report))
    json_path = Path(args.json) if args.json else out_dir / f"bench-{name}.json"
    json_path.write_text(
        json.dumps(
            {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(), name: row},
            indent=1,
        )
    )
    print(f"wrote {json_path}")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.markdown:
        print(markdown_table(json.loads(Path(args.markdown).read_text())))
        return 0
    out_dir = Path(args.out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    compile_bnfold()
    if args.overhead:
        import bench_overhead

        row = bench_overhead.measure(Path(args.overhead).resolve(), out_dir, args.runs, run_child, BNFOLD, PY)
        return _one_series("overhead", row, bench_overhead.report(row), args, out_dir)
    if args.batch:
        import bench_batch

        row = bench_batch.measure(Path(args.batch).resolve(), out_dir, args.runs, run_child, BNFOLD)
        return _one_series("batch", row, bench_batch.report(row), args, out_dir)
    op_heavy = []
    for n in [] if args.only_ops else args.op_heavy.split(","):
        if n.strip():
            print(f"measuring op-heavy {n} blocks", flush=True)
            op_heavy.append(measure_op_heavy(out_dir, int(n), args.op_heavy_runs, args.rebuild))
    unchanged = None
    if not (args.no_unchanged or args.only_ops):
        print("measuring the unchanged model", flush=True)
        unchanged = measure_unchanged(out_dir, args.runs, args.rebuild)
    models = {} if args.only_perf or args.only_ops else build_models(out_dir, args)

    rows, profiles = {}, {}
    for name, (path, infer, pre) in models.items():
        print(f"measuring {name}", flush=True)
        offset = name == "scale_3gb"  # the object API cannot round-trip the offset layout (or >2 GB)
        row = measure_process(path, out_dir, args.runs, objapi=not offset)
        row["preactivation"] = pre
        if not offset:
            folded = fold_count(path, out_dir)
            row["folds"] = folded["folds"]
            if infer:
                row["inference"] = measure_inference(path, folded["path"], args.infer_iters, args.infer_budget)
            _remove(folded["path"])
        rows[name] = row
        if args.profile and 90 * MB <= row["size"] <= 200 * MB:
            profiles[name] = profile_optimize(path, out_dir)

    series = [rows[n] for n, _, _ in SERIES if n in rows and n != "scale_3gb"]
    flatness = scaling = None
    if len(series) >= 2:
        flatness = _flatness(r["work_s_per_mb"] for r in series)
        scaling = series_scaling(series)
    big = big_model_check(models["scale_3gb"][0], out_dir) if "scale_3gb" in models else None
    ops_series = (
        measure_ops_series(out_dir, args.ops_runs, args.rebuild) if args.ops_runs > 0 and not args.only_perf else None
    )

    print()
    print_perf_series(op_heavy, unchanged)
    print()
    if rows:
        print_table(rows)
    if ops_series is not None:
        print()
        print_ops_series(ops_series)
    if scaling is not None:
        print("\n(d) scale series 10 MB..1 GB, max/min of s/MB (target judged on the first):")
        for key, value in scaling.items():
            print(f"    {key:<42} {value:.2f}")
    if big is not None:
        print(f"3 GB check: {json.dumps(big)}")
    summary = targets_summary(rows, flatness)
    if ops_series is not None:
        summary.append(
            {
                "target": "f",
                "model": "op series",
                "run": "default passes",
                "value": ops_series["flatness_f"],
                "verdict": verdict("f", ops_series["flatness_f"]),
            }
        )
    print("\ntargets:")
    for t in summary:
        label, op, limit = TARGETS[t["target"]]
        print(f"  ({t['target']}) {label} {op} {limit}: {t['model']} [{t['run']}] {t['value']:.3f} {t['verdict']}")
    for name, text in profiles.items():
        print(f"\nprofile of bnfold optimize on {name}:\n{text}")

    result = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine_info(),
        "runs": args.runs,
        "infer_iters": args.infer_iters,
        "models": rows,
        "flatness_d": flatness,
        "series_scaling": scaling,
        "big_model_check": big,
        "ops_series": ops_series,
        "targets": summary,
        "profiles": profiles,
        "op_heavy": op_heavy,
        "unchanged": unchanged,
        "elapsed_s": round(time.time() - started, 1),
    }
    json_path = Path(args.json) if args.json else out_dir / "bench.json"
    json_path.write_text(json.dumps(result, indent=1, default=str))
    print(f"\nwrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
