"""Choosing and running a backend for value checks: LiteRT or the reference interpreter.

"litert" runs the model in LiteRT with the builtin kernels and no default delegates, so the two
models of a comparison run the same kernels; "reference" runs bnfold's numpy interpreter; "auto"
uses LiteRT when every model of the comparison loads there (TFLite operators only) and the
reference interpreter otherwise. One backend is chosen for all models of a comparison, so a
difference is never a difference between runtimes.
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError, UsageError
from ..ir.model import Model
from . import interpreter as reference
from . import litert

BACKENDS = ("auto", "litert", "reference")


class Runner:
    """Runs one model repeatedly on a fixed backend."""

    def __init__(self, model: Model, backend: str, interp=None):
        self.model = model
        self.backend = backend
        self._litert = interp
        self._reference = reference.Interpreter(model) if backend == "reference" else None

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if self._reference is not None:
            return self._reference.run(inputs)
        return litert.invoke(self._litert, inputs)


def runners(models: list[Model], backend: str = "auto") -> list[Runner]:
    """One Runner per model, all on the same backend (see module docstring for `auto`)."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r} ({', '.join(BACKENDS)})")
    if backend == "reference":
        return [Runner(m, "reference") for m in models]
    interps = []
    for m in models:
        try:
            interps.append(litert.model_interpreter(m))
        except ModelError:
            if backend == "litert":
                raise
            return [Runner(m, "reference") for m in models]
    return [Runner(m, "litert", i) for m, i in zip(models, interps)]


def run(model: Model, inputs: list[np.ndarray], backend: str = "auto") -> list[np.ndarray]:
    """Outputs of subgraph 0 of `model` for `inputs` on `backend`."""
    return runners([model], backend)[0](inputs)
