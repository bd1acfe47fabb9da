"""What `bnfold optimize --out-dir` shows: click's progress bar on stderr while it runs, driven
by the batch's events (batch.optimize_many's `on_event`), then the failures and the table.

    optimizing  [##########--------------]  14/33  00:00:02  0:05 elapsed, face/blaze.tflite: passes

Models done of the total, the remaining time (click's estimate, once a model has finished),
the time since the start, and the model being worked on with its step (reading, passes, check,
writing), so a single long model is not silence. The command shows it only when stderr is a
terminal and -q is not given.

`check` and `run` show the same for one model (StepLine): one line on stderr saying what they
do (reading a model, sample 2 of 10) and for how long, erased when they end.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar  # what click.progressbar() returns

from . import batch, text
from .errors import Finished, UsageError


def optimize_many(paths, out_dir, chosen, quiet: bool, one_model_options: tuple, **keywords) -> int:
    """`optimize --out-dir`: batch.optimize_many with the bar on stderr when stderr is a terminal
    and not `quiet`, then each failure's line (stderr) and, unless `quiet`, the table (stdout).
    Returns the run's exit status. `one_model_options` (-i, -o, --in-place, --node-data*) are refused."""
    if any(one_model_options):
        raise UsageError("-i, -o, --in-place and --node-data* are for one model; --out-dir takes PATH...")
    show = BatchProgress(sys.stderr) if not quiet and sys.stderr.isatty() else None
    with show or contextlib.nullcontext():
        many = batch.optimize_many(paths, out_dir, chosen, on_event=show, **keywords)
    for written in [m.output for m in many.models if m.status != "failed"]:
        Finished.note(written)  # the workers wrote them: a failed stdout then says they are complete
    for line in text.batch_problems(many):
        click.echo(line, err=True)
    for line in [] if quiet else text.batch_table(many.totals()):
        click.echo(line)
    return many.exit_code


class BatchProgress:
    def __init__(self, file):
        self.file = file
        self.start = time.monotonic()
        self.running: dict[int, list[str]] = {}  # job index -> [input path, step], in start order
        self.bar: ProgressBar[int] | None = None  # from the "begin" event on

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def __call__(self, kind: str, index: int, what) -> None:
        """One batch event: the models are known ("begin", their count), one started ("start",
        its Job), made a step ("step", its name) or finished ("done", its result)."""
        if kind == "begin":
            self.bar = click.progressbar(
                length=index,
                label="optimizing",
                file=self.file,
                show_pos=True,
                show_eta=True,
                item_show_func=self._describe,
            ).__enter__()
            return
        done = 0
        if kind == "start":
            self.running[index] = [what.input, "reading"]
        elif kind == "step":
            self.running[index][1] = what
        else:
            self.running.pop(index, None)
            done = 1
        assert self.bar is not None, "a batch's first event is begin"
        self.bar.update(done, index)
        if not done:  # click draws on completed steps only; a model's own steps are news too
            self.bar.render_progress()

    def _describe(self, _item) -> str:
        seconds = int(time.monotonic() - self.start)
        text = f"{seconds // 60}:{seconds % 60:02} elapsed"
        if self.running:
            path, step = next(reversed(self.running.values()))
            more = f" (+{len(self.running) - 1} more)" if len(self.running) > 1 else ""
            text += f", {_short(path)}: {step}{more}"
        return text


def _short(path: str, width: int = 40) -> str:
    return path if len(path) <= width else "..." + path[-(width - 3) :]


class StepLine:
    """`check`'s and `run`'s status line: on a terminal's stderr (and without -q) each step the
    library announces (value_commands' `progress`) replaces the last, with the time since the
    start, so a 100 MB model read and run is not 10 s of silence; erased when the command ends,
    failure or not. Elsewhere it prints nothing."""

    def __init__(self, quiet: bool):
        self.file = sys.stderr if not quiet and sys.stderr.isatty() else None
        self.start, self.shown = time.monotonic(), False

    def __call__(self, step: str) -> None:
        if self.file is None:
            return
        seconds = int(time.monotonic() - self.start)
        self.file.write(f"\r\x1b[Kbnfold: {step} ({seconds // 60}:{seconds % 60:02} elapsed)")
        self.file.flush()
        self.shown = True

    def __enter__(self) -> StepLine:
        return self

    def __exit__(self, *exc) -> None:
        if self.file is not None and self.shown:
            self.file.write("\r\x1b[K")  # the line goes; what the command prints next starts clean
            self.file.flush()
