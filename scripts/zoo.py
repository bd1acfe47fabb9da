"""The model zoo: real networks through real exporters, optimized by bnfold, measured in LiteRT.

    python scripts/zoo.py build --cache DIR [--size N] [--only NAME,...]
    python scripts/zoo.py table --cache DIR [--out DIR] [--only NAME,...] [--rounds N] [--inputs N]

`build` makes every model whose exporter is importable here (`pip install '.[zoo]'`; the keras
models need TensorFlow, the PyTorch ones torch, torchvision, timm, TICO and litert-torch, so the
two halves may come from different environments) and caches it as DIR/NAME.tflite or .circle;
models already in the cache are kept. The onnx2tf models take two runs: `onnx_NAME` (torch)
caches the ONNX file, `onnx2tf_NAME` converts it where onnx2tf is installed (it pins its own
TensorFlow, so not in the `zoo` extra). Weights are random (no network): keras.applications with
weights=None, torchvision/timm without pretrained weights, every batch norm given non-trivial
statistics (random running mean and variance, gamma in [0.5, 1.5], beta), eval mode. `--size`
is the input's height and width (default 96: the whole zoo on 2 cores in minutes, not hours).

`table` needs only bnfold. For each cached model it runs `bnfold optimize` (default passes, the
CLI of this environment) and measures:
- operators before/after by kind;
- batch-norm candidates before/after, as bnfold defines them (engine/candidates.py: a
  MUL/ADD/SUB/DIV with exactly one constant operand of real values, directly or through
  DEQUANTIZE, that is a scalar or varies along one axis of the data); of those left, how many a
  skip entry of the report names (by output tensor) and how many are silent; folds that kept a
  shift as a new op are counted apart ("kept");
- max abs error of the optimized model against the original in LiteRT (builtin kernels) on
  `--inputs` fixed inputs (normal(0, 2), seed 0), and that error relative to max |output|;
- speed: paired alternating LiteRT runs (default kernels, XNNPACK, one thread), `--rounds`
  rounds after a warm-up; each round times both models (a sample is as many back-to-back runs as
  take ~20 ms), in alternating order, in 5 blocks each with new interpreters; the figure is the
  median over rounds of t_original / t_optimized (above 1: the optimized model is faster). The "A/A" column is the same
  measurement of the original against itself: the noise floor of that row (`--no-control` skips it).
It prints a markdown table and writes DIR_OUT/zoo.md and DIR_OUT/zoo.json (default: the cache).
Networks exported by both TICO and litert-torch also get scripts/parity.py's table (issue 24's
exporter parity: ops, TRANSPOSEs and paired latency of TICO+bnfold next to litert-torch+bnfold,
with the A/A noise and the targets), appended to zoo.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runners import max_error, paired_speed  # noqa: E402
from zoo_fixtures import input_norm_net, keras_convert, keras_randomize_bn, torch_export, torch_randomize_bn  # noqa: E402

MODELS: dict[str, tuple[tuple[str, ...], object]] = {}  # name -> (modules it needs, builder(size) -> (bytes, suffix))

KERAS_APPS = ["MobileNetV2", "MobileNetV3Small", "ResNet50V2", "DenseNet121", "NASNetMobile", "EfficientNetB0"]
TORCHVISION_NETS = [
    "resnet18",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "densenet121",
    # issue 24's networks beyond the first five (parity2): concats, channel shuffles, SE gates,
    # LayerNorm over channels behind permutes
    "shufflenet_v2_x0_5",
    "squeezenet1_0",
    "efficientnet_b0",
    "regnet_x_400mf",
    "mnasnet0_5",
    "googlenet",
    "convnext_tiny",
]
TIMM_NETS = ["resnetv2_50", "lcnet_050", "ghostnet_050", "mobilenetv4_conv_small"]
TORCH_NETS = TORCHVISION_NETS + TIMM_NETS + ["input_norm_net"]
ONNX_NETS = ["efficientnet_b0", "resnet18"]  # torch.onnx.export, then onnx2tf (its own environment)
EXPORTERS = {"tico": ("tico", ".circle"), "litert": ("litert_torch", ".tflite")}


def keras_app(app: str, float16: bool):
    def build(size: int, cache: Path):
        import keras

        model = getattr(keras.applications, app)(weights=None, input_shape=(size, size, 3))
        keras_randomize_bn(model, np.random.default_rng(0), negative=False)
        return keras_convert(model, float16=float16), ".tflite"

    return build


def torch_net(name: str):
    """A PyTorch network in eval mode with non-trivial batch-norm statistics."""
    import torch

    torch.manual_seed(0)
    if name in TIMM_NETS:
        import timm

        module = timm.create_model(name, pretrained=False)
    elif name == "input_norm_net":
        module = input_norm_net(0, channels=(16, 32))
    else:
        import torchvision

        module = getattr(torchvision.models, name)(weights=None)
    torch_randomize_bn(module, np.random.default_rng(0))
    return module


def torch_model(name: str, exporter: str):
    def build(size: int, cache: Path):
        x = np.random.default_rng(0).normal(0, 1, (1, 3, size, size)).astype(np.float32)
        return torch_export(exporter, torch_net(name), x)

    return build


def onnx_model(name: str):
    """Stage one of onnx2tf_NAME: the network as ONNX (TorchScript exporter, opset 17), cached."""

    def build(size: int, cache: Path):
        import torch

        x = torch.tensor(np.random.default_rng(0).normal(0, 1, (1, 3, size, size)), dtype=torch.float32)
        path = cache / f"onnx_{name}.onnx"
        torch.onnx.export(torch_net(name), (x,), str(path), dynamo=False, opset_version=17)
        return path.read_bytes(), ".onnx"

    return build


def onnx2tf_model(name: str):
    """Stage two: onnx2tf's float32 TFLite of the cached ONNX file (made by onnx_NAME)."""

    def build(size: int, cache: Path):
        onnx = cache / f"onnx_{name}.onnx"
        if not onnx.exists():
            raise FileNotFoundError(f"{onnx.name} is not in the cache: build onnx_{name} first (where torch is)")
        work = cache / "onnx2tf"
        work.mkdir(exist_ok=True)
        # onnx2tf checks 3-channel image models on sample images it would download: give it local ones
        sample = work / "calibration_image_sample_data_20x128x128x3_float32.npy"
        if not sample.exists():
            np.save(sample, np.random.default_rng(0).random((20, 128, 128, 3), dtype=np.float32))
        subprocess.run(
            [sys.executable, "-m", "onnx2tf", "-i", str(onnx), "-o", str(work / name), "-n"],
            cwd=work,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return (work / name / f"onnx_{name}_float32.tflite").read_bytes(), ".tflite"

    return build


for _app in KERAS_APPS:
    MODELS[f"keras_{_app}"] = (("tensorflow",), keras_app(_app, False))
    MODELS[f"keras_{_app}_fp16"] = (("tensorflow",), keras_app(_app, True))
for _net in TORCH_NETS:
    _zoo = ("timm",) if _net in TIMM_NETS else () if _net == "input_norm_net" else ("torchvision",)
    for _exporter, (_module, _) in EXPORTERS.items():
        MODELS[f"{_exporter}_{_net}"] = (("torch", _module) + _zoo, torch_model(_net, _exporter))
for _net in ONNX_NETS:
    MODELS[f"onnx_{_net}"] = (("torch", "torchvision", "onnx"), onnx_model(_net))
    MODELS[f"onnx2tf_{_net}"] = (("onnx2tf",), onnx2tf_model(_net))


def cached(cache: Path, name: str, suffixes=(".tflite", ".circle", ".onnx")) -> Path | None:
    for suffix in suffixes:
        if (cache / (name + suffix)).exists():
            return cache / (name + suffix)
    return None


def build_all(cache: Path, names: list[str], size: int) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    for name in names:
        needs, build = MODELS[name]
        if cached(cache, name):
            print(f"{name}: cached")
            continue
        missing = [m for m in needs if importlib.util.find_spec(m) is None]
        if missing:
            print(f"{name}: skipped ({', '.join(missing)} not installed)")
            continue
        start = time.perf_counter()
        try:
            content, suffix = build(size, cache)
        except Exception as e:  # an exporter's failure is a row of the report, not the end of the run
            print(f"{name}: FAILED to export: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            continue
        (cache / (name + suffix)).write_bytes(content)
        print(f"{name}{suffix}: {len(content) / 2**20:.1f} MB in {time.perf_counter() - start:.0f} s")


# ---------------------------------------------------------------- measuring


def candidates(model) -> list:
    """The batch-norm candidates of every subgraph, as bnfold defines them (engine/candidates.py)."""
    from bnfold.engine.candidates import candidates as of_graph

    return [c.op for graph in model.graphs for c in of_graph(graph)]


def op_counts(model) -> Counter:
    return Counter(op.kind for graph in model.graphs for op in graph.ops)


def random_inputs(model, count: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    graph = model.graphs[0]
    return [
        [rng.normal(0, 2, t.shape).astype(np.float16 if t.dtype == "FLOAT16" else np.float32) for t in graph.inputs]
        for _ in range(count)
    ]


def short_reason(text: str) -> str:
    """A skip reason without the tensor names in it (quoted, or words with / ; ::), so equal reasons group."""
    import re

    return re.sub(r"\S*(/|;|::)\S*", "…", re.sub(r"'[^']*'", "'…'", text))[:110]


def measure(
    path: Path,
    work: Path,
    rounds: int,
    samples: int,
    bnfold: str,
    control: bool,
    runtimes: tuple[str, ...] = ("litert",),
) -> dict:
    from bnfold.io.reader import read_model

    out = work / f"{path.stem}.opt{path.suffix}"
    report_path = work / f"{path.stem}.report.json"
    start = time.perf_counter()
    proc = subprocess.run(
        [bnfold, "optimize", str(path), str(out), "--report", str(report_path), "--quiet"],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    row: dict = {
        "model": path.stem,
        "file": path.name,
        "MB": round(path.stat().st_size / 2**20, 1),
        "optimize_s": round(seconds, 2),
    }
    if proc.returncode != 0:
        row["error"] = f"bnfold optimize exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:300]}"
        return row
    report = json.loads(report_path.read_text())
    original, optimized = read_model(str(path)), read_model(str(out))
    before, after = op_counts(original), op_counts(optimized)
    left = candidates(optimized)
    named = {s["at"]["output"] for s in report["skips"]}
    explained = [op for op in left if op.outputs[0].name in named]
    row.update(
        {
            "ops_before": dict(sorted(before.items())),
            "ops_after": dict(sorted(after.items())),
            "ops_total": [sum(before.values()), sum(after.values())],
            "candidates_before": len(candidates(original)),
            "candidates_after": len(left),
            "left_with_entry": len(explained),
            "left_silent": len(left) - len(explained),
            "silent": [f"{op.kind} {op.outputs[0].name}" for op in left if op not in explained][:20],
            "folds": len(report["folds"]),
            "kept": sum(1 for f in report["folds"] if f.get("shift_kept")),
            "skips": len(report["skips"]),
            "skip_reasons": dict(Counter(short_reason(s["reason"]) for s in report["skips"]).most_common()),
        }
    )
    try:
        inputs = random_inputs(original, samples)
        row["max_abs_error"], row["max_rel_error"] = max_error(original, optimized, inputs)
        row["speed"], row["ms_original"], row["ms_optimized"] = paired_speed(original, optimized, inputs[0], rounds)
        if control:  # the same measurement of the original against itself: the noise floor
            row["speed_control"] = paired_speed(original, original, inputs[0], rounds)[0]
    except Exception as e:  # LiteRT refusing a model is a finding, not a crash of the table
        row["error"] = f"LiteRT: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    if "onert" in runtimes:
        row.update(onert_figures(original, optimized, random_inputs(original, samples), rounds, control))
    return row


def onert_figures(original, optimized, inputs, rounds: int, control: bool) -> dict:
    """The same error and paired speed in onert (cpu backend); which model it cannot load, if any."""
    from bnfold.values import onert

    for which, model in (("original", original), ("optimized", optimized)):
        try:
            onert.Session(model)(inputs[0])
        except Exception as e:  # a finding: onert does not load or run it
            return {"onert_error": f"{which}: {str(e).splitlines()[0][:160]}"}
    row = {}
    row["onert_max_abs_error"], row["onert_max_rel_error"] = max_error(original, optimized, inputs, "onert")
    row["onert_speed"], row["onert_ms_original"], row["onert_ms_optimized"] = paired_speed(
        original, optimized, inputs[0], rounds, runtime="onert"
    )
    if control:
        row["onert_speed_control"] = paired_speed(original, original, inputs[0], rounds, runtime="onert")[0]
    return row


def kinds(counts: dict) -> str:
    return " ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def changed_kinds(row: dict) -> str:
    """Only the kinds whose count changed: 'MUL 19→1'."""
    a, b = row["ops_before"], row["ops_after"]
    return ", ".join(f"{k} {a.get(k, 0)}→{b.get(k, 0)}" for k in sorted(set(a) | set(b)) if a.get(k, 0) != b.get(k, 0))


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        f"bnfold zoo: {meta['when']}, input {meta['size']}, LiteRT {meta['litert']}, "
        f"{meta['rounds']} paired rounds, {meta['inputs']} inputs",
        "",
        "| model | MB | ops before → after | changed | BN candidates before → after | left: entry / silent "
        "| folds (kept shift) | skips | max abs err | max rel err | speed orig/opt | A/A | ms orig / opt |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "ops_before" not in r:
            lines.append(f"| {r['model']} | {r['MB']} | {r.get('error', '')} |" + " |" * 10)
            continue
        err = (
            f"{r['max_abs_error']:.2g} | {r['max_rel_error']:.2g}"
            if "max_abs_error" in r
            else f"{r.get('error', '')} | "
        )
        control = f"{r['speed_control']:.3f}" if "speed_control" in r else ""
        speed = (
            f"{r['speed']:.3f} | {control} | {r['ms_original']:.2f} / {r['ms_optimized']:.2f}"
            if "speed" in r
            else " | | "
        )
        lines.append(
            f"| {r['model']} | {r['MB']} | {r['ops_total'][0]} → {r['ops_total'][1]} | {changed_kinds(r)} | "
            f"{r['candidates_before']} → {r['candidates_after']} | {r['left_with_entry']} / {r['left_silent']} | "
            f"{r['folds']} ({r['kept']}) | {r['skips']} | {err} | {speed} |"
        )
    lines += ["", "The most frequent skip reasons (tensor names elided), per model:", ""]
    for r in rows:
        if r.get("skip_reasons"):
            top = list(r["skip_reasons"].items())[:5]
            lines.append(f"- {r['model']}: " + "; ".join(f"{n}× {k}" for k, n in top))
    silent = [r for r in rows if r.get("silent")]
    if silent:
        lines += ["", "Candidates left with no report entry (first 20 per model):", ""]
        lines += [f"- {r['model']}: " + "; ".join(r["silent"]) for r in silent]
    return "\n".join(lines) + "\n"


def runtimes_table(rows: list[dict], meta: dict) -> str:
    """Both runtimes side by side: the paired median t_original / t_optimized (A/A: the original
    against itself, the noise floor), the optimized model's milliseconds, and its error."""
    lines = [
        f"LiteRT {meta['litert']} (default kernels, XNNPACK, 1 thread) and onert {meta['onert']} (cpu backend), "
        f"{meta['rounds']} paired alternating rounds each:",
        "",
        "| model | LiteRT orig/opt | A/A | ms orig / opt | onert orig/opt | A/A | ms orig / opt | onert max rel err |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        litert_cells = (
            f"{r['speed']:.3f} | {r.get('speed_control', float('nan')):.3f} | "
            f"{r['ms_original']:.2f} / {r['ms_optimized']:.2f}"
            if "speed" in r
            else f"{r.get('error', '')} | | "
        )
        onert_cells = (
            f"{r['onert_speed']:.3f} | {r.get('onert_speed_control', float('nan')):.3f} | "
            f"{r['onert_ms_original']:.2f} / {r['onert_ms_optimized']:.2f} | {r['onert_max_rel_error']:.2g}"
            if "onert_speed" in r
            else f"{r.get('onert_error', r.get('error', ''))} | | | "
        )
        lines.append(f"| {r['model']} | {litert_cells} | {onert_cells} |")
    return "\n".join(lines) + "\n"


def table(
    cache: Path,
    out: Path,
    names: list[str],
    rounds: int,
    samples: int,
    bnfold: str,
    control: bool,
    runtimes: tuple[str, ...] = ("litert",),
) -> None:
    from importlib.metadata import version

    work = out / "optimized"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        path = cached(cache, name, (".tflite", ".circle"))  # ONNX files are only a stage on the way
        if path is None:
            continue
        row = measure(path, work, rounds, samples, bnfold, control, runtimes)
        print(
            json.dumps({k: row[k] for k in row if k not in ("ops_before", "ops_after", "skip_reasons", "silent")}),
            flush=True,
        )
        rows.append(row)
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "size": "as cached",
        "litert": version("ai-edge-litert"),
        "rounds": rounds,
        "inputs": samples,
    }
    (out / "zoo.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    text = markdown(rows, meta)
    if "onert" in runtimes:
        meta["onert"] = version("onert")
        text += "\n" + runtimes_table(rows, meta)
    nets = [n for n in TORCH_NETS if f"tico_{n}" in names and f"litert_{n}" in names]
    if nets:  # the same network from both exporters: TICO+bnfold next to litert-torch+bnfold
        import parity

        text += "\n" + parity.run(cache, out, nets, rounds, [bnfold], checks=True)[1]
    (out / "zoo.md").write_text(text)
    print(text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=["build", "table"])
    parser.add_argument("--cache", type=Path, required=True, help="where the exported models live")
    parser.add_argument(
        "--out", type=Path, help="where zoo.md, zoo.json and the optimized models go (default: --cache)"
    )
    parser.add_argument("--only", help="comma-separated model names (default: all)")
    parser.add_argument("--size", type=int, default=96, help="input height and width for build (default 96)")
    parser.add_argument("--rounds", type=int, default=30, help="paired LiteRT rounds per model (default 30)")
    parser.add_argument("--inputs", type=int, default=2, help="fixed inputs for the error (default 2)")
    parser.add_argument(
        "--runtimes",
        default="litert",
        help="comma-separated: litert, onert (onert: the same error and paired speed in ONE's runtime, side by side)",
    )
    parser.add_argument(
        "--no-control", action="store_true", help="skip the original-against-itself speed run (the noise floor column)"
    )
    parser.add_argument(
        "--bnfold",
        default=str(Path(sys.executable).with_name("bnfold")),
        help="the bnfold command (default: the one beside this Python)",
    )
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if args.stage == "build":
        build_all(args.cache, names, args.size)
    else:
        runtimes = tuple(args.runtimes.split(","))
        table(
            args.cache,
            args.out or args.cache,
            names,
            args.rounds,
            args.inputs,
            args.bnfold,
            not args.no_control,
            runtimes,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
