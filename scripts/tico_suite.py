"""TICO's own test modules under `bnfold optimize -O1`, in onert and LiteRT (issue 43's last target).

    python scripts/tico_suite.py export  --tico TICO_CHECKOUT --cache DIR [--python ZOO_PYTHON] [--only PREFIX]
    python scripts/tico_suite.py measure --cache DIR [--only PREFIX]
    python scripts/tico_suite.py table   --cache DIR

`export` (run with any Python; its worker runs under --python, an environment with torch and pip `tico`,
never bnfold): every torch module class of TICO's test/modules (op/, net/, model/), chosen as TICO's test
builder chooses them (a file's `@target` classes, else all of its nn.Module classes; `@skip` and
`@test_negative` classes are listed, not exported), is exported with `tico.convert` on the inputs of its
own `get_example_inputs()` (seeded random tensors), with its `get_compile_config()` (e.g.
CompileConfigV1(convert_lhs_const_mm_to_fc=True), TICO's workaround for onert) and dynamic shapes if it
has them, to DIR/circle/NAME.circle, with the inputs in the model's input order in NAME.inputs.npz.

`measure` (run with bnfold's own environment, which has onert and LiteRT): per module,
- raw: the export in onert (cpu backend, one thread) and, written as TFLite by `bnfold convert`, in LiteRT
  (builtin kernels without default delegates, one thread);
- `bnfold optimize -O1 NAME.circle o1.circle` (target onert, the default for .circle) run in onert, and
  `bnfold optimize -O1 --target litert NAME.circle o1.tflite` run in LiteRT, on the same inputs;
- equal: every output has the raw output's shape and dtype; floats within 1e-5 of the largest |value|
  of that output (NaN where the raw output has NaN), integers and booleans exact.
`table` prints the figures (markdown) and writes DIR/tico_suite.md and .json. With `--samples N`, `measure`
runs the module's inputs and N - 1 more samples (float inputs drawn again from normal(0, 2), integer and
boolean ones kept: they are often indices), keeping its results apart (DIR/measure-N, tico_suite-N.md).

Every step keeps its result in DIR (resumable: a module done is not redone; delete DIR/results to
measure again). Workers run one module at a time in a child process, so a runtime that crashes the
process (a signal) is recorded for that module and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve()
BIN = Path(sys.executable).parent  # bnfold beside the Python that runs `measure`
EXPORT_SECONDS = 600  # one module's export; the big models of model/ may take minutes
MEASURE_SECONDS = 300
REL_TOL = 1e-5
CROSS_TOL = 1e-4  # onert and LiteRT: two kernel libraries, each rounding its own way


# ---------------------------------------------------------------------------------------------------------------
# The driver: one child process works through the pending modules; a crash records the module it was on.


def drive(kind: str, names: list[str], cache: Path, python: str, extra: list[str], seconds: int) -> None:
    """Run `worker KIND` children until every name has a result in cache/KIND/NAME.json."""
    done_dir = cache / kind
    done_dir.mkdir(parents=True, exist_ok=True)
    pending = [n for n in names if not (done_dir / f"{n}.json").exists()]
    print(f"{kind}: {len(names) - len(pending)} done, {len(pending)} to go", flush=True)
    while pending:
        current = done_dir / "_current"
        current.unlink(missing_ok=True)
        (done_dir / "_pending.txt").write_text("\n".join(pending) + "\n")
        argv = [python, str(HERE), "worker", kind, "--cache", str(cache), *extra]
        child = subprocess.Popen(argv)
        started, last = time.monotonic(), None
        while child.poll() is None:
            time.sleep(1)
            name = current.read_text() if current.exists() else None
            if name != last:
                started, last = time.monotonic(), name
            if name and time.monotonic() - started > seconds:
                child.kill()
                child.wait()
                write_json(done_dir / f"{name}.json", {"name": name, "error": f"timeout after {seconds} s"})
        name = current.read_text() if current.exists() else None
        if child.returncode != 0 and name and not (done_dir / f"{name}.json").exists():
            why = f"process died (exit {child.returncode})"
            write_json(done_dir / f"{name}.json", {"name": name, "error": why})
        before = len(pending)
        pending = [n for n in pending if not (done_dir / f"{n}.json").exists()]
        if len(pending) == before:  # the child made no progress and named no module: give up loudly
            sys.exit(f"{kind}: the worker stopped (exit {child.returncode}) without finishing {pending[0]}")


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)


def worker(kind: str, cache: Path, tico: Path | None, samples: int) -> None:
    done_dir = cache / kind
    names = (done_dir / "_pending.txt").read_text().split()
    for name in names:
        if (done_dir / f"{name}.json").exists():
            continue
        (done_dir / "_current").write_text(name)
        result = export_one(name, cache, tico) if kind == "export" else measure_one(name, cache, samples)
        write_json(done_dir / f"{name}.json", {"name": name, **result})


# ---------------------------------------------------------------------------------------------------------------
# export: TICO's modules, as its test builder (pt2_to_circle_test) picks and converts them.


def list_modules(tico: Path, groups: tuple[str, ...]) -> list[str]:
    """NAME = group.file.Class for every test target; found by a worker (it imports torch)."""
    out = subprocess.run(
        [ZOO_PYTHON, str(HERE), "list", "--tico", str(tico), "--groups", ",".join(groups)],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(f"listing TICO's modules failed: {out.stderr.strip()[-500:]}")
    return out.stdout.split()


def list_worker(tico: Path, groups: list[str]) -> None:
    import importlib
    import inspect
    import pkgutil

    import torch

    sys.path.insert(0, str(tico))
    for group in groups:
        package = importlib.import_module(f"test.modules.{group}")
        for info in pkgutil.walk_packages(package.__path__, prefix=f"test.modules.{group}."):
            submodule = info.name
            short = submodule.removeprefix("test.modules.")
            try:
                module = importlib.import_module(submodule)
            except Exception as e:  # e.g. a requirement not installed: one listed name says so
                print(f"{short}: {type(e).__name__}: {e}", file=sys.stderr)
                print(f"{short}.IMPORT")
                continue
            classes = [
                c
                for _, c in inspect.getmembers(module, inspect.isclass)
                if c.__module__ == submodule and issubclass(c, torch.nn.Module)
            ]
            if any(hasattr(c, "__tag_target") for c in classes):
                classes = [c for c in classes if hasattr(c, "__tag_target")]
            for c in classes:
                print(f"{short}.{c.__name__}")


def export_one(name: str, cache: Path, tico: Path | None) -> dict:
    import importlib
    import traceback

    import numpy as np

    assert tico is not None
    sys.path.insert(0, str(tico))
    file, cls = name.rsplit(".", 1)
    try:
        module = importlib.import_module(f"test.modules.{file}")
    except Exception as e:
        return {"skipped": f"import fails: {type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    if cls == "IMPORT":
        return {"skipped": "the file imports (no module listed)"}
    klass = getattr(module, cls)
    if hasattr(klass, "__tag_skip"):
        return {"skipped": f"TICO skips it: {getattr(klass, '__tag_skip_reason', '')}"}
    if hasattr(klass, "__tag_test_negative"):
        return {"skipped": f"negative test (export expected to fail: {getattr(klass, '__tag_expected_err', '')})"}
    import tico as tico_package
    import torch
    from tico.utils.signature import ModelInputSpec

    circle = cache / "circle" / f"{name}.circle"
    circle.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        nnmodule = klass()
        args, kwargs = nnmodule.get_example_inputs()
        dynamic = nnmodule.get_dynamic_shapes() if hasattr(nnmodule, "get_dynamic_shapes") else None
        config = nnmodule.get_compile_config() if hasattr(nnmodule, "get_compile_config") else None
        options = {"config": config} if config is not None else {}
        with torch.no_grad():
            model = tico_package.convert(nnmodule.eval(), args, kwargs, dynamic_shapes=dynamic, **options)
        model.save(str(circle))
        inputs = ModelInputSpec.load(str(circle)).bind(args, kwargs, check=True)
        arrays = {f"i{i}": np.asarray(x.detach().numpy() if hasattr(x, "detach") else x) for i, x in enumerate(inputs)}
        np.savez(cache / "circle" / f"{name}.inputs.npz", **arrays)
    except Exception as e:
        circle.unlink(missing_ok=True)
        last = traceback.format_exc().strip().splitlines()[-1]
        return {"error": f"export fails: {type(e).__name__}: {last[:300]}", "seconds": time.perf_counter() - start}
    return {
        "exported": True,
        "config": repr(config) if config is not None else "",
        "dynamic": dynamic is not None,
        "seconds": time.perf_counter() - start,
        "use_onert": hasattr(klass, "__tag_use_onert"),
    }


# ---------------------------------------------------------------------------------------------------------------
# measure: raw and -O1 in onert and LiteRT.


def run_onert(path: Path, inputs: list) -> list:
    from onert import infer

    os.environ["NUM_THREADS"] = "1"
    with quiet_stderr() as said:
        try:
            session = infer.session(str(path), "cpu")
        except Exception as e:
            raise RuntimeError(f"onert cannot load: {last_line(said(), e)}") from None
        try:
            return [o.copy() for o in session.infer(inputs)]  # sets -1 input dims from the arrays itself
        except Exception as e:
            raise RuntimeError(f"onert cannot run: {last_line(said(), e)}") from None


def run_litert(path: Path, inputs: list) -> list:
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    with quiet_stderr() as said:
        try:
            interp = Interpreter(model_path=str(path), experimental_op_resolver_type=kind, num_threads=1)
            interp.allocate_tensors()
        except Exception as e:
            raise RuntimeError(f"LiteRT cannot load: {last_line(said(), e)}") from None
        try:
            details = interp.get_input_details()
            for d, x in zip(details, inputs):
                if tuple(d["shape"]) != x.shape:
                    interp.resize_tensor_input(d["index"], x.shape)
            interp.allocate_tensors()
            for d, x in zip(details, inputs):
                interp.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
            interp.invoke()
            return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
        except Exception as e:
            raise RuntimeError(f"LiteRT cannot run: {last_line(said(), e)}") from None


def last_line(printed: str, error: Exception) -> str:
    text = str(error).strip()
    lines = [line.strip() for line in printed.splitlines() if line.strip() and "INFO:" not in line]
    first = text.splitlines()[0] if text else type(error).__name__
    return (f"{lines[-1]} ({first})" if lines else first)[:300]


class quiet_stderr:
    """fd 2 to a temporary file (the runtimes' C++ code prints there); `said()` reads it back."""

    def __enter__(self):
        import tempfile

        sys.stderr.flush()
        self.saved = os.dup(2)
        self.file = tempfile.TemporaryFile()
        os.dup2(self.file.fileno(), 2)
        return self.said

    def said(self) -> str:
        self.file.seek(0)
        return self.file.read().decode("utf-8", "replace")

    def __exit__(self, *_):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.close()


def compare(raw: list, opt: list, tolerance: float = REL_TOL) -> tuple[str, float]:
    """("" when equal, else what differs first; the largest |a-b| / max|a| of a float output)."""
    import numpy as np

    if len(raw) != len(opt):
        return f"{len(opt)} outputs, raw has {len(raw)}", 0.0
    worst = 0.0
    for index, (a, b) in enumerate(zip(raw, opt)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {index}: {b.dtype}{list(b.shape)}, raw {a.dtype}{list(a.shape)}", 0.0
        if a.dtype.kind not in "fc":
            if not np.array_equal(a, b):
                return f"output {index}: {int(np.sum(a != b))} of {a.size} integer values differ", 0.0
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not np.array_equal(np.isnan(a64), np.isnan(b64)):
            return f"output {index}: NaN at other places", 0.0
        finite = ~np.isnan(a64)
        if not finite.any():
            continue
        if not np.array_equal(a64[np.isinf(a64)], b64[np.isinf(a64)]):
            return f"output {index}: infinities differ", 0.0
        ok = finite & ~np.isinf(a64)
        scale = float(np.max(np.abs(a64[ok]))) if ok.any() else 0.0
        error = float(np.max(np.abs(a64[ok] - b64[ok]))) if ok.any() else 0.0
        if error > tolerance * (scale or 1.0):  # an all-zero output: an absolute tolerance
            return f"output {index}: max|a-b| {error:.3g} against max|a| {scale:.3g}", error / (scale or 1.0)
        worst = max(worst, error / (scale or 1.0))
    return "", worst


def bnfold(*argv: str) -> tuple[int, str]:
    proc = subprocess.run([str(BIN / "bnfold"), *argv], capture_output=True, text=True)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bnfold: error")] or proc.stderr.splitlines()
    return proc.returncode, (lines[-1] if lines else "")[:300]


def more_samples(inputs: list, count: int) -> list[list]:
    """The module's own inputs, then count - 1 samples with every float input drawn again from normal(0, 2)
    (integer and boolean inputs, often indices or sizes, stay the module's)."""
    import numpy as np

    rng = np.random.default_rng(1)
    made = [inputs]
    for _ in range(count - 1):
        made.append([rng.normal(0, 2, x.shape).astype(x.dtype) if x.dtype.kind == "f" else x for x in inputs])
    return made


def run_all(run, path: Path, samples: list[list]) -> list:
    """The outputs of every sample, one list: compared output by output as one run's."""
    return [output for inputs in samples for output in run(path, inputs)]


def measure_one(name: str, cache: Path, count: int = 1) -> dict:
    import numpy as np

    circle = cache / "circle" / f"{name}.circle"
    with np.load(cache / "circle" / f"{name}.inputs.npz") as data:
        samples = more_samples([data[f"i{i}"] for i in range(len(data.files))], count)
    work = cache / "work" / name
    work.mkdir(parents=True, exist_ok=True)
    result: dict = {}
    raw_tflite = work / "raw.tflite"
    code, said = bnfold("convert", str(circle), str(raw_tflite), "-q")
    steps = {
        "onert": (run_onert, circle, work / "o1.circle", []),
        "litert": (run_litert, raw_tflite if code == 0 else None, work / "o1.tflite", ["--target", "litert"]),
    }
    raw_by_runtime: dict = {}
    for runtime, (run, raw_path, out, target) in steps.items():
        entry: dict = {}
        result[runtime] = entry
        if raw_path is None:
            entry["raw_error"] = f"bnfold convert to TFLite: exit {code}: {said}"
        else:
            try:
                raw_outputs = raw_by_runtime[runtime] = run_all(run, raw_path, samples)
                entry["raw"] = True
            except RuntimeError as e:
                entry["raw_error"] = str(e)
        report = work / f"o1-{runtime}.json"
        report.unlink(missing_ok=True)
        start = time.perf_counter()
        code_o, said_o = bnfold("optimize", "-O1", *target, str(circle), str(out), "--report", str(report), "-q")
        entry["optimize_seconds"] = round(time.perf_counter() - start, 2)
        if code_o != 0:
            entry["optimize_error"] = f"exit {code_o}: {said_o}"
            continue
        entry["folds"] = fold_counts(report)
        try:
            opt_outputs = run_all(run, out, samples)
        except RuntimeError as e:
            entry["opt_error"] = str(e)
            continue
        entry["opt"] = True
        if entry.get("raw"):
            entry["difference"], entry["scaled_error"] = compare(raw_outputs, opt_outputs)
    if len(raw_by_runtime) == 2:  # the raw export in both: where the runtimes themselves disagree
        result["raw_onert_vs_litert"] = compare(raw_by_runtime["litert"], raw_by_runtime["onert"], CROSS_TOL)[0]
    return result


def fold_counts(report: Path) -> dict:
    """Per pass, how many rewrites the report records (its `folds`), and the operator counts if they changed."""
    data = json.loads(report.read_text())
    counts = Counter(entry.get("pass", "?") for entry in data.get("folds", []))
    operators = data.get("operators", {})
    if operators.get("before") != operators.get("after"):
        counts["(operators changed)"] += 1
    return dict(counts)


# ---------------------------------------------------------------------------------------------------------------
# table


def measure_kind(samples: int) -> str:
    return "measure" if samples == 1 else f"measure-{samples}"


def summarize(cache: Path, kind: str = "measure") -> tuple[str, dict]:
    exports = {p.stem: json.loads(p.read_text()) for p in sorted((cache / "export").glob("*.json"))}
    measures = {p.stem: json.loads(p.read_text()) for p in sorted((cache / kind).glob("*.json"))}
    exported = [n for n, e in exports.items() if e.get("exported")]
    not_exported = {n: e.get("skipped") or e.get("error") for n, e in exports.items() if not e.get("exported")}
    listed = (cache / "modules.txt").read_text().split()
    lines = [f"modules listed {len(listed)}, exported {len(exported)}, measured {len(measures)}", ""]
    figures: dict = {"listed": len(listed), "exported": len(exported), "measured": len(measures)}
    lines += ["| runtime | run raw | run after -O1 | of those equal | differing | fail after -O1 (raw ran) |"]
    lines += ["|---|---|---|---|---|---|"]
    failures: dict = {}
    for runtime in ("onert", "litert"):
        rows = {n: m[runtime] for n, m in measures.items() if runtime in m}
        raw = [n for n, r in rows.items() if r.get("raw")]
        opt = [n for n, r in rows.items() if r.get("opt")]
        both = [n for n in raw if rows[n].get("opt")]
        equal = [n for n in both if rows[n].get("difference") == ""]
        differ = {n: rows[n]["difference"] for n in both if rows[n].get("difference")}
        failing = {
            n: rows[n].get("optimize_error") or rows[n].get("opt_error") or "?" for n in raw if not rows[n].get("opt")
        }
        rewrote = [n for n, r in rows.items() if r.get("folds")]
        passes = Counter(k for n in rewrote for k in rows[n]["folds"] if not k.startswith("("))
        errors = [rows[n].get("scaled_error", 0.0) for n in equal]
        failures[runtime] = {"differ": differ, "fail": failing}
        figures[runtime] = {
            "raw": len(raw),
            "opt": len(opt),
            "both": len(both),
            "equal": len(equal),
            "differ": len(differ),
            "fail_after": len(failing),
            "rewrote": len(rewrote),
            "rewrote_by_pass": dict(passes.most_common()),
            "max_scaled_error": max(errors, default=0.0),
            "nonzero_error": sum(1 for e in errors if e),
            "raw_failures": Counter(short(r.get("raw_error", "")) for r in rows.values() if not r.get("raw")),
        }
        lines.append(
            f"| {runtime} | {len(raw)} | {len(both)} (+{len(opt) - len(both)} whose raw did not run) | "
            f"{len(equal)} | {len(differ)} | {len(failing)} |"
        )
    lines += [""]
    for runtime in ("onert", "litert"):
        f = figures[runtime]
        lines.append(
            f"- {runtime}: bnfold rewrote {f['rewrote']} modules (modules per pass: {f['rewrote_by_pass']}); of the "
            f"equal, {f['nonzero_error']} not bit-exact, largest scaled error {f['max_scaled_error']:.2g}"
        )
    for runtime in ("onert", "litert"):
        for what, items in failures[runtime].items():
            for n, why in items.items():
                lines.append(f"- {runtime} {what}: {n}: {why}")
    cross = {n: m["raw_onert_vs_litert"] for n, m in measures.items() if "raw_onert_vs_litert" in m}
    disagree = {n: why for n, why in cross.items() if why}
    figures["raw_in_both"], figures["raw_runtimes_disagree"] = len(cross), disagree
    lines += ["", f"raw export in both runtimes: {len(cross)}; onert and LiteRT disagree (1e-4) on {len(disagree)}:"]
    lines += [f"- {n}: {why}" for n, why in disagree.items()]
    lines += ["", "raw failures by reason:"]
    for runtime in ("onert", "litert"):
        for why, count in figures[runtime]["raw_failures"].most_common():
            lines.append(f"- {runtime}: {count} x {why}")
    lines += ["", "not exported:"]
    for name, why in not_exported.items():
        lines.append(f"- {name}: {why}")
    figures["not_exported"] = not_exported
    return "\n".join(lines), figures


def short(reason: str) -> str:
    import re

    return re.sub(r"\d+", "N", reason)[:160]


# ---------------------------------------------------------------------------------------------------------------

ZOO_PYTHON = "/work/zoo-venv/bin/python"


def main() -> None:
    global ZOO_PYTHON
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["export", "measure", "table", "worker", "list"])
    parser.add_argument("kind", nargs="?")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--tico", type=Path)
    parser.add_argument("--python", default=ZOO_PYTHON)
    parser.add_argument("--groups", default="op,net,model")
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument(
        "--samples", type=int, default=1, help="measure: the module's inputs and N - 1 more (results in DIR/measure-N)"
    )
    a = parser.parse_args()
    ZOO_PYTHON = a.python
    if a.command == "list":
        list_worker(a.tico, a.groups.split(","))
    elif a.command == "worker":
        worker(a.kind, a.cache, a.tico, a.samples)
    elif a.command == "export":
        names = list_modules(a.tico, tuple(a.groups.split(",")))
        names = [n for n in names if not a.only or n.startswith(tuple(a.only.split(",")))]
        known = (a.cache / "modules.txt").read_text().split() if (a.cache / "modules.txt").exists() else []
        (a.cache / "modules.txt").write_text("\n".join(dict.fromkeys(known + names)) + "\n")  # runs add up
        env_extra = ["--tico", str(a.tico)]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a module that downloads weights is listed, not fetched
        drive("export", names, a.cache, a.python, env_extra, EXPORT_SECONDS)
    elif a.command == "measure":
        done = [p.stem for p in sorted((a.cache / "export").glob("*.json"))]
        names = [n for n in done if json.loads((a.cache / "export" / f"{n}.json").read_text()).get("exported")]
        names = [n for n in names if not a.only or n.startswith(tuple(a.only.split(",")))]
        kind = measure_kind(a.samples)
        drive(kind, names, a.cache, sys.executable, ["--samples", str(a.samples)], MEASURE_SECONDS * a.samples)
    else:
        text, figures = summarize(a.cache, measure_kind(a.samples))
        stem = "tico_suite" if a.samples == 1 else f"tico_suite-{a.samples}"
        (a.cache / f"{stem}.md").write_text(text + "\n")
        write_json(a.cache / f"{stem}.json", figures)
        print(text)


if __name__ == "__main__":
    main()
