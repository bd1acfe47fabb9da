"""The measured error of lossy passes: what a run that changed the model inexactly reports.

A lossy pass (registry: exact=False, always opt-in) changes the function the model computes. Its
error is not proved small; it is measured, on a few random inputs, against the model as read, and
recorded in the report's notes (and printed), so nobody ships it unaware.

What is measured is handed in as data (the lossy passes that changed the model, the reference
and the optimized model): the proof does not import what it proves (engine/, passes/).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import BnfoldError
from ..ir.model import Model

SAMPLES = 3  # random inputs: normal(0, 2), seed 0


def measure_lossy(
    reference: Callable[[], Model], optimized: Model, lossy_passes: list[str], *, samples: int = SAMPLES
) -> dict | None:
    """When `lossy_passes` (the lossy passes that changed the model) is not empty: the output
    error against `reference()` (called only then, so the common case never reads the input
    twice) on `samples` random inputs (LiteRT, else the reference interpreter), as the report's
    note. None when no lossy pass changed anything."""
    if not lossy_passes:
        return None
    from .diff import check_models

    note = {
        "pass": ",".join(lossy_passes),
        "note": "lossy passes changed the model; measured output error",
        "lossy_passes": list(lossy_passes),
        "samples": samples,
        "inputs": "normal(0, 2), seed 0",
    }
    try:
        result = check_models(reference(), optimized, samples=samples, seed=0)
    except BnfoldError as e:
        note.update(measured=False, reason=str(e))
    else:
        note.update(
            measured=True,
            backend=result.backend,
            max_abs=max((o.max_abs for o in result.outputs), default=0.0),
            max_rel=max((o.max_rel for o in result.outputs), default=0.0),
            scaled_err=result.worst.scaled,
            outputs=[
                {"name": o.name, "max_abs": o.max_abs, "max_rel": o.max_rel, "scaled_err": o.scaled}
                for o in result.outputs
            ],
        )
    return note
