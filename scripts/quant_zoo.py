"""The quantized zoo: keras networks quantized by the TFLite converter and by ai-edge-quantizer,
optimized by bnfold, checked bit for bit and timed in LiteRT.

    python scripts/quant_zoo.py build --cache DIR [--size N] [--only NAME,...]   # TensorFlow's venv
    python scripts/quant_zoo.py table --cache DIR [--out FILE] [--only NAME,...] [--rounds N] [--clock cpu]  # bnfold's

`build` needs tensorflow-cpu, tf-keras and ai-edge-quantizer (an environment of their own; no
torch), and for the PT2E models (`--only PT2E_ConvNet_int8,PT2E_ConvNet_qdq`) torch, torchao and
litert-torch (another environment): each keras.applications network (tf_keras, weights=None: random weights, batch norms
given random statistics as scripts/zoo.py does, no download) is converted by TFLiteConverter
- `int8`: full integer (int8 activations and weights, int8 input and output), calibrated on 8
  random normal(0, 1) inputs;
- `int16x8`: int16 activations, int8 weights (EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_
  WEIGHTS_INT8, float kernels allowed where 16x8 has none: MobileNetV3's HARD_SWISH), float
  interface, the same calibration;
- `dynamic`: dynamic-range (int8 weights, float activations: Optimize.DEFAULT without data);
and the float model of one network through ai-edge-quantizer's static int8 recipe
(`aeq_int8`: weights and activations int8, calibrated on the same inputs). Models go to
DIR/NAME.tflite; cached ones are kept.

torchvision networks (TV_<net>_<mode>, torch's environment with torchvision importable: PyPI's
torchvision 0.28.0 pins torch 2.13.0; its CUDA kernel library does not load beside torch's CPU
build, see import_torchvision; weights=None, batch norms given random statistics, NCHW input of
TORCHVISION[net] pixels), each
- `pt2e_int8`: litert-torch's PT2E quantizer (int8, per-channel weights, 8 random calibration
  inputs), converted with the quantizer as quant_config;
- `pt2e_qdq`: the same PT2E graph converted without it (its QUANTIZE/DEQUANTIZE kept as operators);
- `aeq_int8`: litert-torch's float export through ai-edge-quantizer's static int8 recipe.

`table` needs bnfold (its CLI beside this Python). Per model it runs `bnfold optimize` with the
default passes, with them plus the exact passes for quantized graphs (engine/registry.py:
QUANTIZED_GRAPH_PASSES), and on int8 models holding a MUL also with the lossy LOSSY_PASS, and
reports operators before/after, whether every output is bit-identical in LiteRT's builtin
kernels on 3 inputs (integer inputs over their whole range, float inputs normal(0, 2); else the
largest difference in the output's quantization steps) and under XNNPACK (else the scaled error:
a float layer XNNPACK takes once its weights are constant), the passes' folds and refusals, and the
paired LiteRT speed (scripts/runners.py's paired_speed: default kernels, one thread, alternating
runs, by the wall clock or with --clock cpu this thread's CPU time; A/A is the original against
itself). It writes a markdown table to --out (default
DIR/quant_zoo.md) and prints it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

APPS = ["MobileNetV2", "ResNet50V2", "MobileNetV3Small", "EfficientNetB0"]
MODES = ["int8", "int16x8", "dynamic"]
AEQ_APPS = ["MobileNetV2"]
LOSSY_PASS = "replace_quantized_mul_add_with_depthwise_conv"  # measured apart: its error in steps
CALIBRATION = 8


PT2E = ["PT2E_ConvNet_int8", "PT2E_ConvNet_qdq"]  # torch's environment: litert-torch's PT2E quantization
# torchvision networks (torch's environment, torchvision importable): PT2E with and without
# quant_config, and the float export through ai-edge-quantizer
TORCHVISION = {"resnet18": 96, "mobilenet_v2": 96}
TV_MODES = ["pt2e_int8", "pt2e_qdq", "aeq_int8"]
TV = [f"TV_{net}_{mode}" for net in TORCHVISION for mode in TV_MODES]


def names() -> list[str]:
    return [f"{app}_{mode}" for app in APPS for mode in MODES] + [f"{app}_aeq_int8" for app in AEQ_APPS] + PT2E + TV


# ---- build (TensorFlow's environment) ---------------------------------------------------------


def keras_model(app: str, size: int):
    import tf_keras

    model = getattr(tf_keras.applications, app)(weights=None, input_shape=(size, size, 3))
    rng = np.random.default_rng(0)
    for layer in model.layers:  # non-trivial inference statistics, as scripts/zoo.py gives them
        if isinstance(layer, tf_keras.layers.BatchNormalization):
            c = layer.moving_mean.shape[0]
            weights = []
            if layer.gamma is not None:
                weights.append(rng.uniform(0.5, 1.5, c))
            if layer.beta is not None:
                weights.append(rng.normal(0, 0.3, c))
            weights += [rng.normal(0, 0.3, c), rng.uniform(0.5, 2.0, c)]
            layer.set_weights([w.astype(np.float32) for w in weights])
    return model


def calibration(size: int) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.normal(0, 1, (1, size, size, 3)).astype(np.float32) for _ in range(CALIBRATION)]


def convert(model, mode: str, size: int) -> bytes:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode != "dynamic":
        converter.representative_dataset = lambda: ([x] for x in calibration(size))
    if mode == "int8":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    elif mode == "int16x8":
        converter.target_spec.supported_ops = [  # float kernels where 16x8 has none (HARD_SWISH)
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS,
        ]
    return converter.convert()


def aeq_int8(model, size: int) -> bytes:
    """The float model through ai-edge-quantizer's static int8 recipe (weights and activations)."""
    import tensorflow as tf

    return aeq_quantize(tf.lite.TFLiteConverter.from_keras_model(model).convert(), calibration(size))


def aeq_quantize(float_model: bytes, samples: list[np.ndarray]) -> bytes:
    """A float .tflite through ai-edge-quantizer's static int8 recipe, calibrated on samples."""
    import tempfile

    from ai_edge_quantizer import quantizer, recipe

    float_path = Path(tempfile.mkdtemp()) / "float.tflite"
    float_path.write_bytes(float_model)
    q = quantizer.Quantizer(str(float_path), recipe.static_wi8_ai8())
    signature = q.get_signature_keys()[0] if hasattr(q, "get_signature_keys") else "serving_default"
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(float_path))
    runner = interp.get_signature_runner(signature)
    (name,) = runner.get_input_details()
    data = {signature: [{name: x} for x in samples]}
    result = q.quantize(q.calibrate(data))
    return bytes(result.quantized_model)


def pt2e_convnet(with_quant_config: bool) -> bytes:
    """A small ResNet-style torch network (conv-BN-ReLU stem, two residual blocks, mean, linear;
    random weights, batch norms with random statistics) quantized by litert-torch's PT2E
    quantizer (int8, per-channel weights, calibrated on 8 random inputs) and converted by
    litert_torch.convert: with the quantizer as its quant_config (the documented way), or
    without (the PT2E graph's QUANTIZE/DEQUANTIZE nodes kept as operators: what users of the
    exporters report, litert-torch #179)."""

    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c: int):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.bn = nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16)
            self.blocks, self.fc = nn.Sequential(Block(16), Block(16)), nn.Linear(16, 10)

        def forward(self, x):
            return self.fc(self.blocks(torch.relu(self.bn(self.stem(x)))).mean((2, 3)))

    torch.manual_seed(0)
    return pt2e_quantize(with_random_batch_norms(ConvNet().eval()), 32, with_quant_config)


def pt2e_quantize(model, size: int, with_quant_config: bool) -> bytes:
    """A torch module through litert-torch's PT2E quantizer (int8, per-channel weights, calibrated
    on CALIBRATION random NCHW inputs), converted with the quantizer as quant_config or without."""
    import tempfile

    import litert_torch
    import torch
    from litert_torch.quantize import pt2e_quantizer
    from litert_torch.quantize.quant_config import QuantConfig
    from torchao.quantization.pt2e import quantize_pt2e

    args = (torch.randn(1, 3, size, size),)
    quantizer = pt2e_quantizer.PT2EQuantizer().set_global(
        pt2e_quantizer.get_symmetric_quantization_config(is_per_channel=True)
    )
    graph = quantize_pt2e.prepare_pt2e(torch.export.export(model, args).module(), quantizer)
    for _ in range(CALIBRATION):
        graph(torch.randn(1, 3, size, size))
    graph = quantize_pt2e.convert_pt2e(graph, fold_quantize=False)
    config = QuantConfig(pt2e_quantizer=quantizer) if with_quant_config else None
    path = Path(tempfile.mkdtemp()) / "pt2e.tflite"
    litert_torch.convert(graph, args, quant_config=config).export(str(path))
    return path.read_bytes()


def import_torchvision():
    """torchvision, importable beside torch's CPU build: PyPI's torchvision wheel (0.28.0 pins
    torch 2.13.0) is the CUDA build, whose kernel library (nms, roi_align) does not load beside
    torch 2.13.0+cpu, and its import then registers fake kernels for two operators never declared.
    The classification networks use neither: declare the two schemas and import again."""
    import torch

    try:
        import torchvision

        return torchvision
    except RuntimeError as e:
        if "torchvision::nms" not in str(e):
            raise
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]  # the failed import's half-made modules
    DECLARED.append(library := torch.library.Library("torchvision", "DEF"))  # alive while the process is
    library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    library.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import torchvision

    return torchvision


DECLARED: list = []


def with_random_batch_norms(model):
    """`model` with random inference statistics in its batch norms (as the keras networks get), so
    that folding them moves real values."""
    from torch import nn

    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.normal_(0, 0.3)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.normal_(0, 0.3)
    return model


def torchvision_model(net: str):
    """A torchvision classification network, weights=None (random, no download), its batch norms
    given random inference statistics."""
    import torch

    torch.manual_seed(0)
    return with_random_batch_norms(getattr(import_torchvision().models, net)(weights=None).eval())


def torchvision_build(name: str) -> bytes:
    """TV_<net>_<mode>: PT2E with the quantizer as quant_config (pt2e_int8), PT2E's QDQ export
    without it (pt2e_qdq), or litert-torch's float export through ai-edge-quantizer (aeq_int8)."""
    import tempfile

    import litert_torch
    import torch

    net, mode = next((n, name[len(f"TV_{n}_") :]) for n in TORCHVISION if name.startswith(f"TV_{n}_"))
    size, model = TORCHVISION[net], torchvision_model(net)
    if mode.startswith("pt2e"):
        return pt2e_quantize(model, size, with_quant_config=mode == "pt2e_int8")
    path = Path(tempfile.mkdtemp()) / "float.tflite"
    litert_torch.convert(model, (torch.randn(1, 3, size, size),)).export(str(path))
    rng = np.random.default_rng(1)
    samples = [rng.normal(0, 1, (1, 3, size, size)).astype(np.float32) for _ in range(CALIBRATION)]
    return aeq_quantize(path.read_bytes(), samples)


def build(cache: Path, wanted: list[str], size: int) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    for name in [n for n in PT2E if n in wanted and not (cache / f"{n}.tflite").exists()]:
        data = pt2e_convnet(with_quant_config=name.endswith("int8"))
        (cache / f"{name}.tflite").write_bytes(data)
        print(f"built {name}: {len(data) / 2**20:.2f} MB", flush=True)
    for name in [n for n in TV if n in wanted and not (cache / f"{n}.tflite").exists()]:
        start = time.perf_counter()
        data = torchvision_build(name)
        (cache / f"{name}.tflite").write_bytes(data)
        print(f"built {name}: {len(data) / 2**20:.2f} MB in {time.perf_counter() - start:.0f} s", flush=True)
    wanted = [n for n in wanted if n not in PT2E + TV]
    for app in APPS + AEQ_APPS:
        todo = [n for n in wanted if n.startswith(f"{app}_") and not (cache / f"{n}.tflite").exists()]
        if not todo:
            continue
        model = keras_model(app, size)
        for name in todo:
            start = time.perf_counter()
            mode = name[len(app) + 1 :]
            try:
                data = aeq_int8(model, size) if mode == "aeq_int8" else convert(model, mode, size)
            except Exception as e:  # a converter refusing a network is a finding, not the end of the zoo
                print(f"not built {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
                continue
            (cache / f"{name}.tflite").write_bytes(data)
            print(f"built {name}: {len(data) / 2**20:.1f} MB in {time.perf_counter() - start:.0f} s", flush=True)


# ---- table (bnfold's environment) ------------------------------------------------------------


def inputs_for(model, seed: int) -> list[np.ndarray]:
    from bnfold.ir.const import NUMPY_DTYPES

    rng = np.random.default_rng(seed)
    xs = []
    for t in model.graphs[0].inputs:
        dtype = NUMPY_DTYPES[t.dtype]
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            xs.append(rng.integers(info.min, info.max, t.shape, endpoint=True).astype(dtype))
        else:
            xs.append(rng.normal(0, 2, t.shape).astype(dtype))
    return xs


def steps(model, a: np.ndarray, b: np.ndarray, index: int) -> float:
    """The largest difference between two outputs, in the output's quantization steps (integer
    outputs: the integers' difference; float outputs: / the scale of the DEQUANTIZE's input, else
    the plain difference)."""
    diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
    t = model.graphs[0].outputs[index]
    source = t.producer.inputs[0] if t.producer is not None and t.producer.kind == "DEQUANTIZE" else None
    if not t.is_quantized and source is not None and source.is_quantized:
        return diff / float(source.quantization.scale[0])
    return diff


def compare(original, optimized, samples: int = 3) -> dict:
    """Bit-identical outputs under the builtin kernels (else the largest difference in steps), and
    under XNNPACK (each model against the other under the same kernels; else the largest
    difference relative to the output's largest magnitude: a float layer XNNPACK now takes)."""
    from bnfold.values import litert

    identical, worst, xnnpack = True, 0.0, 0.0
    for seed in range(samples):
        xs = inputs_for(original, seed)
        for i, (a, b) in enumerate(zip(litert.run(original, xs), litert.run(optimized, xs))):
            if a.dtype != b.dtype or a.tobytes() != b.tobytes():
                identical = False
                worst = max(worst, steps(original, a, b, i))
        default = [litert.run(m, xs, resolver="default") for m in (original, optimized)]
        for a, b in zip(*default):
            if a.tobytes() != b.tobytes():
                peak = float(np.abs(a).max()) or 1.0
                xnnpack = max(xnnpack, float(np.abs(a.astype(np.float64) - b).max()) / peak, 1e-300)
    return {"bit_identical": identical, "max_steps": worst, "xnnpack_scaled": xnnpack}


def optimize(bnfold: str, path: Path, out: Path, passes: list[str] | None) -> tuple[dict | None, str]:
    report_path = out.with_suffix(".json")
    command = [bnfold, "optimize", str(path), str(out), "--report", str(report_path), "--quiet"]
    if passes is not None:
        command += ["--passes", ",".join(passes)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}"
    return json.loads(report_path.read_text()), ""


def measure(path: Path, work: Path, bnfold: str, rounds: int, clock=time.perf_counter) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bnfold.engine.registry import QUANTIZED_GRAPH_PASSES, default_passes
    from bnfold.io.reader import read_model
    from runners import paired_speed

    original = read_model(str(path))
    row: dict = {"model": path.stem, "ops_before": sum(len(g.ops) for g in original.graphs)}
    counts_before = Counter(op.kind for g in original.graphs for op in g.ops)
    configs = [("default", None), ("quant", default_passes() + list(QUANTIZED_GRAPH_PASSES))]
    if counts_before.get("MUL") and path.stem.endswith("int8"):
        configs.append(("lossy", default_passes() + list(QUANTIZED_GRAPH_PASSES) + [LOSSY_PASS]))
    for label, passes in configs:
        out = work / f"{path.stem}.{label}.tflite"
        report, error = optimize(bnfold, path, out, passes)
        if report is None:
            row[label] = {"error": error}
            continue
        optimized = read_model(str(out))
        counts_after = Counter(op.kind for g in optimized.graphs for op in g.ops)
        entry: dict = {
            "ops_after": sum(counts_after.values()),
            "changed": {
                k: [counts_before.get(k, 0), counts_after.get(k, 0)]
                for k in sorted(set(counts_before) | set(counts_after))
                if counts_before.get(k, 0) != counts_after.get(k, 0)
            },
            "folds": dict(Counter(f["pass"] for f in report["folds"])),
            "refused": dict(
                Counter(n["reason"].split(":")[0] for n in report.get("not_folded", []) if "QUANTIZE" in n["reason"])
            ),
        }
        try:
            entry.update(compare(original, optimized))
            entry["speed"], entry["ms_original"], entry["ms_optimized"] = paired_speed(
                original, optimized, inputs_for(original, 0), rounds, clock=clock
            )
        except Exception as e:  # a model LiteRT refuses is a finding, not a crash of the table
            entry["error"] = f"LiteRT: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        row[label] = entry
    try:
        row["speed_control"] = paired_speed(original, original, inputs_for(original, 0), rounds, clock=clock)[0]
    except Exception:
        row["speed_control"] = None
    return row


def cell(entry: dict) -> list[str]:
    if "error" in entry and "ops_after" not in entry:
        return [entry["error"], "", "", ""]
    changed = ", ".join(f"{k} {a}->{b}" for k, (a, b) in entry["changed"].items()) or "none"
    exact = "yes" if entry.get("bit_identical") else f"no ({entry.get('max_steps', 0):.3g} steps)"
    if entry.get("xnnpack_scaled"):
        exact += f"; XNNPACK: scaled err {entry['xnnpack_scaled']:.1e}"
    speed = f"{entry['speed']:.3f}" if "speed" in entry else entry.get("error", "")
    return [f"{entry['ops_after']} ({changed})", exact, speed]


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        f"Measured {meta['when']}, LiteRT {meta['litert']}, {meta['rounds']} paired rounds "
        f"({meta.get('clock', 'wall')} clock); speed = t_original / t_optimized (above 1: faster), "
        "A/A = the original against itself.",
        "",
        "| model | ops | default passes: ops after (changed kinds) | bit-identical | speed | + quantized-graph passes: "
        "ops after (changed kinds) | bit-identical | speed | A/A |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        control = f"{row['speed_control']:.3f}" if row.get("speed_control") else ""
        lines.append(
            "| "
            + " | ".join([row["model"], str(row["ops_before"]), *cell(row["default"]), *cell(row["quant"]), control])
            + " |"
        )
    lossy = [row for row in rows if "lossy" in row]
    if lossy:
        lines += [
            "",
            f"With the lossy {LOSSY_PASS} as well (error against the original in the output's quantization steps):",
            "",
            "| model | ops after (changed kinds) | bit-identical | speed | A/A |",
            "|---|---|---|---|---|",
        ]
        for row in lossy:
            control = f"{row['speed_control']:.3f}" if row.get("speed_control") else ""
            lines.append("| " + " | ".join([row["model"], *cell(row["lossy"]), control]) + " |")
    lines += ["", "Folds and refusals of the quantized-graph passes, per model:", ""]
    for row in rows:
        quant = row["quant"]
        lines.append(f"- {row['model']}: folds {quant.get('folds', {})}; refused {quant.get('refused', {})}")
    return "\n".join(lines) + "\n"


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}  # cpu: this thread's CPU time (runners.py)


def table(cache: Path, out: Path, wanted: list[str], bnfold: str, rounds: int, clock: str = "wall") -> None:
    from importlib.metadata import version

    work = cache / "optimized"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in wanted:
        path = cache / f"{name}.tflite"
        if not path.exists():
            continue
        row = measure(path, work, bnfold, rounds, CLOCKS[clock])
        print(json.dumps(row), flush=True)
        rows.append(row)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "litert": version("ai-edge-litert")}
    meta["rounds"], meta["clock"] = rounds, clock
    (out.with_suffix(".json")).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    text = markdown(rows, meta)
    out.write_text(text)
    print(text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=["build", "table"])
    parser.add_argument("--cache", type=Path, required=True, help="where the quantized models live")
    parser.add_argument("--out", type=Path, help="the markdown table (default: CACHE/quant_zoo.md)")
    parser.add_argument("--only", help="comma-separated model names (default: all)")
    parser.add_argument("--size", type=int, default=96, help="input height and width for build (default 96)")
    parser.add_argument("--rounds", type=int, default=20, help="paired LiteRT rounds per model (default 20)")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="time the paired runs by the wall clock or CPU time"
    )
    parser.add_argument(
        "--bnfold", default=str(Path(sys.executable).with_name("bnfold")), help="the bnfold command to measure"
    )
    args = parser.parse_args(argv)
    wanted = args.only.split(",") if args.only else names()
    unknown = [n for n in wanted if n not in names()]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(names())}")
    if args.stage == "build":
        build(args.cache, wanted, args.size)
    else:
        table(args.cache, args.out or args.cache / "quant_zoo.md", wanted, args.bnfold, args.rounds, args.clock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
