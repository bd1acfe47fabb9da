"""What the library's commands return: Optimized (optimize, optimize_file) with its report, whose
envelope is built here (what ran and folded, the operators before and after, the ignored options,
the times, a failed check's table) and read back for `inspect`; Inspection (inspect) and Ran (run).
They are plain classes: a dataclass costs every start ~1 ms of CPU (Python compiles its generated
methods) and importing dataclasses ~1.5 ms more (tests/test_layers.py)."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .engine.report import Report
from .errors import CheckFailed, UsageError
from .io.atomic import WriteInfo, save_model
from .io.formats import Format, format_from_extension, format_of
from .io.gcpause import paused_gc
from .io.paths import open_input, refuse_input_overwrite, refuse_unwritable
from .io.reader import read_model
from .ir.invariants import gate
from .ir.model import Model
from .selection import Selection
from .version import __version__

if TYPE_CHECKING:
    from .values.diff import CheckResult
    from .values.local import LocalResult


def refuse_model_write(model: Model, path: str, in_place: bool) -> None:
    """Refuse, as the CLI does, to write `model` over the file it was read from (unless
    `in_place`) or to a path that cannot be written (UsageError)."""
    source = getattr(model.source, "path", None)
    if source:
        refuse_input_overwrite(source, path, in_place)
    refuse_unwritable(path, UsageError, what="a model file")


# ---- the optimize report's envelope ----------------------------------------------------------


def optimize_report(
    path: str, label: str | None, model: Model, log: Report, before: dict, chosen: Selection, times: dict
) -> dict:
    """The report of one optimization of `path` (named `label` when given): what ran and folded,
    the operators before and after, the ignored options, the times."""
    return deferred_report(path, label, model, log, before, chosen, times)()


def deferred_report(
    path: str,
    label: str | None,
    model: Model,
    log: Report,
    before: dict,
    chosen: Selection,
    times: dict,
    check: dict | None = None,
) -> Callable[[], dict]:
    """optimize_report (with the `check` entry, if any), made when called: what it says of the
    input file and of the model is taken now (an in-place write replaces the file), the JSON-ready
    copy of what the passes did (Report.to_dict) then, with the collector paused (one dict per fold
    and skip: no garbage, and collections would walk the IR)."""
    size, after, seconds = os.path.getsize(path), dict(model.op_counts()), dict(times)

    def made() -> dict:
        with paused_gc():
            report = {
                "bnfold": __version__,
                "input": {"path": label or path, "format": model.format.name, "bytes": size},
                **log.to_dict(),
                "operators": {"before": before, "after": after},
                "ignored_options": chosen.not_implemented,
                "group_members_not_implemented": chosen.group_skipped,
                "seconds": {**{k: round(v, 6) for k, v in seconds.items()}, "total": round(sum(seconds.values()), 6)},
            }
        return report if check is None else {**report, "check": check}

    return made


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


def _record_save(report: dict, path: str, info: WriteInfo, seconds_taken: float) -> None:
    """`report` records the output file Optimized.save wrote and the time it took."""
    report["output"] = {
        "path": path,
        "format": info.format,
        "bytes": info.size,
        "layout": "offset buffers" if info.external else "standard",
        "unchanged": info.unchanged,
    }
    seconds = report["seconds"]
    seconds["write"] = round(seconds_taken, 6)
    seconds["total"] = round(sum(v for k, v in seconds.items() if k != "total"), 6)


class Optimized:
    """The optimized model and its report. Unpacks (and indexes) as `data, report`. The report may
    come as a function (deferred_report) that makes it when it is first asked for: the JSON-ready
    copy of 12k folds costs ~0.07 s, which `bnfold optimize -q` without --report never asks for.
    `lossy`: whether the report may hold a note on lossy passes (lossy_note needs no report then)."""

    def __init__(
        self,
        model: Model,
        report: dict | Callable[[], dict],
        check: CheckResult | LocalResult | None = None,
        *,
        lossy: bool = True,
    ):
        self.model, self._report, self._lossy = model, report, lossy
        self.check = check  # the CheckResult of `check=N`
        self.written: WriteInfo | None = None  # set by save(): what happened to the output file
        self._saved: tuple[str, WriteInfo, float] | None = None  # save()'s path, file and seconds
        self._data: bytes | None = None

    @property
    def report(self) -> dict:
        if callable(self._report):
            made = self._report()
            if self._saved is not None:
                _record_save(made, *self._saved)
            self._report = made
        return self._report

    def __repr__(self) -> str:
        r = self.report
        before, after = (sum(r["operators"][when].values()) for when in ("before", "after"))
        checked = "" if self.check is None else f", check {'passed' if self.check.passed else 'failed'}"
        folds = len(r["folds"])
        return (
            f"Optimized({r['input']['format']} {r['input']['path']!r}: {folds} fold{'s' * (folds != 1)}, "
            f"{before} -> {after} operators{checked})"
        )

    @property
    def data(self) -> bytes:
        """The optimized model as a file's bytes, in the input's format."""
        if self._data is None:
            from .io.writer import serialize  # only bytes asked for load the writer (a copied file does not)

            gate(self.model)  # the writer's last gate (save() passes it in io.atomic.save_model)
            out = io.BytesIO()
            serialize(self.model, out, format_of(self.model))
            self._data = out.getvalue()
        return self._data

    def __iter__(self):
        yield self.data
        yield self.report

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index):
        return (self.data, self.report)[index]

    def save(
        self,
        path: str | os.PathLike,
        *,
        fmt: Format | None = None,
        external: bool = False,
        keep_unchanged: bool = False,
        in_place: bool = False,
    ) -> WriteInfo:
        """Write to `path` (format from its extension unless `fmt`); the report records it. With
        `keep_unchanged`, a model no pass changed is kept as the input's bytes (io.atomic.save_model).
        Refused (UsageError) as `bnfold optimize` refuses it: the input file without `in_place`, a
        path that cannot be written (a missing directory, a read-only file)."""
        path = os.fspath(path)
        refuse_model_write(self.model, path, in_place)
        start = time.perf_counter()
        info = save_model(
            self.model, path, fmt or format_from_extension(path), external=external, keep_unchanged=keep_unchanged
        )
        self.written, self._saved = info, (path, info, time.perf_counter() - start)
        if isinstance(self._report, dict):  # else when the report is made
            _record_save(self._report, *self._saved)
        return info

    def to_json(self) -> str:
        import json  # only a report asked for needs it (~3 ms of a start)

        return json.dumps(self.report, indent=2)

    @property
    def lossy_note(self) -> dict | None:
        """The report's note on the error lossy passes caused, None when none changed the model."""
        if not self._lossy:
            return None  # no lossy pass changed the model: the report need not be made to say so
        return next((n for n in self.report["notes"] if "lossy_passes" in n), None)

    def pass_counts(self) -> dict[str, tuple[int, int]]:
        """Per pass that ran: (chains it folded, chains left in the output that it refused)."""
        from .engine.report import pass_counts

        return pass_counts(self.report)

    def node_data(self):
        """Model Explorer node data of the optimized model: what each operator absorbed, its
        rewrite's check error, why each candidate was left (bnfold.explorer; the [explorer] extra)."""
        from .explorer.node_data import output_node_data

        return output_node_data(self.report, self.model)

    def input_node_data(self, model: str | os.PathLike | Model | None = None):
        """Model Explorer node data of the input (`model`: its path or Model; by default the path
        this run read): what was folded away, into what, and what was left."""
        from .explorer.node_data import input_node_data

        if not isinstance(model, Model):
            model = read_model(os.fspath(model or self.report["input"]["path"]))
        return input_node_data(self.report, model)


class Inspection:
    """What `bnfold inspect` prints: the model, and with leftovers=True its batch-norm candidates
    (one dict each; `reason` from the report when one was given), the report's entries that
    name no candidate of this model, and its TRANSPOSEs (likewise). Without leftovers=True these
    three are None: not listed, which is not "none"."""

    def __init__(
        self,
        model: Model,
        candidates: list[dict] | None = None,
        unmatched: list[tuple] | None = None,
        transposes: list[dict] | None = None,
    ):
        self.model = model
        self.candidates = candidates
        self.unmatched = unmatched
        self.transposes = transposes  # every TRANSPOSE, where it sits (and why it stayed)

    def __repr__(self) -> str:
        operators = f"{self.model.format.name}, {sum(self.model.op_counts().values())} operators"
        if self.candidates is None or self.transposes is None:
            return f"Inspection({operators}; leftovers not listed: inspect(..., leftovers=True))"
        return f"Inspection({operators}, {len(self.candidates)} candidates, {len(self.transposes)} transposes)"


class Ran:
    """What `run` wrote: the output files, the input files (write_input), and the backend."""

    def __init__(self, outputs: list[str], inputs: list[str], backend: str):
        self.outputs, self.inputs, self.backend = outputs, inputs, backend

    def __repr__(self) -> str:
        return f"Ran(outputs={self.outputs!r}, inputs={self.inputs!r}, backend={self.backend!r})"
