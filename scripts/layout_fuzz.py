"""Long differential run of the layout passes: tests/layout_fuzzing.py's random graphs, by the ten
thousand, every option set, original vs optimized in LiteRT.

    python scripts/layout_fuzz.py [--graphs 10000] [--seed 0] [--sets default,O1,c_layout,nchw,nchw_in,nchw_out,nchw_io]
                                  [--max-ops 12] [--generator layout|in_place|quant|decoder] [--repros DIR] [--show 20]

--generator in_place makes the graphs of tests/layout_fuzzing.py's `in_place_graph` instead: chains of
the ops LiteRT runs in place over a shared buffer (RESHAPE, SQUEEZE, EXPAND_DIMS, ADD/SUB/MUL/DIV,
SOFTMAX), with second readers and dead ops, to stress the in-place rule (engine/reshapes.py, planner.py).
--generator quant makes `quantized_graph`s (requantizations, QUANTIZE/DEQUANTIZE pairs, int8 layers,
TRANSPOSEs, reshapes, MEANs and concatenations of quantized tensors, dequantized int8 weights) under
the quant option sets (the quantized-graph passes, the layout passes, the NCHW conversion, O1),
compared bit for bit.
--generator decoder makes `decoder_graph`s: RMS norms and rotary embeddings written out as exporters write
them, x / SQRT, MUL and DIV by ones, among transposes and FCs (the transformer passes' patterns; the
`decoder` option set runs those passes).

Prints, per option set, the cases and their outcomes (ok, refused, exit3, load_fail, run_fail,
interface, values), the graphs that were no fair case and why, and the time. Each failure is
shrunk (operators and outputs dropped while it fails the same way) and written to --repros as
NAME.tflite + NAME.txt (the bnfold command, what happened, the graph op by op, the expected
outputs on one input). Exit status 1 if any case failed.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from layout_fuzzing import (  # noqa: E402
    ALL_OPTION_SETS,
    OPTION_SETS,
    QUANT_OPTION_SETS,
    _interpreter,
    _invoke,
    decoder_graph,
    describe,
    in_place_graph,
    prepare,
    quantized_graph,
    random_graph,
    run_case,
    sample_inputs,
    shrink,
)

FAILURES = ("exit3", "load_fail", "run_fail", "interface", "values")
GENERATORS = {"layout": random_graph, "in_place": in_place_graph, "quant": quantized_graph, "decoder": decoder_graph}
SETS = {"layout": OPTION_SETS, "in_place": OPTION_SETS, "quant": QUANT_OPTION_SETS, "decoder": OPTION_SETS}


def command(name: str, option_set: str) -> str:
    passes, options = ALL_OPTION_SETS[option_set]
    flags = [f"--passes '{passes}'"] if passes else []
    flags += ["-O1" if o == "O1" else f"--{o}" for o in options]
    return " ".join([f"bnfold optimize {name}.tflite {name}.opt.tflite", *flags])


def write_repro(directory: Path, seed: int, option_set: str, kind: str, detail: str, recipe: dict) -> str:
    small = shrink(recipe, option_set, kind)
    content, _ = prepare(small)
    if content is None:  # shrinking never keeps an unfair graph; the original then
        small, content = recipe, prepare(recipe)[0]
    name = f"{kind}-{option_set}-{seed}"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.tflite").write_bytes(content)
    interp = _interpreter(content, preserve=True, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    xs = sample_inputs(interp, 1)
    lines = [
        f"kind: {kind} under option set {option_set}",
        f"command: {command(name, option_set)}",
        f"observed: {run_case(content, option_set).detail or detail}",
        f"generator seed {seed} ({len(recipe['operation'])} ops), shrunk to {len(small['operation'])} ops:",
        describe(small),
        "",
    ]
    with np.printoptions(precision=4, suppress=True):
        for d, x in zip(interp.get_input_details(), xs):
            lines.append(f"input {d['name']} {[int(v) for v in d['shape']]} (normal(0,2), numpy seed 1):\n{x}")
        for d, y in zip(interp.get_output_details(), _invoke(interp, xs)):
            lines.append(f"expected output {d['name']} {y.dtype}{list(y.shape)}:\n{y}")
    (directory / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sets", help="comma-separated option sets (default: every set of the generator)")
    parser.add_argument("--max-ops", type=int, default=12)
    parser.add_argument("--generator", choices=sorted(GENERATORS), default="layout")
    parser.add_argument("--repros", type=Path, default=Path("layout_repros"))
    parser.add_argument("--show", type=int, default=20)
    args = parser.parse_args()
    sets = args.sets.split(",") if args.sets else list(SETS[args.generator])
    start = time.monotonic()
    outcomes = {s: collections.Counter() for s in sets}
    unfair: collections.Counter = collections.Counter()
    failures = []
    for seed in range(args.seed, args.seed + args.graphs):
        if (seed - args.seed) % 1000 == 999:
            print(f"... {seed - args.seed + 1} graphs, {len(failures)} failures", file=sys.stderr, flush=True)
        recipe = GENERATORS[args.generator](seed, args.max_ops)
        content, why = prepare(recipe)
        if content is None:
            unfair[why] += 1
            continue
        for option_set in sets:
            outcome = run_case(content, option_set)
            outcomes[option_set][outcome.kind] += 1
            if outcome.kind in FAILURES:
                failures.append((seed, option_set, outcome, recipe))
    elapsed = time.monotonic() - start
    seeds = f"seeds {args.seed}..{args.seed + args.graphs - 1}"
    print(f"{args.graphs} {args.generator} graphs ({seeds}, up to {args.max_ops} ops each)")
    print(f"no fair case: {dict(unfair) or 0}")
    for option_set in sets:
        print(
            f"{option_set:9} {sum(outcomes[option_set].values()):6} cases: {dict(sorted(outcomes[option_set].items()))}"
        )
    print(f"{len(failures)} failures; {elapsed:.0f} s")
    for seed, option_set, outcome, recipe in failures[: args.show]:
        name = write_repro(args.repros, seed, option_set, outcome.kind, outcome.detail, recipe)
        print(f"  {name}: {outcome.detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
