"""The library's arguments, refused as the command line refuses them (UsageError, exit 2):
sample counts, seeds, tolerances, backends, the pass selection and optimize's check options."""

from __future__ import annotations

import math
import os

from .check_names import BACKENDS, CHECK_MODES
from .errors import UsageError
from .selection import Selection, select

MAX_SAMPLES = 100_000  # check/run samples and optimize --check: bounds the work, not the memory (samples stream)
MAX_SEED = 2**32 - 1


def selection(passes, options: dict, strict: bool) -> Selection:
    if isinstance(passes, Selection):
        if options:
            raise UsageError("give the passes as a Selection or as names and options, not both")
        return passes
    return select(passes, options, default=True, strict=strict)  # select: any pass named replaces the default set


def checking(check, check_mode: str, rtol, atol, check_seed=0, check_backend: str = "auto") -> dict:
    """optimize's check arguments, refused as the CLI refuses them."""
    if check is not None:
        check = count(check, "check")
    if check_mode not in CHECK_MODES:
        raise UsageError(f"check_mode must be one of {', '.join(CHECK_MODES)}, not {check_mode!r}")
    check_seed = seed(check_seed)
    if check is None and (
        check_mode != "auto" or rtol is not None or atol is not None or check_seed or check_backend != "auto"
    ):
        raise UsageError(
            "--check-mode, --backend, --rtol, --atol and --seed go with --check N (check=N): without it nothing is "
            "checked"
        )
    return {
        "check": check,
        "check_mode": check_mode,
        "rtol": tolerance(rtol, "rtol"),
        "atol": tolerance(atol, "atol"),
        "check_seed": check_seed,
        "check_backend": backend(check_backend),
    }


def count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAMPLES:
        raise UsageError(f"{name} must be a whole number of samples in 1..{MAX_SAMPLES}, not {value!r}")
    return value


def seed(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise UsageError(f"seed must be a whole number in 0..{MAX_SEED}, not {value!r}")
    return value


def random_sampling(inputs, samples, seed_value) -> tuple[int, int]:
    """`samples` and `seed` (None: 1 and 0) shape random inputs; with input files, which are the
    samples, either one given would be ignored, so it is refused rather than dropped silently."""
    given = [name for name, value in (("samples", samples), ("seed", seed_value)) if value is not None]
    if inputs and given:
        raise sampling_refused(given, "input files")
    return count(1 if samples is None else samples, "samples"), seed(0 if seed_value is None else seed_value)


def sampling_refused(given: list[str], files: str) -> UsageError:
    """The refusal of sampling options (`given`, as the caller names them) beside input `files`."""
    return UsageError(
        f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for random inputs; the {files} are "
        "the samples (one per file, or a record-minmax file's records)"
    )


def tolerance(value, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise UsageError(f"{name} must be a finite number >= 0, not {value!r}")
    return float(value)


def target(value: str | None) -> str | None:
    """optimize's target runtime (None: from the output's format, else the input's)."""
    from .engine.targets import TARGETS

    if value is not None and value not in TARGETS:
        raise UsageError(f"target must be one of {', '.join(TARGETS)}, not {value!r}")
    return value


def tolerance_or(value, name: str, default: float) -> float:
    """A tolerance where None means `default` (check, h5diff); optimize's None means the one its
    folds call for (values/verify.py: check_tolerance)."""
    given = tolerance(value, name)
    return default if given is None else given


def paths(value) -> list[str]:
    """h5 files: one path, or an iterable of them (a bare string is one path, not its letters)."""
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    try:
        return [os.fspath(p) for p in value]
    except TypeError:
        raise UsageError(f"expected a path or a list of paths, not {value!r}"[:200]) from None


def backend(value: str) -> str:
    if value not in BACKENDS:
        raise UsageError(f"backend must be one of {', '.join(BACKENDS)}, not {value!r}")
    if value == "onert":
        from .values.onert import missing

        if missing():
            raise UsageError(f"--backend onert: {missing()}")
    return value
