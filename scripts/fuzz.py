"""Long fuzz run: the CI fuzz test's mutators and contract (tests/fuzzing.py), by the ten thousand.

    python scripts/fuzz.py [--cases 10000] [--cli-cases 10000] [--recipe-cases 10000] [--seed 1]
                           [--memory-gb 6] [--show 20]

Seeds are every fixture in tests/data and tests/data/zoo (models real exporters wrote: the TFLite
converter, TICO, litert-torch, onnx2tf) plus every recipe in recipes/ and tests/data/recipes/ (the
shipped-looking models: CUSTOM options, sparsity, float16 behind DEQUANTIZE, several subgraphs,
signatures, metadata; built to a temp directory, the latter in both formats).
`--cli-cases` more cases mutate the command line instead of the file (hostile paths in every
slot, odd option values, mutated recipes; tests/fuzzing.py: fuzz_commands), and `--recipe-cases`
run `recipe build` on mutated copies of every recipe in recipes/ and tests/data/recipes/
(fuzz_recipes). Prints one summary line per outcome and per error kind (the message with paths, numbers and
names stripped), then the failures. Exit status 1 if any case failed (internal error, exception
escaping the CLI, hang, leftover file, unreadable output). The address-space limit turns a
runaway allocation into a MemoryError, which the run reports as a failure instead of swapping.
"""

from __future__ import annotations

import argparse
import collections
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import fuzz, load_seed  # noqa: E402


def _seeds(tmp: Path):
    from bnfold.errors import BnfoldError
    from conftest import TEST_RECIPES, build_recipe

    data, zoo = ROOT / "tests" / "data", ROOT / "tests" / "data" / "zoo"  # zoo: real exporters' output
    paths = [p for d in (data, zoo) for p in sorted(d.glob("*.tflite")) + sorted(d.glob("*.circle"))]
    for recipe in sorted((ROOT / "recipes").glob("*.toml")):
        try:
            paths.append(build_recipe(recipe.stem, tmp))
        except BnfoldError:
            pass  # a recipe for the other format, or one the chef refuses: not a seed
    for recipe in sorted(TEST_RECIPES.glob("*.toml")):  # shipped-looking models, in both formats
        paths += [build_recipe(recipe.stem, tmp, ext, directory=TEST_RECIPES) for ext in (".tflite", ".circle")]
    return [load_seed(p) for p in paths]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--cli-cases", type=int, default=10000)
    parser.add_argument("--recipe-cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory-gb", type=float, default=6.0)
    parser.add_argument("--show", type=int, default=20, help="failures to print")
    args = parser.parse_args()
    limit = int(args.memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with tempfile.TemporaryDirectory(prefix="bnfold-fuzz-seeds-") as tmp:
        seeds = _seeds(Path(tmp))
        started = time.perf_counter()
        outcomes, kinds, failures = collections.Counter(), collections.Counter(), []
        slowest = 0.0
        for i, name, label, outcome in fuzz(seeds, args.cases, seed=args.seed):
            outcomes[outcome.kind] += 1
            slowest = max(slowest, outcome.seconds)
            if outcome.kind == "rejected":
                kinds[outcome.detail] += 1
            elif outcome.failed:
                failures.append((i, name, label, outcome))
        elapsed = time.perf_counter() - started
    print(
        f"{args.cases} cases from {len(seeds)} seeds (seed {args.seed}) in {elapsed:.0f} s, slowest case "
        f"{slowest:.2f} s: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common())
    )
    print(f"rejections by kind ({len(kinds)} kinds):")
    for kind, count in kinds.most_common():
        print(f"  {count:>6}  {kind}")
    for i, name, label, outcome in failures[: args.show]:
        print(f"FAIL case {i} {name} [{label}] {outcome.kind}: {outcome.detail}")
    clean = _command_line_cases(args)
    clean = _recipe_cases(args) and clean
    return 1 if failures or not clean else 0


def _recipe_cases(args) -> bool:
    """The recipe half; True when no case failed."""
    from fuzzing import fuzz_recipes

    if not args.recipe_cases:
        return True
    started = time.perf_counter()
    outcomes, failures = collections.Counter(), []
    from conftest import TEST_RECIPES

    recipes = sorted((ROOT / "recipes").glob("*.toml")) + sorted(TEST_RECIPES.glob("*.toml"))
    for i, name, outcome in fuzz_recipes(recipes, args.recipe_cases, seed=args.seed):
        outcomes[outcome.kind] += 1
        if outcome.failed:
            failures.append((i, name, outcome))
    print(
        f"{args.recipe_cases} recipe cases (seed {args.seed}) in {time.perf_counter() - started:.0f} s: "
        + ", ".join(f"{k} {v}" for k, v in outcomes.most_common())
    )
    for i, name, outcome in failures[: args.show]:
        print(f"FAIL recipe case {i} {name} {outcome.kind}: {outcome.detail}")
    return not failures


def _command_line_cases(args) -> bool:
    """The command-line half; True when no case failed."""
    import contextlib
    import io

    from bnfold.cli import run
    from fuzzing import fuzz_commands

    if not args.cli_cases:
        return True
    model = ROOT / "tests" / "data" / "bn_conv_valid.tflite"
    with tempfile.TemporaryDirectory(prefix="bnfold-fuzz-cli-seeds-") as tmp:
        circle, h5 = Path(tmp) / "m.circle", Path(tmp) / "in.h5"
        with contextlib.redirect_stdout(io.StringIO()):
            run(["convert", str(model), str(circle)])
            run(["check", str(model), str(model), "--write-input", str(h5)])
        started = time.perf_counter()
        outcomes, failures = collections.Counter(), []
        for i, _argv, outcome in fuzz_commands(
            model, circle, ROOT / "recipes" / "Net_Conv_Add_Mul_000.toml", h5, args.cli_cases, seed=args.seed
        ):
            outcomes[outcome.kind] += 1
            if outcome.failed:
                failures.append((i, outcome))
    print(
        f"{args.cli_cases} command-line cases (seed {args.seed}) in {time.perf_counter() - started:.0f} s: "
        + ", ".join(f"{k} {v}" for k, v in outcomes.most_common())
    )
    for i, outcome in failures[: args.show]:
        print(f"FAIL command-line case {i} {outcome.kind}: {outcome.detail}")
    return not failures


if __name__ == "__main__":
    sys.exit(main())
