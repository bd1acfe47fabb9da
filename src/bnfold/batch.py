"""Many models in one run: `bnfold optimize --out-dir DIR [-j N] [--shard K/N] PATH...` and
`bnfold.optimize_many(paths, out_dir, jobs=..., shard=...)` (bnfold/__init__.py takes it from
here). It is built on api.py, which does not import it.

    PATH... --collect--> jobs (input, output) --shard K/N--> 1/N of them --pool--> ModelResult per job

Each job is exactly one api.optimize_file (`optimize_one`), so an output has the bytes
`bnfold optimize IN OUT` writes for it. The jobs run in `jobs` worker processes (forked, so none
pays Python's start-up again) that take the next job as they finish one; results come back in
input order. A model that fails becomes its own one-line error and the
rest go on; the run's exit code is the worst of the models' (EXIT_PRECEDENCE).

Stopping: Ctrl-C or SIGTERM reaches the parent, which sends SIGTERM to every worker. A worker
that is writing removes its temporary file (io/atomic.py turns SIGTERM into Interrupted there);
one that is not dies at once (workers ignore SIGINT and keep SIGTERM's default otherwise). The
parent then waits for them and removes what a worker killed harder may have left.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from typing import NamedTuple

from . import api, arguments
from .errors import EXIT_PRECEDENCE, BnfoldError, Interrupted, UsageError, WriteFailed
from .io.atomic import reason
from .io.paths import refuse_unwritable, same_file
from .selection import Selection

MODEL_SUFFIXES = (".tflite", ".circle")


class Job(NamedTuple):
    input: str
    output: str


class ModelResult(NamedTuple):
    """One model of a batch: `status` is "changed", "unchanged" or "failed" (then `error` is its
    one-line message and `exit_code` what `bnfold optimize` would have exited with; `report` is
    there for a failed check, as `optimize --report` writes it then)."""

    input: str
    output: str
    status: str
    exit_code: int = 0
    error: str | None = None
    report: dict | None = None
    seconds: float = 0.0

    def entry(self) -> dict:
        return {
            "input": self.input,
            "output": self.output,
            "status": self.status,
            "exit_code": self.exit_code,
            "error": self.error,
            "seconds": round(self.seconds, 6),
            "report": self.report,
        }


class BatchResult(NamedTuple):
    """Every model's result in input order, and what the run as a whole comes to."""

    models: list[ModelResult]
    out_dir: str
    jobs: int
    shard: tuple[int, int] | None = None
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        codes = {m.exit_code for m in self.models}
        return next((code for code in EXIT_PRECEDENCE if code in codes), 0)

    def totals(self) -> dict:
        done = [m.report for m in self.models if m.report is not None and m.status != "failed"]  # written models only
        count = {
            status: sum(1 for m in self.models if m.status == status) for status in ("changed", "unchanged", "failed")
        }
        return {
            "models": len(self.models),
            **count,
            "operators": {
                "before": sum(sum(report["operators"]["before"].values()) for report in done),
                "after": sum(sum(report["operators"]["after"].values()) for report in done),
            },
            "folds": sum(len(report["folds"]) for report in done),
            "seconds": round(self.seconds, 6),
        }

    def to_dict(self) -> dict:
        from .version import __version__

        shard = None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}"
        return {
            "bnfold": __version__,
            "out_dir": self.out_dir,
            "jobs": self.jobs,
            "shard": shard,
            "exit_code": self.exit_code,
            "totals": self.totals(),
            "models": [m.entry() for m in self.models],
        }

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), indent=2)


# ---- which models --------------------------------------------------------------------------


def collect(paths: Iterable[str | os.PathLike], out_dir: str) -> list[Job]:
    """Every model PATH names: a file as itself, a directory walked (sorted) for *.tflite and
    *.circle; its output is `out_dir` joined with its path relative to its PATH (a file's: its
    name). `out_dir` is never walked. Two inputs that would land on one output, or an output
    that is its own input, are refused."""
    jobs: list[Job] = []
    seen: dict[str, Job] = {}  # normalized output -> the job that writes it
    skip = os.path.realpath(out_dir)
    for path in (os.fspath(p) for p in paths):
        if os.path.isdir(path):
            found = list(_walk(path, skip))
            if not found:
                raise UsageError(f"no {' or '.join('*' + s for s in MODEL_SUFFIXES)} files in this directory", path)
        elif os.path.lexists(path):
            found = [(path, os.path.basename(path))]
        else:
            raise UsageError("no such file or directory", path)
        for source, relative in found:
            job = Job(source, os.path.join(out_dir, relative))
            if same_file(job.input, job.output):
                raise UsageError(f"--out-dir {out_dir} would replace the input itself; give another directory", source)
            other = seen.setdefault(os.path.normpath(job.output), job)
            if other.input == job.input:
                if other is job:
                    jobs.append(job)
                continue
            raise UsageError(f"{other.input} and {job.input} would both be written to {job.output}")
    return jobs


def _walk(top: str, skip: str):
    for directory, subdirectories, files in os.walk(top):
        subdirectories[:] = sorted(d for d in subdirectories if os.path.realpath(os.path.join(directory, d)) != skip)
        for name in sorted(files):
            if name.lower().endswith(MODEL_SUFFIXES):
                path = os.path.join(directory, name)
                yield path, os.path.relpath(path, top)


def parse_shard(text: str) -> tuple[int, int]:
    """ "K/N" (1 <= K <= N) -> (K, N)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: give K/N, e.g. 2/4 for the second of four shards") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard {text!r}: K must be 1..N")
    return k, n


def take_shard(jobs: list[Job], shard: tuple[int, int] | None) -> list[Job]:
    """Shard K of N: every N-th job of the sorted collection from the K-th on. The N shards
    together are the collection, each model in exactly one; their sizes differ by at most one."""
    if shard is None:
        return jobs
    k, n = shard
    return jobs[k - 1 :: n]


def default_jobs() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ---- one model -----------------------------------------------------------------------------


class Settings(NamedTuple):
    """What every model of the run is optimized with (a single optimize's options)."""

    chosen: Selection
    external_buffers: bool
    checking: dict
    run_files: tuple[str, ...]
    target: str | None = None  # None: each output's format's runtime


def optimize_one(job: Job, settings: Settings, on_step: Callable[[str], None] = lambda step: None) -> ModelResult:
    """`bnfold optimize job.input job.output` with the run's settings; every error becomes the
    result's one line and exit code, as the command would print and exit with."""
    gc.collect()  # the last model's graph is cyclic: free it before this one is read (memory: one model at a time)
    start = time.perf_counter()

    def failed(code: int, error: str, report: dict | None = None) -> ModelResult:
        seconds = time.perf_counter() - start
        return ModelResult(job.input, job.output, "failed", code, _one_line(error), report=report, seconds=seconds)

    try:
        os.makedirs(os.path.dirname(job.output) or ".", exist_ok=True)
    except OSError as e:  # as a single optimize would answer: a refusal (exit 2), else a failed write (5)
        try:
            refuse_unwritable(job.output, what="a model file")
        except UsageError as refusal:
            return failed(refusal.exit_code, str(refusal))
        return failed(WriteFailed.exit_code, f"{job.output}: cannot create its directory: {reason(e)}")
    try:
        result = api.optimize_file(
            job.input,
            job.output,
            settings.chosen,
            external_buffers=settings.external_buffers,
            run_files=settings.run_files,
            progress=on_step,
            target=settings.target,
            **settings.checking,
        )
    except BnfoldError as e:  # a failed check's report (its table and verdict) goes into the run's report
        named = str(e) if e.path else f"{job.input}: {e}"  # a failed check names no file of its own
        return failed(e.exit_code, named, getattr(e, "report", None))
    except Exception as e:  # a bug in bnfold: this model's internal error, the others go on
        return failed(3, f"{job.input}: internal error: {type(e).__name__}: {e}")
    status = "unchanged" if result.report["output"]["unchanged"] else "changed"
    return ModelResult(job.input, job.output, status, report=result.report, seconds=time.perf_counter() - start)


def _one_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "error"


# ---- many models ---------------------------------------------------------------------------

# ("begin", number of models, None), then per model ("start" | "step" | "done", job index, Job | step name | result)
Event = Callable[[str, int, object], None]


def optimize_many(
    paths: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    passes=None,
    *,
    jobs: int | None = None,
    shard: str | tuple[int, int] | None = None,
    report: str | None = None,
    force: bool = False,
    external_buffers: bool = False,
    check: int | None = None,
    check_mode: str = "auto",
    check_backend: str = "auto",
    rtol: float | None = None,
    atol: float | None = None,
    check_seed: int = 0,
    strict: bool = False,
    target: str | None = None,
    run_files: Iterable[str | None] = (),
    on_event: Event | None = None,
    **options: bool,
) -> BatchResult:
    """`bnfold optimize --out-dir DIR [-j N] [--shard K/N] PATH...`: api.optimize_file() with these passes and
    checks for every model PATH names (a file, or a directory walked in sorted order for *.tflite and *.circle),
    into `out_dir` under its path relative to its PATH.

    jobs: worker processes (default: the CPUs this process may use). shard: "K/N" or (K, N), the K-th of N
        shares of the collection (together they are the collection, each model once).
    report: a JSON file for the run (the totals, and one entry per model with its report); never a file of
        this run, nor without `force` an existing model.
    on_event(kind, index, what): ("begin", count, None), then per model ("start", i, Job), ("step", i,
        step name), ("done", i, ModelResult).
    A model that fails is its result's one-line error and exit code, never an exception; the others go on.
    Returns a BatchResult: `.models` in input order, `.totals()`, `.exit_code` (the worst model's,
    EXIT_PRECEDENCE), `.to_json()`.
    """
    chosen, checking = (
        arguments.selection(passes, options, strict),
        arguments.checking(check, check_mode, rtol, atol, check_seed, check_backend),
    )
    run_paths = tuple(os.fspath(f) for f in run_files if f)
    out_dir = os.fspath(out_dir)
    if report == "-":
        raise UsageError("--report - (stdout) is for one model; give the run's report a file name")
    if not out_dir:  # an empty name would silently mean the current directory
        raise UsageError("--out-dir is empty; give the directory to write into (. for the current one)")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError("--out-dir is not a directory", out_dir)
    settings = Settings(chosen, external_buffers, checking, run_paths, arguments.target(target))
    shard = None if shard is None else parse_shard(shard if isinstance(shard, str) else "/".join(map(str, shard)))
    todo = take_shard(collect(paths, out_dir), shard)
    if jobs is not None and jobs < 1:
        raise UsageError(f"-j {jobs}: give at least 1 worker")
    if report:
        from .io.paths import refuse_side_file_clobber

        files = [p for job in todo for p in (job.input, job.output)]
        refuse_side_file_clobber(report, "--report", [*files, *settings.run_files], force)
        api.check_output_path(report, model=False)
    workers = max(1, min(jobs or default_jobs(), len(todo)))
    start = time.perf_counter()
    on_event = on_event or (lambda kind, index, what: None)
    on_event("begin", len(todo), None)
    if workers == 1:
        results = [_in_process(i, job, settings, on_event) for i, job in enumerate(todo)]
    else:
        _import_for_workers(todo, settings)
        results = _Pool(workers, settings).run(todo, on_event)
    result = BatchResult(results, out_dir, workers, shard, time.perf_counter() - start)
    if report:
        from .io.atomic import write_text

        write_text(report, result.to_json(), UsageError)
    return result


def _import_for_workers(jobs: list[Job], settings: Settings) -> None:
    """Import once, before the workers fork, what each of them would otherwise import for
    itself: the library, the selected passes' modules and the bindings of the formats the
    collection's names say it holds."""
    from .engine import registry
    from .io.formats import FORMATS

    for spec in registry.resolve(settings.chosen.passes):
        _ = spec.module  # the property imports the pass's module: once here, not once in every worker

    for fmt in FORMATS:
        if any(job.input.lower().endswith(fmt.extension) for job in jobs):
            _ = fmt.op_codes  # the generated bindings' module, and its enums


def _in_process(index: int, job: Job, settings: Settings, on_event: Event) -> ModelResult:
    on_event("start", index, job)
    result = optimize_one(job, settings, lambda step: on_event("step", index, step))
    on_event("done", index, result)
    return result


class _Worker:
    """One worker process and the pipe the parent talks to it over."""

    def __init__(self, context, settings: Settings, siblings: list):
        here, there = context.Pipe()
        self.conn = here
        self.index: int | None = None  # the job it is working on
        self.process = context.Process(target=_serve, args=(there, settings, [here, *siblings]), daemon=True)
        self.process.start()
        there.close()


def _serve(conn, settings: Settings, inherited: list) -> None:
    """A worker: optimize each job the parent sends until it sends None. SIGINT is the parent's
    to act on; SIGTERM kills at once, or (while a file is written) removes it first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for other in inherited:  # the parent's ends: the parent's exit must be seen as EOF
        other.close()
    code = 0
    try:
        while (message := conn.recv()) is not None:
            index, job = message
            result = optimize_one(job, settings, _step_sender(conn, index))
            conn.send(("done", index, result))
    except (EOFError, BrokenPipeError):  # the parent is gone
        pass
    except Interrupted as e:
        code = 128 + e.signum
    # A fork carries the caller's whole process (a program calling optimize_many): the exit
    # multiprocessing gives a child would run the caller's registered finalizers here (those of
    # its own pools among them, which terminate processes); they are not the worker's to run.
    os._exit(code)


def _step_sender(conn, index: int) -> Callable[[str], None]:
    """The on_step of job `index`: tells the parent each step under the index bound here. A lambda
    in _serve's loop would read the loop's `index` when called: right only while every step is sent
    before the next job arrives."""
    return lambda step: conn.send(("step", index, step))


class _Pool:
    def __init__(self, count: int, settings: Settings):
        import multiprocessing

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        self.context = multiprocessing.get_context(method)
        self.settings = settings
        self.workers: list[_Worker] = []
        self.count = count

    def run(self, jobs: list[Job], on_event: Event) -> list[ModelResult]:
        from multiprocessing.connection import wait

        from .io.atomic import signals_interrupt

        pending = list(enumerate(jobs))[::-1]
        results: list[ModelResult | None] = [None] * len(jobs)
        self.directories = sorted({os.path.dirname(os.path.abspath(job.output)) for job in jobs})
        try:
            with signals_interrupt():  # SIGTERM stops the pool as Ctrl-C's KeyboardInterrupt does
                for _ in range(self.count):
                    self._give(self._start(), pending, on_event)
                while any(w.index is not None for w in self.workers):
                    busy = [w for w in self.workers if w.index is not None]
                    ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
                    for worker in busy:
                        if worker.conn in ready or worker.process.sentinel in ready:
                            self._hear(worker, jobs, results, pending, on_event)
        finally:
            self._stop()
        heard = [result for result in results if result is not None]
        assert len(heard) == len(jobs)  # the loop ends when every job's result is in
        return heard

    def _start(self) -> _Worker:
        with _sigint_ignored():  # no Ctrl-C may reach a worker before it ignores it
            worker = _Worker(self.context, self.settings, [w.conn for w in self.workers])
        self.workers.append(worker)
        return worker

    def _give(self, worker: _Worker, pending: list, on_event: Event) -> None:
        if not pending:
            worker.index = None
            worker.conn.send(None)
            return
        worker.index, job = pending.pop()
        on_event("start", worker.index, job)
        worker.conn.send((worker.index, job))

    def _hear(self, worker: _Worker, jobs, results, pending, on_event: Event) -> None:
        try:
            while worker.conn.poll():
                kind, index, what = worker.conn.recv()
                if kind == "step":
                    on_event("step", index, what)
                    continue
                results[index] = what
                on_event("done", index, what)
                self._give(worker, pending, on_event)
                return
        except (EOFError, OSError):
            pass
        if worker.process.is_alive() or worker.index is None:
            return
        job = jobs[worker.index]  # the worker died under this model (a crash in a runtime, the OOM killer)
        code = worker.process.exitcode
        died = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        results[worker.index] = ModelResult(
            job.input, job.output, "failed", 3, f"{job.input}: internal error: the worker process died ({died})"
        )
        on_event("done", worker.index, results[worker.index])
        worker.index = None
        self.workers.remove(worker)
        if pending:
            self._give(self._start(), pending, on_event)

    def _stop(self) -> None:
        """Every worker ends: asked to (None was sent) or, when the run stops early, by SIGTERM;
        then no temporary file of a worker may stay behind."""
        from .io.atomic import remove_stale_temps

        for worker in self.workers:
            if worker.process.is_alive() and worker.index is not None:
                worker.process.terminate()
        for worker in self.workers:
            worker.process.join(5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        for directory in self.directories:
            remove_stale_temps(directory)


@contextmanager
def _sigint_ignored():
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread, where signals are not ours to set
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
