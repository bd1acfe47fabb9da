"""The optimize report's envelope: built for one run (what ran and folded, the operators before and
after, the ignored options, the times, a failed check's table), and read back for `inspect`."""

from __future__ import annotations

import os

from .engine.report import Report
from .errors import CheckFailed, UsageError
from .io.paths import open_input
from .ir.model import Model
from .selection import Selection
from .version import __version__


def optimize_report(
    path: str, label: str | None, model: Model, log: Report, before: dict, chosen: Selection, times: dict
) -> dict:
    """The report of one optimization of `path` (named `label` when given): what ran and folded,
    the operators before and after, the ignored options, the times."""
    return {
        "bnfold": __version__,
        "input": {"path": label or path, "format": model.format.name, "bytes": os.path.getsize(path)},
        **log.to_dict(),
        "operators": {"before": before, "after": dict(model.op_counts())},
        "ignored_options": chosen.not_implemented,
        "group_members_not_implemented": chosen.group_skipped,
        "seconds": {**{k: round(v, 6) for k, v in times.items()}, "total": round(sum(times.values()), 6)},
    }


def failed_check(error: CheckFailed) -> dict:
    """A failed check's entry for the report: its verdict and the table the command prints."""
    result = error.result
    assert result is not None  # raised by one value check (verify_optimized), which gives its result
    return {
        "passed": False,
        "verdict": str(error),
        "backend": result.backend,
        "samples": result.samples,
        "table": result.table().splitlines(),
    }


def read_report(path: str) -> dict:
    """An optimize report (JSON) read back, refused unless it has a list of skips."""
    import json  # only inspect's reports need it (~3 ms of a start)

    try:
        with open_input(path, "a report") as f:
            report = json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"not a JSON report: {str(e).splitlines()[0]}", path) from None
    skips = report.get("skips") if isinstance(report, dict) else None
    if not isinstance(skips, list) or not all(isinstance(s, dict) and isinstance(s.get("at"), dict) for s in skips):
        raise UsageError("not a bnfold optimize report (no list of skips)", path)
    return report
