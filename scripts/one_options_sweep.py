"""Issue 46's options over a directory of models: for each .tflite / .circle, bnfold.optimize with
every exact new ONE option (tests/test_fuzz.py ONE_OPTION_PASSES less the lossy
remove_gather_guard) and a 2-sample value check (auto: onert for Circle, else the next backend
that runs the model), one JSON line per model, then a summary (folds per pass, models changed,
the worst scaled error of a changed model).

    python scripts/one_options_sweep.py DIR[,DIR...] OUT.jsonl
"""

from __future__ import annotations

import collections
import json
import signal
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parents[1] / "tests")]

from bnfold import api  # noqa: E402
from bnfold.errors import BnfoldError  # noqa: E402
from test_fuzz import ONE_OPTION_PASSES  # noqa: E402

EXACT = ",".join(p for p in ONE_OPTION_PASSES.split(",") if p != "remove_gather_guard")
TIMEOUT = 120  # seconds per model


class Slow(Exception):
    pass


def _alarm(*_):
    raise Slow()


def sweep(dirs: list[Path], out) -> list[dict]:
    signal.signal(signal.SIGALRM, _alarm)
    rows = []
    for path in sorted(p for d in dirs for p in d.iterdir() if p.suffix in (".circle", ".tflite")):
        row: dict = {"model": path.name}
        started = time.time()
        signal.alarm(TIMEOUT)
        try:
            report = api.optimize(str(path), EXACT, check=2).report
            row["folds"] = dict(collections.Counter(f["pass"] for f in report["folds"]))
            check = report.get("check") or {}
            row["check"] = {k: check.get(k) for k in ("backend", "scaled_err", "max_abs_err", "passed")}
        except Slow:
            row["error"] = f"timeout {TIMEOUT} s"
        except BnfoldError as e:
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        finally:
            signal.alarm(0)
        row["seconds"] = round(time.time() - started, 2)
        out.write(json.dumps(row) + "\n")
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> str:
    folds: collections.Counter = collections.Counter()
    models: collections.Counter = collections.Counter()
    changed = [r for r in rows if r.get("folds")]
    for r in changed:
        for name, n in r["folds"].items():
            folds[name] += n
            models[name] += 1
    failed = [r["model"] for r in changed if not r["check"].get("passed")]
    worst = max(changed, key=lambda r: r["check"].get("scaled_err") or 0.0, default=None)
    lines = [
        f"{len(rows)} models, {len(changed)} changed, {len(failed)} changed and not within tolerance, "
        f"{sum('error' in r for r in rows)} errors",
        f"worst scaled error of a changed model: {worst['check']['scaled_err']:.3g} ({worst['model']})"
        if worst
        else "",
    ]
    lines += [f"| `{name}` | {folds[name]} | {models[name]} |" for name in sorted(folds)]
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[2], "w") as out:
        print(summary(sweep([Path(d) for d in sys.argv[1].split(",")], out)))
