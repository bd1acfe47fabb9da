"""The library entry points the CLI is built on: load, optimize, save."""

from __future__ import annotations

import os

from .errors import UsageError
from .io.formats import Format, format_from_extension
from .io.reader import read_model
from .io.writer import WriteInfo, save_model
from .ir.model import Model
from .passes import registry
from .passes.manager import Report, run_passes


def load(path: str) -> Model:
    return read_model(path)


def optimize(model: Model, passes: list[str] | None = None) -> Report:
    """Run `passes` (default set when None) over every subgraph to a fixpoint."""
    names = registry.default_passes() if passes is None else passes
    return run_passes(model, registry.resolve(names))


def save(model: Model, path: str, *, fmt: Format | None = None, external: bool = False) -> WriteInfo:
    return save_model(model, path, fmt or format_from_extension(path), external=external)


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def refuse_overwrite(input_path: str, output_path: str, in_place: bool) -> None:
    if not in_place and os.path.exists(output_path) and same_file(input_path, output_path):
        raise UsageError("output is the input file; pass --in-place to overwrite it", output_path)
