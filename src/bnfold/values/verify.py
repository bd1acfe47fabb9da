"""`optimize --check`: the optimized model against the original, as a whole or rewrite by rewrite.

Modes: "whole" runs both models (on `backend`, values/backend.py); "local" checks each
rewrite on its own (values/local.py); "auto" is whole when a backend runs the models and local
otherwise, and says why. A whole check measures how much it proved per output (values/strength.py);
in "auto", the rewrites under an output that barely varied are then checked one by one as well,
since the whole comparison proved little about them. A failed check raises CheckFailed (with
`.result` for its table); a check that cannot be carried out raises CannotVerify (exit 4). Either
way nothing is written.

A difference at a weak output is judged where the rewrites are (`settle_weak`). A saturated
sigmoid, an argmax, a threshold amplify the float rounding of everything before them by their
steepness: tests/data/recipes/Weak_Outputs_000's sigmoid of 1000x has gain 250 at 0, so an exact fold whose
batch norm differs from the unfolded one by 2 ulp (5.2e-7 at seed 1) moves an element on the
slope by 2.6e-5, over the 2e-5 the criterion allows, while the unfolded model's own float32 error
there (against float64) is 4e-5 at seed 6. No tolerance at that output separates rounding from a
defect, so none is loosened: the rewrites under it are checked one by one, on the tensors they
produce, with the same tolerance. When every one passes and proved something (full strength), the
difference is rounding amplified downstream and the output's row says so (`ok (by rewrite)`);
otherwise, or when no rewrite lies under it, the failure stands.
"""

from __future__ import annotations

from ..errors import BnfoldError, CannotVerify, CheckFailed
from ..ir.model import Model
from .diff import DEFAULT_ATOL, DEFAULT_RTOL, CheckResult, Tolerance, check_models
from .local import LocalResult, check_rewrites, verify_rewrites

# A fold into float16 weights rounds each weight once more to float16 (relative error <= 2^-11),
# and through a deep network those roundings add up: measured scaled errors 2.7e-4 on the
# project's float16 recipe, 6e-4 on keras ResNet50V2 and 3.7e-3 on keras NASNetMobile (float16
# quantization). The default allows 1e-2 of each output's largest magnitude, still well below what
# a wrong fold does (8.2e-2 for the lossy gamma rewrite, O(1) for a wrong axis); float32 folds
# stay below 5e-7 and keep float32's default.
FLOAT16_RTOL = 1e-2
DEFAULT_TOLERANCE = Tolerance()


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
    tolerance: Tolerance = DEFAULT_TOLERANCE,
    mode: str = "auto",
    backend: str = "auto",
    folds: list[dict] | None = None,
    seed: int = 0,
) -> tuple[CheckResult | LocalResult, dict]:
    """The passing check's result and its entry for the report (mode, backend, measured errors);
    the random samples come from `seed`, as `check`'s and `recipe test`'s do."""
    why_local = None
    if mode != "local":
        try:
            result = check_models(original, optimized, samples=samples, seed=seed, tolerance=tolerance, backend=backend)
            settled = settle_weak(original, optimized, result, samples, folds) if mode == "auto" else None
            if not result.passed:
                error = CheckFailed(result.failure_message())
                error.result = result
                raise error
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
            if settled:
                note["settled_by_rewrite"] = [r.as_note() for r in settled.regions]
            if mode == "auto":
                note.update(_under_weak_outputs(original, optimized, result, samples, tolerance, folds))
            return result, note
    local = verify_rewrites(original, optimized, samples, tolerance=tolerance, folds=folds)
    if why_local:
        local.backend += f" (no whole-model run: {why_local})"
    return local, {
        "mode": "local",
        "backend": local.backend,
        "why": why_local,
        "samples": samples,
        "scaled_err": local.worst.scaled,
        "max_abs_err": local.worst.max_abs,
        "rewrites": [r.as_note() for r in local.regions],
    }


def _under_weak_outputs(
    original: Model, optimized: Model, result: CheckResult, samples: int, tolerance: Tolerance, folds: list[dict] | None
) -> dict:
    """The per-rewrite check of the rewrites under the outputs the whole check proved little
    about, for the report ({} when every output varied); raises CheckFailed if one differs."""
    weak = {s.name for s in result.strengths if s.weak}
    if not weak:
        return {}
    entry: dict[str, object] = {"outputs": sorted(weak)}
    try:
        local = verify_rewrites(original, optimized, samples, tolerance=tolerance, folds=folds, under=weak)
    except CannotVerify as e:
        entry["checked"], entry["why"] = False, str(e)
    else:
        entry["checked"], entry["rewrites"] = True, [r.as_note() for r in local.regions]
    return {"weak_outputs": entry}


def settle_weak(
    original: Model, optimized: Model, result: CheckResult, samples: int, folds: list[dict] | None = None
) -> LocalResult | None:
    """Judge the differences at weak outputs by the rewrites under them (module docstring): when
    each rewrite under those outputs passes the per-rewrite check with full strength, mark the
    outputs passed (`settled`) and return that check; else leave `result` as it is, None."""
    failing = {o.name for o, s in zip(result.outputs, result.strengths) if not o.passed and not o.problem and s.weak}
    if not failing or len(failing) < len(result.failing):
        return None  # nothing to settle, or a full-strength output differs: the verdict stands
    try:
        local = check_rewrites(
            original, optimized, samples=max(samples, 2), tolerance=result.tolerance, folds=folds, under=failing
        )
    except BnfoldError:  # the rewrites cannot be matched or run: the whole check's verdict stands
        return None
    proved = local.regions and local.passed and not any(s.weak for r in local.regions for s in r.strengths)
    if not proved:
        return None
    for o in result.outputs:
        if o.name in failing:
            o.passed = True
            o.settled = (
                f"differs by {o.scaled:.2e} of its largest value; the {len(local.regions)} rewrite(s) under it, "
                "checked one by one, agree: float rounding amplified by a steep or discrete output"
            )
    return local
