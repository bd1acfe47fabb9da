"""The transformer zoo: tiny decoder and encoder models from a `transformers` config (random weights, no
hub download) through TICO (Circle) and litert-torch (TFLite), optimized by bnfold and by TICO's
`tico-circle`, measured in onert and LiteRT (issue 44).

    python scripts/transformer_zoo.py build --cache DIR [--only NAME,...]     # in an env with torch, tico,
                                                                              # transformers, litert-torch
    python scripts/transformer_zoo.py table --cache DIR [--tico-bin DIR] [--rounds N] [--clock wall|cpu]
                                            [--only NAME,...]

`build` makes, for each architecture below and each exporter, DIR/NAME.circle or .tflite and the
input it was traced with, DIR/NAME.input.h5 (token ids; ONE's h5 layout, values/h5io.py): a Llama
(hidden 64, 4 heads, 2 layers) with multi-head and with grouped-query attention (2 key/value
heads), the same Llama traced for one token at position 7 (a decode step without a KV cache: one
row of RoPE tables), GPT-2, BERT and
a Qwen2-style decoder (q/k/v biases, GQA). Every norm weight and bias is drawn at random too (HF
initializes RMS-norm weights to ones, which exporters fold away), eval mode, use_cache off.

`table` needs bnfold (this checkout) with LiteRT and onert, and `tico-circle` (`--tico-bin`, the bin
directory of the env holding tico). Per model and per variant — the raw export, bnfold's defaults,
ONE's own O1 group (`-O1` with bnfold's decoder additions switched off: one.py), bnfold's -O1 (ONE's
O1 and the decoder fusions; a Circle output's target is onert), and `tico-circle optimize --preset
o1` — it records operators, TRANSPOSEs, RMS_NORM and ROPE ops, the wall
time of the optimizing command, the largest error against the raw export relative to its largest
output on the stored input in onert (Circle) and LiteRT (TFLite, and Circle where LiteRT runs it),
and paired speed against the raw export (scripts/runners.py's paired_speed: alternating runs, one
thread, median of t_raw / t_variant, timed by wall time or, with --clock cpu, this process's CPU
time; above 1 the variant is faster; the raw row is the raw export against itself, the noise floor)
in onert and LiteRT, with the variant's median time per run. It prints a markdown table and writes
DIR/transformer_zoo.md and .json (transformer_zoo_cpu.* with --clock cpu).
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

SEQ = 8  # prefill length
VOCAB = 256


# ---------------------------------------------------------------- build (torch side)


def _llama(kv_heads: int = 4):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        vocab_size=VOCAB,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(config)


def _qwen():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=VOCAB,
        max_position_embeddings=64,
    )
    return Qwen2ForCausalLM(config)


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64))


def _bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=VOCAB
    )
    return BertModel(config, add_pooling_layer=False)


# name -> (model builder, sequence length, position of a decode step's token or None)
ARCHS = {
    "llama": (_llama, SEQ, None),
    "llama_gqa": (lambda: _llama(kv_heads=2), SEQ, None),
    "llama_decode": (_llama, 1, SEQ - 1),
    "gpt2": (_gpt2, SEQ, None),
    "bert": (_bert, SEQ, None),
    "qwen": (_qwen, SEQ, None),
}
EXPORTERS = {"tico": ".circle", "litert": ".tflite"}
NUMPY = {"INT32": np.int32, "INT64": np.int64}


class Logits:
    """The model as a module of the token ids alone, returning the last hidden state or logits; a
    decode step (`position` set) puts its token at that position (RoPE tables of that row: at
    position 0 they are cos = 1, sin = 0, the identity, which says nothing)."""

    def __new__(cls, model, position: int | None = None):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner
                self.position = None if position is None else torch.tensor([[position]])  # a constant: folds

            def forward(self, ids):
                kwargs = {"use_cache": False} if hasattr(self.inner.config, "use_cache") else {}
                if self.position is not None:
                    kwargs["position_ids"] = self.position
                out = self.inner(input_ids=ids, **kwargs)
                return out.logits if hasattr(out, "logits") else out.last_hidden_state

        return Wrapped(model).eval()


def randomized(model):
    """Random norm weights and biases (HF initializes them to ones and zeros), eval mode."""
    import torch

    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() or name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.copy_(
                    torch.empty_like(p).uniform_(0.5, 1.5) if name.endswith("weight") else torch.randn_like(p) * 0.1
                )
    return model.eval()


def build(cache: Path, only: set[str] | None) -> None:
    import torch

    from bnfold.values.h5io import write_h5

    cache.mkdir(parents=True, exist_ok=True)
    for arch, (make, seq, position) in ARCHS.items():
        for exporter, suffix in EXPORTERS.items():
            name = f"{exporter}_{arch}"
            path = cache / f"{name}{suffix}"
            if (only and name not in only) or path.exists():
                continue
            torch.manual_seed(0)
            module = Logits(randomized(make()), position)
            ids = torch.tensor(np.random.default_rng(0).integers(0, VOCAB, (1, seq)), dtype=torch.int64)
            start = time.perf_counter()
            try:
                if exporter == "tico":
                    import tico

                    tico.convert(module, (ids,)).save(str(path))
                else:
                    import litert_torch

                    litert_torch.convert(module, (ids,)).export(str(path))
            except Exception as e:  # an exporter that cannot take an architecture: say so and go on
                print(f"{name}: {exporter} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            from bnfold.io.reader import read_model

            x = read_model(str(path)).graphs[0].inputs[0]
            write_h5(str(cache / f"{name}.input.h5"), [(x.name, ids.numpy().astype(NUMPY[x.dtype]))])
            print(f"{name}: {path.stat().st_size} bytes in {time.perf_counter() - start:.1f} s", flush=True)


# ---------------------------------------------------------------- table (bnfold side)

VARIANTS = ("raw", "default", "ONE-O1", "O1", "tico-circle")
# what the paired runs are timed by: wall time, or this process's CPU time (less disturbed by other
# processes on a loaded machine; both runtimes run one thread)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
KINDS = ("TRANSPOSE", "RESHAPE", "RMS_NORM", "ROPE", "BATCH_MATMUL")


def optimize(variant: str, path: Path, out: Path, bnfold_bin: Path, tico_bin: Path) -> tuple[float, str]:
    """Write `variant` of `path` to `out`: (wall seconds of the command, error text or "")."""
    if variant == "tico-circle":
        argv = [str(tico_bin / "tico-circle"), "optimize", str(path), "-o", str(out), "--preset", "o1"]
    else:
        from bnfold.one import O1_DECODER_ADDITIONS

        ones_o1 = ["-O1", *(f"--no-{p}" for p in O1_DECODER_ADDITIONS)]  # ONE's group alone
        flags = {"default": [], "ONE-O1": ones_o1, "O1": ["-O1"]}[variant]
        argv = [str(bnfold_bin / "bnfold"), "optimize", str(path), str(out), "--quiet", "--force", *flags]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return seconds, "" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"


def runs_in(runtime: str, model, xs) -> bool:
    from runners import RUNNERS

    try:
        RUNNERS[runtime](model)(xs)
        return True
    except Exception:  # noqa: BLE001 - the runtime cannot run it (Circle-only operators in LiteRT, NYI in onert)
        return False


def relative_error(runtime: str, original, optimized, xs) -> float:
    from runners import RUNNERS

    a, b = RUNNERS[runtime](original)(xs), RUNNERS[runtime](optimized)(xs)
    worst = max(float(np.max(np.abs(p.astype(np.float64) - q))) for p, q in zip(a, b))
    scale = max(float(np.max(np.abs(p))) for p in a)
    return worst / scale if scale else worst


def measure(path: Path, work: Path, bnfold_bin: Path, tico_bin: Path, rounds: int, clock: str = "wall") -> dict:
    from bnfold.io.reader import read_model
    from bnfold.values.h5io import read_h5
    from runners import paired_speed
    from zoo import op_counts

    raw = read_model(str(path))
    xs = [np.asarray(v) for _, v in read_h5(str(path.with_suffix("")) + ".input.h5")]
    row: dict = {"model": path.stem, "format": raw.format.name, "variants": {}}
    runtimes = ("onert", "litert") if raw.format.name == "circle" else ("litert", "onert")
    for variant in VARIANTS:
        if variant == "tico-circle" and raw.format.name != "circle":
            continue
        out = work / f"{path.stem}.{variant}{path.suffix}"
        seconds, error = (0.0, "") if variant == "raw" else optimize(variant, path, out, bnfold_bin, tico_bin)
        entry: dict = {"seconds": round(seconds, 2)}
        if error:
            entry["error"] = error
            row["variants"][variant] = entry
            continue
        model = raw if variant == "raw" else read_model(str(out))
        counts = op_counts(model)
        entry.update(ops=sum(counts.values()), **{k: counts.get(k, 0) for k in KINDS})
        for runtime in runtimes:
            if not runs_in(runtime, model, xs) or not runs_in(runtime, raw, xs):
                entry[f"{runtime}_error"] = None
                continue
            entry[f"{runtime}_error"] = relative_error(runtime, raw, model, xs)
            # the raw export against itself: the noise floor of the row's speed figures (A/A)
            ratio, ms_raw, ms = paired_speed(raw, model, xs, rounds, runtime=runtime, clock=CLOCKS[clock])
            entry[f"{runtime}_speed"] = round(ratio, 3)
            entry[f"{runtime}_ms"] = (round(ms_raw, 4), round(ms, 4))
        row["variants"][variant] = entry
        print(f"{path.stem} {variant}: {json.dumps(entry)}", flush=True)
    return row


def _cell(entry: dict | None, key: str, fmt: str = "{}") -> str:
    if entry is None or "error" in entry:
        return "fails" if entry else "-"
    value = entry.get(key)
    return "n/a" if value is None else fmt.format(value)


def markdown(rows: list[dict]) -> str:
    lines = [
        "| model | variant | ops | TRANSPOSE | RESHAPE | RMS_NORM | ROPE | onert err | onert speed | LiteRT err "
        "| LiteRT speed | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for variant, e in row["variants"].items():
            cells = [
                row["model"],
                variant,
                _cell(e, "ops"),
                _cell(e, "TRANSPOSE"),
                _cell(e, "RESHAPE"),
                _cell(e, "RMS_NORM"),
                _cell(e, "ROPE"),
                _cell(e, "onert_error", "{:.1e}"),
                _cell(e, "onert_speed", "{:.2f}x") + (f" ({e['onert_ms'][1]:.3f} ms)" if "onert_ms" in e else ""),
                _cell(e, "litert_error", "{:.1e}"),
                _cell(e, "litert_speed", "{:.2f}x") + (f" ({e['litert_ms'][1]:.3f} ms)" if "litert_ms" in e else ""),
                _cell(e, "seconds"),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def table(cache: Path, only: set[str] | None, tico_bin: Path, rounds: int, clock: str = "wall") -> int:
    bnfold_bin = Path(sys.executable).parent
    work = cache / "optimized"
    work.mkdir(exist_ok=True)
    paths = sorted(p for p in [*cache.glob("*.circle"), *cache.glob("*.tflite")] if not only or p.stem in only)
    rows = [measure(p, work, bnfold_bin, tico_bin, rounds, clock) for p in paths]
    text = markdown(rows)
    print(text)
    stem = "transformer_zoo" if clock == "wall" else f"transformer_zoo_{clock}"
    (cache / f"{stem}.md").write_text(text)
    (cache / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("build", "table"))
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--tico-bin", type=Path, default=Path(sys.executable).parent)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall", help="time the paired runs by")
    args = parser.parse_args(argv)
    only = {n for n in args.only.split(",") if n} or None
    if args.command == "build":
        build(args.cache, only)
        return 0
    return table(args.cache, only, args.tico_bin, args.rounds, args.clock)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
