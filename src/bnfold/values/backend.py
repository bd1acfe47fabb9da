"""Choosing and running a backend for value checks: LiteRT or the reference interpreter.

"litert" runs the models in LiteRT under the first resolver that loads every model of the
comparison: the builtin kernels without default delegates, then LiteRT's default resolver (the
one deployed apps use: XNNPACK, which also implements some custom operators, such as
Convolution2DTransposeBias). "reference" runs bnfold's numpy interpreter; "auto" uses LiteRT when
it loads every model and the reference interpreter otherwise. One backend (and one resolver) is
chosen for all models of a comparison, so a difference is never a difference between runtimes.
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import CannotVerify, ModelError, UsageError
from ..ir.model import Model
from . import interpreter as reference
from . import litert

BACKENDS = ("auto", "litert", "reference")
RESOLVER_ORDER = ("plain", "default")  # litert.RESOLVERS keys, tried in this order
DESCRIPTIONS = {"plain": "litert (builtin kernels, no delegates)", "default": "litert (default resolver, with delegates)"}


class Runner:
    """Runs one model repeatedly on a fixed backend (and LiteRT resolver)."""

    def __init__(self, model: Model, backend: str, interp=None, resolver: str | None = None, deadline=None):
        self.model = model
        self.backend = backend
        self.resolver = resolver
        self.deadline = deadline
        self._litert = interp
        self._reference = reference.Interpreter(model, deadline=deadline) if backend == "reference" else None

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self.resolver] if self.backend == "litert" else "reference interpreter"

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if self._reference is not None:
            return self._reference.run(inputs)
        if self.deadline is None or self.deadline.end is None:
            return litert.invoke(self._litert, inputs)
        return _with_deadline(lambda: litert.invoke(self._litert, inputs), self.deadline)


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


def _litert_runners(models: list[Model], deadline) -> tuple[list[Runner] | None, str]:
    """Runners under the first resolver that loads every model, or None and why none did."""
    reason = ""
    for resolver in RESOLVER_ORDER:
        try:
            interps = [litert.model_interpreter(m, resolver=resolver) for m in models]
        except ModelError as e:
            reason = reason or str(e)
            continue
        return [Runner(m, "litert", i, resolver, deadline) for m, i in zip(models, interps)], ""
    return None, reason


def runners(models: list[Model], backend: str = "auto", *, deadline=None) -> list[Runner]:
    """One Runner per model, all on the same backend (see module docstring for `auto`)."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} ({', '.join(BACKENDS)})")
    if backend != "reference":
        found, reason = _litert_runners(models, deadline)
        if found:
            return found
        if backend == "litert":
            raise CannotVerify(reason)
    missing = sorted({k for m in models for k in reference.unsupported_kinds(m)})
    if missing and backend == "auto":
        raise CannotVerify(f"no backend runs the model: {reason}; reference interpreter cannot run {', '.join(missing)}")
    if missing:
        raise CannotVerify(f"reference interpreter cannot run {', '.join(missing)}")
    return [Runner(m, "reference", deadline=deadline) for m in models]
