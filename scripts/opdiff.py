"""Per-kind operator counts of two models side by side, and where they differ.

    python scripts/opdiff.py A.circle B.tflite [--optimize] [--all]

Made to compare the same network from two exporters (TICO's .circle against litert-torch's
.tflite): a kind one model has more of is a decomposition the other exporter keeps as one kernel,
or layout traffic. `--optimize` first runs bnfold's default passes on both (in memory), so the
diff shows what is left after bnfold. Only kinds whose counts differ are printed unless `--all`.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter


def counts(path: str, optimize: bool) -> Counter:
    from bnfold import api
    from bnfold.engine.registry import default_passes
    from bnfold.io.reader import read_model

    model = read_model(path)
    if optimize:
        api.apply_passes(model, default_passes())
    return model.op_counts()


def diff_lines(a: Counter, b: Counter, names: tuple[str, str], everything: bool) -> list[str]:
    width = max([len("kind")] + [len(k) for k in a | b])
    lines = [f"{'kind':<{width}}  {names[0]:>8}  {names[1]:>8}  {'diff':>6}"]
    for kind in sorted(a | b, key=lambda k: (-abs(a[k] - b[k]), k)):
        if everything or a[kind] != b[kind]:
            lines.append(f"{kind:<{width}}  {a[kind]:>8}  {b[kind]:>8}  {a[kind] - b[kind]:>+6}")
    lines.append(
        f"{'total':<{width}}  {sum(a.values()):>8}  {sum(b.values()):>8}  {sum(a.values()) - sum(b.values()):>+6}"
    )
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--optimize", action="store_true", help="count after bnfold's default passes")
    parser.add_argument("--all", action="store_true", help="also print the kinds whose counts are equal")
    args = parser.parse_args(argv)
    a, b = counts(args.a, args.optimize), counts(args.b, args.optimize)
    print("\n".join(diff_lines(a, b, ("A", "B"), args.all)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
