"""bnfold as a library: `bnfold.optimize(model, passes=..., check=...)`.

    import bnfold
    result = bnfold.optimize("model.tflite")                          # the default passes
    result = bnfold.optimize(data, fuse_batchnorm_with_conv=True)     # bytes; one-optimize's keywords
    result = bnfold.optimize("model.circle", O1=True, check=3)        # ONE's O1 group, value-checked
    data, report = result                                             # optimized bytes, report dict
    result.save("model.opt.circle")

The model is a path or the bytes of a .tflite/.circle file. The passes are chosen as on the
command line (selection.py): `passes` names them ("a,b" or a list), keywords switch them on or
off by their ONE names, nothing named runs the default set. `check=N` runs the original and the
optimized model on N random samples (`check_mode`, `rtol`, `atol` as `optimize --check-mode/--rtol/
--atol`) and raises CheckFailed (nothing is returned) if any output differs beyond tolerance, or
CannotVerify if the check cannot be carried out. The report is a plain dict (JSON-ready): what ran, what folded, what
was refused and why, operator counts before and after, and the time each step took.

The `optimize` command is this function plus printing and writing the file.
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from . import __version__, api
from .io.formats import Format, format_from_extension
from .io.writer import WriteInfo, serialize
from .ir.model import Model
from .selection import Selection, select


@dataclass
class Optimized:
    """The optimized model and its report. Unpacks as `data, report`."""

    model: Model
    report: dict
    check: object | None = None  # the CheckResult of `check=N`
    _data: bytes | None = None

    @property
    def data(self) -> bytes:
        """The optimized model as a file's bytes, in the input's format."""
        if self._data is None:
            out = io.BytesIO()
            serialize(self.model, out, self.model.format)
            self._data = out.getvalue()
        return self._data

    def __iter__(self):
        yield self.data
        yield self.report

    def save(self, path: str, *, fmt: Format | None = None, external: bool = False, keep_unchanged: bool = False) -> WriteInfo:
        """Write to `path` (format from its extension unless `fmt`); the report records it. With
        `keep_unchanged`, a model no pass changed is kept as the input's bytes (io.writer.save_model)."""
        start = time.perf_counter()
        info = api.save(self.model, path, fmt=fmt or format_from_extension(path), external=external,
                        keep_unchanged=keep_unchanged)
        self.report["output"] = {"path": path, "format": info.format, "bytes": info.size,
                                 "layout": "offset buffers" if info.external else "standard",
                                 "unchanged": info.unchanged}
        seconds = self.report["seconds"]
        seconds["write"] = round(time.perf_counter() - start, 6)
        seconds["total"] = round(sum(v for k, v in seconds.items() if k != "total"), 6)
        return info

    def to_json(self) -> str:
        return json.dumps(self.report, indent=2)


def optimize(model: str | os.PathLike | bytes | bytearray | memoryview, passes: str | Iterable[str] | None = None,
             *, check: int = 0, check_mode: str = "auto", rtol: float | None = None, atol: float | None = None,
             strict: bool = False, **options: bool) -> Optimized:
    """Optimize `model` (a path or a file's bytes). See the module docstring."""
    chosen = select(passes, options, default=not options, strict=strict)
    checking = {"check": check, "check_mode": check_mode, "rtol": rtol, "atol": atol}
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _from_bytes(bytes(model), chosen, checking)
    return run(os.fspath(model), chosen, **checking)


def run(path: str, chosen: Selection, *, check: int = 0, label: str | None = None, rtol: float | None = None,
        atol: float | None = None, check_mode: str = "auto") -> Optimized:
    """Read `path`, run the chosen passes, optionally value-check (check/verify.py: `check_mode`,
    tolerance `rtol`/`atol` or the default for what the folds rounded); `label` names the input
    in the report."""
    times = {}
    start = time.perf_counter()
    model = api.load(path)
    times["read"] = time.perf_counter() - start
    before = dict(model.op_counts())
    start = time.perf_counter()
    log = api.optimize(model, chosen.passes)
    times["passes"] = time.perf_counter() - start
    api.measure_lossy(path, model, log)
    checked = None
    if check:
        from .check.verify import check_tolerance, verify_optimized

        start = time.perf_counter()
        tolerance = check_tolerance(log.folds, rtol, atol)
        checked, check_note = verify_optimized(api.load(path), model, check, tolerance=tolerance, mode=check_mode,
                                               folds=log.folds)
        times["check"] = time.perf_counter() - start
    report = {
        "bnfold": __version__,
        "input": {"path": label or path, "format": model.format.name, "bytes": os.path.getsize(path)},
        **log.to_dict(),
        "operators": {"before": before, "after": dict(model.op_counts())},
        "ignored_options": chosen.not_implemented,
        "group_members_not_implemented": chosen.group_skipped,
        "seconds": {**{k: round(v, 6) for k, v in times.items()}, "total": round(sum(times.values()), 6)},
    }
    if checked is not None:
        report["check"] = {"rtol": tolerance.rtol, "atol": tolerance.atol, "passed": checked.passed, **check_note}
    return Optimized(model, report, checked)


def _from_bytes(data: bytes, chosen: Selection, checking: dict) -> Optimized:
    """The reader maps a file, so the bytes go to a temporary file first; the mapping outlives
    the file's name (unlinked at once), and unchanged buffers are copied from it as usual."""
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="bnfold-", suffix=".model", delete=False) as f:
        f.write(data)
    try:
        return run(f.name, chosen, label="<bytes>", **checking)
    finally:
        os.unlink(f.name)
