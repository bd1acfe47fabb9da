"""ONE's quantized recipes (every recipe of recipes/ whose model holds a quantized tensor) through
-O1 and every exact pass for quantized graphs, in both forms: the TFLite form run in LiteRT, the
Circle form in onert, each optimized model against its original bit for bit, on inputs covering
each input's whole range (quant_models.quant_inputs). Also what onert 0.1.0 makes of each original:
whether it loads and runs it, and whether its integers equal LiteRT's (the derivation of which
quantized kernels onert runs; scripts/one_quant_table.py prints it as a table).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bnfold import api
from bnfold.engine.registry import QUANTIZED_GRAPH_PASSES
from bnfold.errors import BnfoldError
from bnfold.io.atomic import save_model
from bnfold.io.formats import format_from_extension
from bnfold.io.reader import read_model
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.selection import select
from bnfold.values import litert, onert
from quant_models import quant_inputs

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
TEST_RECIPES = Path(__file__).resolve().parent / "data" / "recipes"  # where the reference interpreter lacks a kernel
QUANT_PASSES = list(QUANTIZED_GRAPH_PASSES)  # scripts/quant_zoo.py and tests/layout_fuzzing.py run the same
SAMPLES = 3


def quantized_recipes() -> list[str]:
    """The recipes whose model has a quantized tensor (read from the built model, not the name);
    those written for Circle alone (its own options or operators) have no TFLite form and are left out."""
    names = []
    for path in sorted([*RECIPES.glob("*.toml"), *TEST_RECIPES.glob("*.toml")], key=lambda p: p.stem):
        recipe = load_recipe(path)
        if recipe_format(recipe).name != "tflite":
            continue
        model = build(recipe)
        if any(t.is_quantized for g in model.graphs for t in g.tensors):
            names.append(path.stem)
    return names


def passes() -> list[str]:
    return select(["O1", *QUANT_PASSES], {}, default=False).passes


@dataclass
class Form:
    """One form of a recipe (.tflite or .circle) in one runtime, before and after the passes."""

    runtime: str
    changed: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind -> (before, after), changed only
    ops: tuple[int, int] = (0, 0)
    refused: str = ""  # the runtime's reason when it cannot run the original
    refused_after: str = ""  # ... the optimized model
    before: list[list[np.ndarray]] = field(default_factory=list)  # outputs per sample
    after: list[list[np.ndarray]] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        """Every output of every sample bit for bit the same before and after (both ran)."""
        return bool(self.before) and len(self.before) == len(self.after) and same(self.before, self.after)


def same(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> bool:
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for xs, ys in zip(a, b) for x, y in zip(xs, ys))


def written(model, path: Path):
    save_model(model, str(path), format_from_extension(str(path)))
    return read_model(str(path))


def run(runtime: str, model, xs: list[np.ndarray]) -> list[np.ndarray]:
    if runtime == "litert":
        return litert.run(model, xs)
    return onert.Session(model)(xs)


def outputs(runtime: str, model, samples) -> tuple[list[list[np.ndarray]], str]:
    """(the outputs per sample, "") or ([], the runtime's reason for not running the model)."""
    try:
        return [run(runtime, model, xs) for xs in samples], ""
    except BnfoldError as e:
        return [], str(e)


def recipe_path(name: str) -> Path:
    return next(p for p in (RECIPES / f"{name}.toml", TEST_RECIPES / f"{name}.toml") if p.exists())


def check_form(name: str, extension: str, runtime: str, workdir: Path) -> Form:
    recipe = load_recipe(recipe_path(name))
    fmt = format_from_extension(f"x{extension}")
    original = written(build(recipe, fmt, where=name), workdir / f"{name}{extension}")
    model = build(recipe, fmt, where=name)
    api.apply_passes(model, passes())
    optimized = written(model, workdir / f"{name}.opt{extension}")
    before, after = original.op_counts(), optimized.op_counts()
    form = Form(runtime, ops=(sum(before.values()), sum(after.values())))
    form.changed = {k: (before.get(k, 0), after.get(k, 0)) for k in sorted(set(before) | set(after))}
    form.changed = {k: v for k, v in form.changed.items() if v[0] != v[1]}
    samples = [quant_inputs(original, seed) for seed in range(SAMPLES)]
    form.before, form.refused = outputs(runtime, original, samples)
    form.after, form.refused_after = outputs(runtime, optimized, samples)
    return form


def check_recipe(name: str, workdir: Path | None = None) -> tuple[Form, Form]:
    """(the TFLite form in LiteRT, the Circle form in onert); both draw the same inputs."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="bnfold-onequant-"))
    return check_form(name, ".tflite", "litert", workdir), check_form(name, ".circle", "onert", workdir)


def steps_apart(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> int:
    """The largest difference between two runtimes' integer outputs of one model, in steps (-1: a
    float output differs)."""
    worst = 0
    for xs, ys in zip(a, b):
        for x, y in zip(xs, ys):
            if x.dtype.kind == "f":
                if x.tobytes() != y.tobytes():
                    return -1
                continue
            worst = max(worst, int(np.abs(x.astype(np.int64) - y.astype(np.int64)).max(initial=0)))
    return worst


def quantized_kinds(name: str) -> str:
    """The recipe's ops on quantized tensors, as KIND(type of its first quantized tensor)."""
    model = build(load_recipe(recipe_path(name)))
    kinds = []
    for op in model.graphs[0].ops:
        typed = [t.dtype for t in [*op.inputs, *op.outputs] if t is not None and t.is_quantized]
        if typed:
            kinds.append(f"{op.kind}({typed[0]})")
    return ", ".join(dict.fromkeys(kinds))
