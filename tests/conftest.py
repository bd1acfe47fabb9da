"""Shared test helpers: fixture paths, object-tree comparison, recipe building, LiteRT runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bnfold.io.reader import read_model
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.values import litert

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
RECIPES = ROOT / "recipes"
TEST_RECIPES = DATA / "recipes"  # test inputs built by the chef that no backend runs whole, or only LiteRT does
FIXTURES = sorted(p.name for p in DATA.glob("*.tflite")) + sorted(p.name for p in DATA.glob("*.circle"))


def unpacked(path):
    """The whole file unpacked with the bindings' object API (ModelT), independently of how
    bnfold's reader reads it."""
    from bnfold.io.formats import format_from_identifier

    data = Path(path).read_bytes()
    fmt = format_from_identifier(data[4:8], str(path))
    return fmt.cls("ModelT").InitFromObj(fmt.cls("Model").GetRootAs(data, 0))


def has_offset_buffers(path) -> bool:
    return any(b.offset > 1 for b in unpacked(path).buffers)


def object_tree(path) -> list[tuple[str, object]]:
    """Every field of the unpacked ModelT as (path, value) pairs; buffers by content (as bnfold
    reads them), since where the bytes sit (inline vector or offset/size) is layout, not content."""
    model = read_model(str(path))
    out: list[tuple[str, object]] = []
    _walk(unpacked(path), "model", out, model)
    return out


def _walk(obj, path, out, model):
    if isinstance(obj, list):
        out.append((path + ".len", len(obj)))
        for i, v in enumerate(obj):
            _walk(v, f"{path}[{i}]", out, model)
    elif isinstance(obj, np.ndarray):
        out.append((path, (str(obj.dtype), obj.tolist())))
    elif hasattr(obj, "Pack"):
        if type(obj).__name__ == "BufferT":
            index = int(path.rsplit("[", 1)[1][:-1])
            data = model.buffers[index].data
            out.append((path, None if data is None else bytes(data)))
            return
        for k, v in vars(obj).items():
            _walk(v, f"{path}.{k}", out, model)
    else:
        out.append((path, obj))


def tree_diff(a, b) -> list:
    if len(a) != len(b):
        return [("length", len(a), len(b))] + [x for x in zip(a, b) if x[0] != x[1]][:3]
    return [(x, y) for x, y in zip(a, b) if x != y]


def fixture_input(name: str) -> np.ndarray:
    return np.load(DATA / (name.rsplit(".", 1)[0] + ".input.npy"))


def run_litert(path, inputs) -> list[np.ndarray]:
    return litert.run(read_model(str(path)), inputs)


def build_recipe(name: str, tmp_path: Path, ext: str | None = None, directory: Path = RECIPES) -> Path:
    """Build recipe `name` of `directory` (recipes/, or TEST_RECIPES: models that are test inputs,
    outside the value suite) into `tmp_path`."""
    recipe = load_recipe(directory / f"{name}.toml")
    fmt = recipe_format(recipe)
    out = tmp_path / f"{name}{ext or fmt.extension}"
    from bnfold.io.atomic import save_model
    from bnfold.io.formats import format_from_extension

    target = format_from_extension(str(out))
    save_model(build(recipe, target), str(out), target)
    return out


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
