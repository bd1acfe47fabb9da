"""`optimize --check`: the optimized model against the original, as a whole or rewrite by rewrite.

Modes: "whole" runs both models (on `backend`, values/backend.py); "local" checks each
rewrite on its own (values/local.py); "auto" is whole when a backend runs the models and local
otherwise, and says why. A whole check measures how much it proved per output (values/strength.py);
in "auto", the rewrites under an output that barely varied are then checked one by one as well,
since the whole comparison proved little about them. A failed check raises CheckFailed (with
`.result` for its table); a check that cannot be carried out raises CannotVerify (exit 4). Either
way nothing is written.
"""

from __future__ import annotations

from ..errors import CannotVerify
from ..ir.model import Model
from .diff import DEFAULT_ATOL, DEFAULT_RTOL, CheckResult, Tolerance, verify
from .local import LocalResult, verify_rewrites

# A fold into float16 weights rounds each weight once more to float16 (relative error <= 2^-11),
# and through a deep network those roundings add up: measured scaled errors 2.7e-4 on the
# project's float16 recipe, 6e-4 on keras ResNet50V2 and 3.7e-3 on keras NASNetMobile (float16
# quantization). The default allows 1e-2 of each output's largest magnitude, still well below what
# a wrong fold does (8.2e-2 for the lossy gamma rewrite, O(1) for a wrong axis); float32 folds
# stay below 5e-7 and keep float32's default.
FLOAT16_RTOL = 1e-2


def check_tolerance(folds: list[dict], rtol: float | None = None, atol: float | None = None) -> Tolerance:
    """The tolerance of --check: the user's where given; else the float32 default, or
    FLOAT16_RTOL when a fold rewrote float16 weights."""
    if rtol is None:
        rtol = FLOAT16_RTOL if any(f.get("float16_weights") for f in folds) else DEFAULT_RTOL
    return Tolerance(rtol, DEFAULT_ATOL if atol is None else atol)


def verify_optimized(
    original: Model,
    optimized: Model,
    samples: int,
    *,
    tolerance: Tolerance = Tolerance(),
    mode: str = "auto",
    backend: str = "auto",
    folds: list[dict] | None = None,
) -> tuple[CheckResult | LocalResult, dict]:
    """The passing check's result and its entry for the report (mode, backend, measured errors)."""
    why_local = None
    if mode != "local":
        try:
            result = verify(original, optimized, samples, tolerance=tolerance, backend=backend)
        except CannotVerify as e:
            if mode == "whole":
                raise
            why_local = str(e)
        else:
            note = {
                "mode": "whole",
                "backend": result.backend,
                "samples": result.samples,
                "scaled_err": result.worst.scaled,
                "max_abs_err": result.worst.max_abs,
                "outputs": [
                    {
                        "name": o.name,
                        "max_abs": o.max_abs,
                        "max_rel": o.max_rel,
                        "scaled_err": o.scaled,
                        "strength": s.as_note(),
                    }
                    for o, s in zip(result.outputs, result.strengths)
                ],
            }
            if mode == "auto":
                note.update(_under_weak_outputs(original, optimized, result, samples, tolerance, folds))
            return result, note
    result = verify_rewrites(original, optimized, samples, tolerance=tolerance, folds=folds)
    if why_local:
        result.backend += f" (no whole-model run: {why_local})"
    return result, {
        "mode": "local",
        "backend": result.backend,
        "why": why_local,
        "samples": samples,
        "scaled_err": result.worst.scaled,
        "max_abs_err": result.worst.max_abs,
        "rewrites": [r.as_note() for r in result.regions],
    }


def _under_weak_outputs(
    original: Model, optimized: Model, result: CheckResult, samples: int, tolerance: Tolerance, folds: list[dict] | None
) -> dict:
    """The per-rewrite check of the rewrites under the outputs the whole check proved little
    about, for the report ({} when every output varied); raises CheckFailed if one differs."""
    weak = {s.name for s in result.strengths if s.weak}
    if not weak:
        return {}
    entry = {"outputs": sorted(weak)}
    try:
        local = verify_rewrites(original, optimized, samples, tolerance=tolerance, folds=folds, under=weak)
    except CannotVerify as e:
        entry["checked"], entry["why"] = False, str(e)
    else:
        entry["checked"], entry["rewrites"] = True, [r.as_note() for r in local.regions]
    return {"weak_outputs": entry}
