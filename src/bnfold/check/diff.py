"""Value diffs: generate inputs, run two models on them, compare outputs within tolerance.

Comparison is numpy.allclose's rule, with model A (or the first file) as the reference:
|a - b| <= atol + rtol * |a|, element-wise. Integer and bool outputs must match exactly. NaN
equals NaN only at the same position. Per output the report gives the maximum absolute error
max|a - b| and the maximum relative error max(|a - b| / |a|) (over elements where a != 0; an
error where a == 0 counts as infinite relative error), each the maximum over all samples.

Inputs (when not read from files): a fixed seed; floats from normal(0, 2) (negative values
matter: they exercise ReLU paths); integers uniformly over their dtype's whole range; bool
uniformly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import CheckFailed, ModelError, UsageError
from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Graph, Tensor
from ..ir.model import Model
from .backend import runners

DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-5


@dataclass
class OutputDiff:
    """How one output (named after model A's tensor) differs, over all samples."""

    name: str
    max_abs: float = 0.0
    max_rel: float = 0.0
    passed: bool = True
    problem: str | None = None  # shape/dtype mismatch, reported instead of numbers

    def merge(self, other: OutputDiff) -> None:
        self.max_abs = max(self.max_abs, other.max_abs)
        self.max_rel = max(self.max_rel, other.max_rel)
        self.passed = self.passed and other.passed
        self.problem = self.problem or other.problem


@dataclass
class CheckResult:
    outputs: list[OutputDiff]
    backend: str = ""
    samples: int = 0
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    inputs: list[list[np.ndarray]] = field(default_factory=list)  # per sample
    expected: list[list[np.ndarray]] = field(default_factory=list)  # model A's outputs per sample

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    @property
    def failing(self) -> list[OutputDiff]:
        return [o for o in self.outputs if not o.passed]

    def table(self) -> str:
        """One line per output: name, max abs err, max rel err, ok/FAIL."""
        width = max([len(o.name) for o in self.outputs] + [6])
        lines = [f"{'output':<{width}}  {'max abs err':>11}  {'max rel err':>11}  result"]
        for o in self.outputs:
            if o.problem:
                lines.append(f"{o.name:<{width}}  {'-':>11}  {'-':>11}  FAIL ({o.problem})")
            else:
                lines.append(f"{o.name:<{width}}  {o.max_abs:>11.3e}  {o.max_rel:>11.3e}  {'ok' if o.passed else 'FAIL'}")
        return "\n".join(lines)

    def failure_message(self) -> str:
        bad = self.failing
        worst = ", ".join(f"{o.name} ({o.problem or f'max abs err {o.max_abs:.3e}'})" for o in bad)
        return f"{len(bad)} of {len(self.outputs)} outputs outside rtol={self.rtol:g} atol={self.atol:g}: {worst}"


# ---- inputs ----------------------------------------------------------------------------------

def random_input(tensor: Tensor, rng: np.random.Generator) -> np.ndarray:
    """One random value for a graph input (see module docstring for the distributions)."""
    dtype = NUMPY_DTYPES.get(tensor.dtype)
    if dtype is None:
        raise ModelError(f"cannot generate {tensor.dtype} input {tensor.name!r}")
    shape = tensor.shape
    if dtype.kind == "f":
        return rng.normal(0.0, 2.0, shape).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    raise ModelError(f"cannot generate {tensor.dtype} input {tensor.name!r}")


def random_inputs(graph: Graph, samples: int, seed: int = 0) -> list[list[np.ndarray]]:
    """`samples` input sets for `graph`, reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    return [[random_input(t, rng) for t in graph.inputs] for _ in range(samples)]


# ---- comparison ------------------------------------------------------------------------------

def compare(name: str, a: np.ndarray, b: np.ndarray, rtol: float, atol: float, *, exact_integers: bool = True) -> OutputDiff:
    """Compare `b` against reference `a` (allclose rule; integers exact unless told otherwise)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return OutputDiff(name, passed=False, problem=f"shape {list(a.shape)} vs {list(b.shape)}")
    if a.dtype != b.dtype:
        return OutputDiff(name, passed=False, problem=f"dtype {a.dtype} vs {b.dtype}")
    if a.size == 0:
        return OutputDiff(name)
    if a.dtype.kind in "biu":
        err = np.abs(a.astype(np.float64) - b.astype(np.float64))
        if exact_integers:
            rtol, atol = 0.0, 0.0
        ref = np.abs(a.astype(np.float64))
        ok = err <= atol + rtol * ref
    else:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        both_nan = np.isnan(a64) & np.isnan(b64)
        err = np.where(both_nan, 0.0, np.abs(a64 - b64))
        err = np.where(np.isnan(err), np.inf, err)  # NaN on one side only
        ref = np.abs(a64)
        ok = err <= atol + rtol * np.where(np.isfinite(ref), ref, 0.0)
        ok |= both_nan | ((a64 == b64) & np.isinf(a64))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(err == 0, 0.0, err / ref)
    return OutputDiff(name, float(err.max()), float(np.where(np.isnan(rel), np.inf, rel).max()), bool(ok.all()))


def compare_all(names: list[str], expected: list[np.ndarray], actual: list[np.ndarray], rtol: float, atol: float,
                *, exact_integers: bool = True) -> list[OutputDiff]:
    if len(expected) != len(actual):
        raise ModelError(f"{len(expected)} outputs vs {len(actual)}")
    return [compare(n, a, b, rtol, atol, exact_integers=exact_integers) for n, a, b in zip(names, expected, actual)]


# ---- model against model ---------------------------------------------------------------------

def _check_signatures(a: Graph, b: Graph) -> None:
    if len(a.inputs) != len(b.inputs):
        raise UsageError(f"models have {len(a.inputs)} and {len(b.inputs)} inputs")
    if len(a.outputs) != len(b.outputs):
        raise UsageError(f"models have {len(a.outputs)} and {len(b.outputs)} outputs")
    for x, y in zip(a.inputs, b.inputs):
        if x.dtype != y.dtype or x.shape != y.shape:
            raise UsageError(f"input {x.name!r} is {x.dtype}{list(x.shape)} in one model and {y.dtype}{list(y.shape)} in the other")


def _check_given_inputs(graph: Graph, inputs: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    out = []
    for sample in inputs:
        if len(sample) != len(graph.inputs):
            raise UsageError(f"input file has {len(sample)} values; the model has {len(graph.inputs)} inputs")
        fixed = []
        for x, t in zip(sample, graph.inputs):
            x = np.asarray(x)
            if tuple(x.shape) != t.shape:
                raise UsageError(f"input {t.name!r}: value has shape {list(x.shape)}, the model wants {list(t.shape)}")
            fixed.append(x.astype(NUMPY_DTYPES.get(t.dtype, x.dtype), copy=False))
        out.append(fixed)
    return out


def check_models(model_a: Model, model_b: Model, *, samples: int = 1, seed: int = 0,
                 inputs: list[list[np.ndarray]] | None = None, rtol: float = DEFAULT_RTOL,
                 atol: float = DEFAULT_ATOL, backend: str = "auto") -> CheckResult:
    """Run both models (subgraph 0) on the same inputs and compare B's outputs to A's."""
    graph_a, graph_b = model_a.graphs[0], model_b.graphs[0]
    _check_signatures(graph_a, graph_b)
    if inputs is None:
        if samples < 1:
            raise UsageError("--samples must be at least 1")
        inputs = random_inputs(graph_a, samples, seed)
    else:
        inputs = _check_given_inputs(graph_a, inputs)
    run_a, run_b = runners([model_a, model_b], backend)
    names = [t.name for t in graph_a.outputs]
    result = CheckResult([OutputDiff(n) for n in names], run_a.backend, len(inputs), rtol, atol, inputs)
    for sample in inputs:
        want, got = run_a(sample), run_b(sample)
        result.expected.append(want)
        for total, diff in zip(result.outputs, compare_all(names, want, got, rtol, atol)):
            total.merge(diff)
    return result


def verify(original: Model, optimized: Model, samples: int, *, seed: int = 0, rtol: float = DEFAULT_RTOL,
           atol: float = DEFAULT_ATOL, backend: str = "auto") -> CheckResult:
    """check_models, raising CheckFailed (naming the failing outputs) when it does not pass."""
    result = check_models(original, optimized, samples=samples, seed=seed, rtol=rtol, atol=atol, backend=backend)
    if not result.passed:
        error = CheckFailed(result.failure_message())
        error.result = result
        raise error
    return result


def compare_files(path_a: str, path_b: str, rtol: float, atol: float, *, exact_integers: bool = True) -> list[OutputDiff]:
    """Compare two h5 files in ONE's layout, value by value (by position, named after A)."""
    from .h5io import read_h5

    a, b = read_h5(path_a), read_h5(path_b)
    if len(a) != len(b):
        raise UsageError(f"{path_a} has {len(a)} values, {path_b} has {len(b)}")
    return compare_all([n for n, _ in a], [v for _, v in a], [v for _, v in b], rtol, atol, exact_integers=exact_integers)
