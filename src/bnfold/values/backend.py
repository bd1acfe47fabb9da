"""Choosing and running a backend for value checks: onert, LiteRT or the reference interpreter.

"onert" runs the models in ONE's runtime (values/onert.py; the `onert` extra). "litert" runs them
in LiteRT under the first resolver that loads and runs every model of the comparison: the builtin
kernels without default delegates, then LiteRT's default resolver (the one deployed apps use:
XNNPACK, which also implements some custom operators, such as Convolution2DTransposeBias).
"reference" runs bnfold's numpy interpreter. "auto" runs a comparison that holds a Circle model
in onert first (the runtime Circle models are made for; it loads TFLite too, so a TFLite model
optimized into Circle is compared there) when onert is installed and loads and runs every model,
then in LiteRT, then in the reference interpreter; a TFLite comparison starts at LiteRT. One backend
(and one resolver) runs all models of a sample, so a difference is never a difference between
runtimes; a backend that fails to run a model is not a difference either, but a reason to try the
next (`Backends`), and when none runs it the check could not verify (exit 4).
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import CannotVerify, ModelError, RunFailed, UsageError
from ..io.formats import CIRCLE
from ..ir.model import Model
from ..reference import interpreter as reference
from . import BACKENDS, litert, onert
from .index_inputs import caveats

RESOLVER_ORDER = ("plain", "default")  # litert.RESOLVERS keys, tried in this order
CANDIDATES = {
    "auto": (*RESOLVER_ORDER, "reference"),
    "litert": RESOLVER_ORDER,
    "onert": ("onert",),
    "reference": ("reference",),
}
DESCRIPTIONS = {
    "onert": "onert (cpu backend)",
    "plain": "litert (builtin kernels, no delegates)",
    "default": "litert (default resolver, with delegates)",
}


def candidates(models: list[Model], backend: str) -> tuple[str, ...]:
    """The backends to try for `models`, in order: "auto" puts onert first where a model is Circle
    and onert is installed (a missing onert is then no reason to mention: LiteRT runs them)."""
    if backend == "auto" and any(m.format is CIRCLE for m in models) and onert.missing() is None:
        return ("onert", *CANDIDATES["auto"])
    return CANDIDATES[backend]


class Runner:
    """Runs one model repeatedly on a fixed backend (and LiteRT resolver)."""

    def __init__(self, model: Model, backend: str, interp=None, resolver: str | None = None, deadline=None):
        self.model = model
        self.backend = backend
        self.resolver = resolver
        self.deadline = deadline
        self._litert = interp
        self._reference = reference.Interpreter(model, deadline=deadline) if backend == "reference" else None
        self._onert = onert.Session(model) if backend == "onert" else None

    @property
    def description(self) -> str:
        if self.backend == "onert":
            return DESCRIPTIONS["onert"]
        return "reference interpreter" if self.resolver is None else DESCRIPTIONS[self.resolver]

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if self._reference is not None:
            return self._reference.run(inputs)
        if self._onert is not None:
            work = lambda: self._onert(inputs)  # noqa: E731
        else:
            work = lambda: litert.invoke(self._litert, inputs)  # noqa: E731
        if self.deadline is None or self.deadline.end is None:
            return work()
        return _with_deadline(work, self.deadline)


def _with_deadline(work, deadline):
    """Run `work` in a daemon thread (LiteRT releases the GIL while it runs) and give up at the
    deadline: the thread cannot be stopped, but the process can exit without waiting for it."""
    import time

    box: dict = {}

    def target():
        try:
            box["value"] = work()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(max(deadline.end - time.monotonic(), 0.0))
    if thread.is_alive():
        raise deadline.error()
    if "error" in box:
        raise box["error"]
    return box["value"]


class Backends:
    """Runs every model of a comparison on one backend, sample by sample.

    Candidates in order (CANDIDATES): for "auto" onert when every model is Circle and onert is
    installed, LiteRT under each resolver of RESOLVER_ORDER, then the reference interpreter;
    "onert" onert only; "litert" the resolvers only; "reference" the interpreter. The
    first that loads every model runs them; when it fails while running one (RunFailed: a kernel
    refuses its input types, an index is out of range), the next candidate runs that sample again,
    for every model, and the samples after it. When none is left: CannotVerify (exit 4) with each
    candidate's reason, never a difference."""

    def __init__(self, models: list[Model], backend: str = "auto", *, deadline=None):
        if backend not in BACKENDS:
            raise UsageError(f"unknown backend {backend!r} ({', '.join(BACKENDS)})")
        self.models, self.deadline = models, deadline
        self._candidates = iter(candidates(models, backend))
        self._tried = 0  # candidates tried so far
        self._reasons: list[str] = []  # why each candidate tried so far does not run the models
        self._failed_runs: list[str] = []  # the run failures among them, for the description
        self.samples = 0  # samples run so far
        self._switched_at = 0  # the sample the current candidate took over at
        self.runners = self._next_runners()

    @property
    def description(self) -> str:
        """The backend that runs the models (and why the ones before it do not)."""
        text = self.runners[0].description
        if self._failed_runs:
            since = f" from sample {self._switched_at}" if self._switched_at else ""
            text += f"{since} ({'; '.join(dict.fromkeys(self._failed_runs))})"
        return text

    @property
    def kind(self) -> str:
        """The backend ("onert", "litert" or "reference") that loaded every model: the one to name
        when another comparison of these models must run in the same runtime."""
        return self.runners[0].backend

    def __call__(self, inputs: list[np.ndarray]) -> list[list[np.ndarray]]:
        """Every model's outputs for `inputs`, all from one backend."""
        while True:
            try:
                outputs = [run(inputs) for run in self.runners]
            except RunFailed as e:  # each message names its backend ("LiteRT failed to run ...")
                self._reasons.append(str(e))
                self._failed_runs.append(str(e))
                self.runners, self._switched_at = self._next_runners(), self.samples
                continue
            self.samples += 1
            return outputs

    def _next_runners(self) -> list[Runner]:
        for candidate in self._candidates:
            self._tried += 1
            try:
                return self._load(candidate)
            except (ModelError, RunFailed) as e:
                self._reasons.append(str(e))
        raise CannotVerify(self._no_backend())

    def _load(self, candidate: str) -> list[Runner]:
        if candidate == "onert":
            return [Runner(m, "onert", deadline=self.deadline) for m in self.models]
        if candidate == "reference":
            missing = sorted({k for m in self.models for k in reference.unsupported_kinds(m)})
            if missing:
                raise RunFailed(f"reference interpreter cannot run {', '.join(missing)}")
            return [Runner(m, "reference", deadline=self.deadline) for m in self.models]
        return [
            Runner(m, "litert", litert.model_interpreter(m, resolver=candidate), candidate, self.deadline)
            for m in self.models
        ]

    def _no_backend(self) -> str:
        """Each candidate's reason once (both resolvers often fail alike), with what bnfold could
        not tell about index inputs."""
        reasons: list[str] = []
        for reason in dict.fromkeys(self._reasons):
            if any(_detail(said) in reason for said in reasons):
                continue  # another resolver failing on the same thing, with what it made of it (garbage too)
            reasons.append(reason)
        if self._failed_runs:
            reasons += caveats(self.models[0].graphs[0])
        if self._tried == 1:
            return "; ".join(reasons)
        return f"no backend runs the model: {'; '.join(reasons)}"


def _detail(reason: str) -> str:
    """What a backend said, after who said it ("LiteRT cannot load the model: ...")."""
    return reason.split(": ", 1)[-1]
