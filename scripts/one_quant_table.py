"""ONE's quantized recipes through -O1 and every exact pass for quantized graphs, in LiteRT (the
TFLite form) and onert (the Circle form): per recipe the ops on quantized tensors, the operators
before/after, whether each runtime's outputs are bit-identical before/after, and what onert 0.1.0
makes of the original (runs it and agrees with LiteRT bit for bit, runs it and differs, or refuses
it with its words): the derivation of which quantized kernels onert runs.

    python scripts/one_quant_table.py [--out FILE]

The work is tests/one_quant_recipes.py's (tests/test_one_quant_recipes.py pins its findings).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from one_quant_recipes import check_recipe, quantized_kinds, quantized_recipes, same, steps_apart  # noqa: E402


def verdict(form, reference=None) -> str:
    """`reference`: the LiteRT form, whose original's outputs an optimized model onert runs where it
    refused the original is held to."""
    if form.refused:
        after = ""
        if form.after and reference is not None:
            after = "; optimized runs, = LiteRT's" if same(form.after, reference.before) else "; optimized DIFFERS"
        return f"refused: {form.refused.split(': ', 1)[-1][:90]}{after}"
    return "bit-identical" if form.identical else "DIFFERS"


def onert_against_litert(litert_form, onert_form) -> str:
    if not onert_form.before:
        return "-"
    if same(onert_form.before, litert_form.before):
        return "bit-identical"
    apart = steps_apart(onert_form.before, litert_form.before)
    if apart < 0:
        fixed = "; optimized in onert = LiteRT's" if same(onert_form.after, litert_form.before) else ""
        return f"float outputs differ{fixed}"
    return f"{apart} step(s) apart"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the markdown table here")
    args = parser.parse_args(argv)
    lines = [
        "| recipe | ops on quantized tensors | ops before -> after (changed kinds) | LiteRT (.tflite) "
        "| onert (.circle) | onert against LiteRT, original |",
        "|---|---|---|---|---|---|",
    ]
    for name in quantized_recipes():
        litert_form, onert_form = check_recipe(name)
        changed = ", ".join(f"{k} {a}->{b}" for k, (a, b) in litert_form.changed.items()) or "none"
        ops = f"{litert_form.ops[0]} -> {litert_form.ops[1]} ({changed})"
        cells = [name, quantized_kinds(name), ops, verdict(litert_form), verdict(onert_form, litert_form)]
        lines.append("| " + " | ".join([*cells, onert_against_litert(litert_form, onert_form)]) + " |")
        print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
