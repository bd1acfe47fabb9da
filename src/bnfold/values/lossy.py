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
        steps = {o.name: _in_steps(optimized, o.name, o.max_abs) for o in result.outputs}
        note.update(
            measured=True,
            backend=result.backend,
            max_abs=max((o.max_abs for o in result.outputs), default=0.0),
            max_rel=max((o.max_rel for o in result.outputs), default=0.0),
            scaled_err=result.worst.scaled,
            outputs=[
                {
                    "name": o.name,
                    "max_abs": o.max_abs,
                    "max_rel": o.max_rel,
                    "scaled_err": o.scaled,
                    **({} if steps[o.name] is None else {"steps": steps[o.name]}),
                }
                for o in result.outputs
            ],
        )
        known = [v for v in steps.values() if v is not None]
        if known:
            note["max_steps"] = max(known)
    return note


def _in_steps(model: Model, name: str, max_abs: float) -> float | None:
    """`max_abs` at output `name` in the output's quantization steps: an integer output's error is
    already counted in steps (its scale's units); a float output a DEQUANTIZE of per-tensor
    integers makes is divided by their scale. None for other outputs."""
    graph = model.graphs[0]
    t = next((t for t in graph.outputs if t.name == name), None)
    if t is None:
        return None
    scale = getattr(t.quantization, "scale", None)
    if t.dtype in ("INT8", "UINT8", "INT16") and scale is not None and len(scale) == 1:
        return max_abs
    source = t.producer.inputs[0] if t.producer is not None and t.producer.kind == "DEQUANTIZE" else None
    scale = getattr(source.quantization, "scale", None) if source is not None else None
    if scale is not None and len(scale) == 1 and float(scale[0]) > 0:
        return max_abs / float(scale[0])
    return None
