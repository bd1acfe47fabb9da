"""The library entry points the CLI is built on: load, optimize, save."""

from __future__ import annotations

import os

from .errors import UsageError
from .io.formats import Format, format_from_extension
from .io.paths import refuse_input_overwrite
from .io.reader import read_model
from .io.writer import WriteInfo, save_model
from .ir.model import Model
from .passes import registry
from .passes.manager import run_passes
from .passes.report import Report


def load(path: str) -> Model:
    return read_model(path)


def optimize(model: Model, passes: list[str] | None = None) -> Report:
    """Run `passes` (default set when None) over every subgraph to a fixpoint."""
    names = registry.default_passes() if passes is None else passes
    return run_passes(model, registry.resolve(names))


LOSSY_SAMPLES = 3


def measure_lossy(reference: Model | str, optimized: Model, report: Report, *, samples: int = LOSSY_SAMPLES) -> dict | None:
    """When a lossy pass changed the model: its output error against `reference` (a model, or a
    path read only then, so the common case never reads the input twice) on `samples`
    random inputs (normal(0, 2), seed 0; LiteRT, else the reference interpreter), added to the
    report as a note and returned. None when no lossy pass changed anything."""
    exact = {p.name: p.exact for p in registry.PASSES}
    names = sorted({f["pass"] for f in report.folds if not exact.get(f["pass"], True)})
    if not names:
        return None
    from .check.diff import check_models
    from .errors import BnfoldError

    if isinstance(reference, str):
        reference = load(reference)

    note = {"lossy_passes": names, "samples": samples, "inputs": "normal(0, 2), seed 0"}
    try:
        result = check_models(reference, optimized, samples=samples, seed=0)
    except BnfoldError as e:
        note.update(measured=False, reason=str(e))
    else:
        note.update(measured=True, backend=result.backend,
                    max_abs=max((o.max_abs for o in result.outputs), default=0.0),
                    max_rel=max((o.max_rel for o in result.outputs), default=0.0), scaled_err=result.worst.scaled,
                    outputs=[{"name": o.name, "max_abs": o.max_abs, "max_rel": o.max_rel, "scaled_err": o.scaled}
                             for o in result.outputs])
    report.notes.append({"pass": ",".join(names), "note": "lossy passes changed the model; measured output error", **note})
    return note


def describe_lossy(note: dict) -> str:
    what = ", ".join(note["lossy_passes"])
    if not note.get("measured"):
        return f"warning: {what} changed the model (LOSSY); the error could not be measured: {note['reason']}"
    return (f"warning: {what} changed the model (LOSSY): max abs err {note['max_abs']:.3e}, max rel err "
            f"{note['max_rel']:.3e}, scaled err {note['scaled_err']:.3e} over {note['samples']} random input(s) "
            f"on {note['backend']}")


def save(model: Model, path: str, *, fmt: Format | None = None, external: bool = False,
         keep_unchanged: bool = False) -> WriteInfo:
    """Write `model`; with `keep_unchanged`, a model nothing changed is kept as the input's bytes
    (see io.writer.save_model)."""
    return save_model(model, path, fmt or format_from_extension(path), external=external, keep_unchanged=keep_unchanged)


def refuse_overwrite(input_path: str, output_path: str, in_place: bool) -> None:
    refuse_input_overwrite(input_path, output_path, in_place)


def check_output_path(path: str, *, model: bool = True) -> None:
    """Refuse, before any work, an output path that cannot be written: a directory, a missing
    directory, or one the user may not write in. (`model`: the path must then be a model file.)"""
    what = "a model file" if model else "a file"
    if os.path.isdir(path):
        raise UsageError(f"is a directory; give the path of {what} to write", path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        missing = "does not exist" if not os.path.exists(directory) else "is not a directory"
        raise UsageError(f"output directory {directory} {missing}", path)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write in {directory}: permission denied", path)
