"""Long differential run of bnfold's -O1 passes (ONE's O1 and bnfold's decoder additions):
tests/o1_fuzzing.py's graphs (each pass's exact pattern and near misses in random contexts), bnfold
run as a command under `-O1`,
`-O1 --target onert` and each planted pass alone, judged by LiteRT (and onert for the Circle
output, when installed).

    python scripts/o1_fuzz.py [--graphs 1000] [--seed 0] [--configs O1,O1_onert,alone]
                              [--passes A,B] [--max-patterns 3] [--jobs 1] [--repros DIR] [--show 20]

Prints the graphs (and the ones that were no fair case, and why), per configuration the outcomes
(exact, refused, internal, load_fail, run_fail, values, unjudged), the coverage per pass (graphs
holding its exact pattern, and in how many the pass fired: under -O1 and alone), how often each
near miss made its pass fire, and the time. The first failure of each kind per configuration is
shrunk (operators and outputs dropped while it fails the same way) and written to --repros as
NAME.tflite (NAME.circle for a graph given as Circle) + NAME.txt (the command, what happened, the
graph, one input and the expected outputs). Exit status 1 if any case failed.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from o1_fuzzing import (  # noqa: E402
    FAILURES,
    PATTERNS,
    Case,
    OnertWorker,
    describe,
    o1_graph,
    onert_available,
    oracle,
    run_config,
    run_graph,
    shrink,
    to_bytes,
    with_circle,
)

_state: dict = {}


def _setup(use_onert: bool) -> None:
    _state["work"] = Path(tempfile.mkdtemp(prefix="o1fuzz-"))
    _state["onert"] = OnertWorker() if use_onert else None


def _one(job):
    seed, passes, max_patterns, which = job
    try:
        case = o1_graph(seed, passes, max_patterns)
    except Exception as e:  # noqa: BLE001 - a generator's slip: counted, not fatal
        return seed, [], f"generator {type(e).__name__}: {e}"[:100], {}
    orc, outcomes = run_graph(case, _state["work"], _state["onert"], which)
    results = {c: (o.kind, o.detail, o.fired) for c, o in outcomes.items()}
    return seed, case.planted, orc.unfair, results


def command(name: str, config: str, fmt: str = "tflite") -> str:
    out = "circle" if config == "O1_onert" else fmt
    base = f"bnfold optimize {name}.{fmt} {name}.opt.{out}"
    if config == "O1_onert":
        return base + " -O1 --target onert"
    if config == "O1":
        return base + " -O1"
    return base + f" --passes {config.removeprefix('P:')}"


def write_repro(directory: Path, case: Case, config: str, kind: str, work: Path, onert) -> str:
    small = shrink(case, config, kind, work, onert)
    orc = oracle(small)
    tag = config.removeprefix("P:")
    name = f"{kind}-{tag}-s{case.seed}"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.{small.fmt}").write_bytes(orc.content or to_bytes(small.recipe, small.fmt) or b"")
    if small.fmt == "circle" and small.reference is not None:  # what LiteRT runs as its oracle
        (directory / f"{name}.reference.tflite").write_bytes(to_bytes(small.reference) or b"")
    if orc.content is not None:
        with_circle(orc, small, onert)
        observed = run_config(config, orc, work, onert)
        observed_line = f"{observed.kind}: {observed.detail}"
    else:
        observed_line = "(the shrunk graph is no fair case)"
    lines = [
        f"kind: {kind} under config {config}",
        f"command: {command(name, config, small.fmt)}",
        f"observed: {observed_line}",
        f"planted: {case.planted}",
        f"generator seed {case.seed} ({len(case.recipe['operation'])} ops), shrunk to"
        f" {len(small.recipe['operation'])} ops:",
        describe(small.recipe),
        "",
    ]
    with np.printoptions(precision=4, suppress=True):
        if orc.inputs is not None:
            for i, x in enumerate(orc.inputs):
                lines.append(f"input {i} {small.recipe['input'][i]} {x.dtype}{list(x.shape)} (sample 1):\n{x}")
            for i, y in enumerate(orc.outputs):
                lines.append(f"expected output {i} {small.recipe['output'][i]} {y.dtype}{list(y.shape)} (LiteRT):\n{y}")
        else:
            lines.append("no oracle: the graph keeps a TensorFlow op LiteRT cannot run")
    (directory / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return name


def _percent(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}%" if n else "-"


class Tally:
    """The run's figures so far: outcomes per configuration, graphs that were no case, coverage."""

    def __init__(self):
        self.graphs = 0
        self.outcomes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.unfair: collections.Counter = collections.Counter()
        self.present: collections.Counter = collections.Counter()
        self.fired = {c: collections.Counter() for c in ("O1", "O1_onert", "alone")}
        self.misses: collections.Counter = collections.Counter()
        self.misses_fired: collections.Counter = collections.Counter()
        self.failures: dict[tuple[str, str], list] = {}

    def add(self, seed: int, planted, why: str, results: dict) -> None:
        self.graphs += 1
        if why:
            self.unfair[why] += 1
            return
        for config, (kind, detail, _fired) in results.items():
            self.outcomes["alone" if config.startswith("P:") else config][kind] += 1
            if kind in FAILURES:
                self.failures.setdefault((config, kind), []).append((seed, detail))
                print(f"FAIL seed {seed} {config} {kind}: {detail[:200]} {planted}", file=sys.stderr, flush=True)
        exact = {p for p, m in planted if m is None}
        for p in exact:
            self.present[p] += 1
            for config in ("O1", "O1_onert"):
                self.fired[config][p] += bool(results.get(config, ("", "", {}))[2].get(p))
            self.fired["alone"][p] += bool(results.get(f"P:{p}", ("", "", {}))[2].get(p))
        for p, m in planted:
            if m is not None and p not in exact:
                self.misses[(p, m)] += 1
                self.misses_fired[(p, m)] += bool(results.get(f"P:{p}", ("", "", {}))[2].get(p))

    def show(self, passes, use_onert: bool, elapsed: float) -> None:
        fair = self.graphs - sum(self.unfair.values())
        onert = "used" if use_onert else "not used"
        print(f"{self.graphs} graphs, {fair} fair; no fair case: {dict(self.unfair)}; onert {onert}")
        for config in ("O1", "O1_onert", "alone"):
            if config in self.outcomes:
                counts = self.outcomes[config]
                print(f"{config:9} {sum(counts.values()):6} cases: {dict(sorted(counts.items()))}")
        print("coverage (graphs holding the exact pattern: how many the pass changed under -O1, -O1 for onert, alone):")
        for p in PATTERNS:
            if passes and p not in passes:
                continue
            n = self.present[p]
            counts = [(c, self.fired[c][p]) for c in ("O1", "O1_onert", "alone")]
            print(f"  {p:40} {n:5}  " + "  ".join(f"{c} {k:5} ({_percent(k, n)})" for c, k in counts))
        print("near misses that made their pass fire (alone), of those planted:")
        for (p, m), k in sorted(self.misses.items()):
            print(f"  {p} / {m}: {self.misses_fired[(p, m)]} of {k}")
        total = sum(len(v) for v in self.failures.values())
        print(f"{total} failures; {elapsed:.0f} s")
        for (config, kind), found in sorted(self.failures.items()):
            print(f"  {config} {kind}: {len(found)} (seeds {[s for s, _ in found[:8]]}) e.g. {found[0][1][:160]}")
        print(flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", default="O1,O1_onert,alone")
    parser.add_argument("--passes", default="", help="plant only these passes' patterns")
    parser.add_argument("--max-patterns", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--every", type=int, default=200, help="print the figures so far every N graphs")
    parser.add_argument("--repros", type=Path, default=Path("o1_repros"))
    parser.add_argument("--show", type=int, default=20)
    args = parser.parse_args()
    which = tuple(args.configs.split(","))
    passes = [p for p in args.passes.split(",") if p] or None
    use_onert = "O1_onert" in which and onert_available()
    start = time.monotonic()
    tally = Tally()
    jobs = [(s, passes, args.max_patterns, which) for s in range(args.seed, args.seed + args.graphs)]
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(args.jobs, mp_context=ctx, initializer=_setup, initargs=(use_onert,)) as pool:
        futures = [pool.submit(_one, job) for job in jobs]
        for n, future in enumerate(as_completed(futures), 1):
            try:
                tally.add(*future.result())
            except Exception as e:  # noqa: BLE001 - the harness's own slip: counted, the run goes on
                tally.graphs += 1
                tally.unfair[f"harness {type(e).__name__}"] += 1
            if n % args.every == 0 and n < args.graphs:
                tally.show(passes, use_onert, time.monotonic() - start)
    print(f"seeds {args.seed}..{args.seed + args.graphs - 1}, up to {args.max_patterns} patterns a graph")
    tally.show(passes, use_onert, time.monotonic() - start)
    if args.show:
        _setup(use_onert)
        for (config, kind), found in sorted(tally.failures.items())[: args.show]:
            case = o1_graph(found[0][0], passes, args.max_patterns)
            name = write_repro(args.repros, case, config, kind, _state["work"], _state["onert"])
            print(f"  wrote {args.repros / name}.txt")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
