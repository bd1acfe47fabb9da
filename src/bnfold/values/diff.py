"""Value diffs: generate inputs, run two models on them, compare outputs within tolerance.

The criterion, per output and per sample, with model A (or the first file) as the reference:

    |a - b| <= atol + rtol * max|a|      for every element (max|a| over that output's finite values)

An exact rewrite changes the order of float32 operations, and the rounding error that leaves
is proportional to the magnitude of the values the network computed with, not to the value an
element happens to end up with: an element that is a near-cancellation of large terms (an output
near zero) carries the absolute error of those terms. The largest magnitude of the output is the
measure of that scale the check can see, so the error is judged against it. Per output the table
gives both figures: the elementwise relative error max(|a - b| / |a|) (numpy.allclose's view;
large where |a| is tiny) and the scaled error max|a - b| / max|a| the verdict uses; each the
maximum over all samples.

Integer and bool outputs must match exactly (h5diff -d allows an absolute difference). Complex
values compare by the modulus of the difference. NaN equals NaN only at the same position; an
infinity equals only the same infinity. Strings compare for equality.

Inputs (when not read from files): a fixed seed; floats from normal(0, 2) (negative values
matter: they exercise ReLU paths); integers uniformly over their dtype's whole range, except an
input that indexes something (GATHER, GATHER_ND, EMBEDDING_LOOKUP; values/index_inputs.py), drawn
from [0, rows) of what it indexes; bool uniformly. Samples are generated, run and compared one
at a time, so memory does not grow with their number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..check_names import describe
from ..errors import CheckFailed, ModelError, UsageError
from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Graph, Tensor
from ..ir.model import Model
from . import DEFAULT_ATOL, DEFAULT_RTOL
from .backend import Backends
from .deadline import Deadline
from .h5io import ones_name
from .index_inputs import index_uses
from .strength import Spread, Strength, caveat


@dataclass(frozen=True)
class Tolerance:
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    exact_integers: bool = True

    def __str__(self) -> str:
        if not self.exact_integers and self.rtol == 0:  # h5diff's -d: one absolute bound, integers too
            return f"-d {self.atol:g}"
        return f"rtol={self.rtol:g} atol={self.atol:g}"

    @property
    def criterion(self) -> str:
        """The rule itself, for a footer: |a - b| <= ..."""
        if not self.exact_integers and self.rtol == 0:
            return f"|a - b| <= {self.atol:g} for every value, integers too (-d)"
        return f"|a - b| <= atol + rtol * max|a|, {self}"


@dataclass
class OutputDiff:
    """How one output (named after model A's tensor) differs, over all samples."""

    name: str
    max_abs: float = 0.0  # max |a - b|
    max_rel: float = 0.0  # max |a - b| / |a|, elementwise (inf where a == 0 != b)
    scaled: float = 0.0  # max |a - b| / max|a|, what the verdict uses
    passed: bool = True
    problem: str | None = None  # shape/dtype mismatch, reported instead of numbers
    settled: str | None = None  # why a difference at a weak output is not one (values/verify.py: settle_weak)

    def merge(self, other: OutputDiff) -> None:
        self.max_abs = max(self.max_abs, other.max_abs)
        self.max_rel = max(self.max_rel, other.max_rel)
        self.scaled = max(self.scaled, other.scaled)
        self.passed = self.passed and other.passed
        self.problem = self.problem or other.problem
        self.settled = self.settled or other.settled


@dataclass
class CheckResult:
    outputs: list[OutputDiff]
    backend: str = ""
    samples: int = 0
    tolerance: Tolerance = Tolerance()
    spreads: list[Spread] = field(default_factory=list)  # the reference's values, per output (values/strength.py)
    files: dict[str, list[str]] = field(default_factory=dict)  # "input"/"expected" -> the h5 files read (check)
    kind: str = "output"  # what a row compares: a model's "output", or an h5 file's "tensor" (h5diff)
    # how a row names its tensor: as ONE's h5 files do (ofm:0), so check, optimize --check, recipe
    # test and h5diff spell one tensor alike (h5diff: as the files store it)
    spelling: Callable[[str], str] = ones_name
    by_name: bool = True  # h5diff: the files' values paired by name (else by position)

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    @property
    def strengths(self) -> list[Strength]:
        """How much the comparison of each output proved (values/strength.py)."""
        return [s.strength(self.tolerance.rtol, self.tolerance.atol) for s in self.spreads]

    @property
    def failing(self) -> list[OutputDiff]:
        return [o for o in self.outputs if not o.passed]

    @property
    def scope(self) -> str:
        return "every output"

    @property
    def worst(self) -> OutputDiff:
        """The largest figures over every output (name "*")."""
        total = OutputDiff("*")
        for o in self.outputs:
            total.merge(o)
        return total

    def table(self) -> str:
        """One line per output: name, max abs err, max rel err, scaled err, ok/FAIL. A passing
        output whose reference has a 0 where the other is not (an infinite relative error, within
        the tolerance the verdict uses) shows `-` for its relative error, not `inf`."""
        name = self.spelling
        width = max([len(name(o.name)) for o in self.outputs] + [len(self.kind)])
        lines = [f"{self.kind:<{width}}  {'max abs err':>11}  {'max rel err':>11}  {'scaled err':>11}  result"]
        for o in self.outputs:
            if o.problem:
                lines.append(f"{name(o.name):<{width}}  {'-':>11}  {'-':>11}  {'-':>11}  FAIL ({o.problem})")
            else:
                rel = f"{o.max_rel:>11.3e}" if o.max_rel < np.inf or not o.passed else f"{'-':>11}"
                verdict = "ok (by rewrite)" if o.settled else "ok" if o.passed else "FAIL"
                lines.append(f"{name(o.name):<{width}}  {o.max_abs:>11.3e}  {rel}  {o.scaled:>11.3e}  {verdict}")
        notes = [f"{name(o.name)!r}: {o.settled}" for o in self.outputs if o.settled]
        note = caveat(self.strengths, name)
        return "\n".join(lines + notes + ([note] if note else []))

    def proved_nothing(self) -> str | None:
        """The outputs this comparison proved nothing about (none of their elements changed across
        the samples), in the words of the table's caveat; None when there is none."""
        nothing = [s for s in self.strengths if s.level == "none"]
        return "; ".join(describe(self.spelling(s.name), s.level, s.why) for s in nothing) or None

    def failure_message(self) -> str:
        """The error line: the rows outside the tolerance, then those that could not be compared
        (a name only one file has, another shape or dtype): those are no matter of tolerance."""
        bad, name = self.failing, self.spelling
        outside = [
            f"{name(o.name)} (scaled err {o.scaled:.3e}, max abs err {o.max_abs:.3e})" for o in bad if not o.problem
        ]
        unmatched = [f"{name(o.name)} ({o.problem})" for o in bad if o.problem]
        of = f"of {len(self.outputs)} {self.kind}s"
        parts = [f"{len(outside)} {of} outside {self.tolerance}: {', '.join(outside)}"] if outside else []
        if unmatched:
            parts.append(f"{len(unmatched)} {'' if outside else of + ' '}not comparable: {', '.join(unmatched)}")
        return "; ".join(parts)


# ---- inputs ----------------------------------------------------------------------------------


def random_input(tensor: Tensor, rng: np.random.Generator, rows: int | None = None) -> np.ndarray:
    """One random value for a graph input (see module docstring for the distributions); an
    index into `rows` rows is drawn from [0, rows)."""
    dtype = NUMPY_DTYPES.get(tensor.dtype)
    if dtype is None:
        raise ModelError(f"cannot generate {tensor.dtype} input {tensor.name!r}")
    shape = tensor.shape
    if rows is not None and dtype.kind in "iuf":
        high = rows if dtype.kind == "f" else min(rows, int(np.iinfo(dtype).max) + 1)
        return rng.integers(0, high, size=shape).astype(dtype)
    if dtype.kind == "f":
        return rng.normal(0.0, 2.0, shape).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    raise ModelError(f"cannot generate {tensor.dtype} input {tensor.name!r}")


def iter_random_inputs(graph: Graph, samples: int, seed: int = 0) -> Iterator[list[np.ndarray]]:
    """`samples` input sets for `graph`'s inputs, one at a time, reproducible from `seed`."""
    uses = index_uses(graph)
    rows = [uses[id(t)].rows if id(t) in uses else None for t in graph.inputs]
    rng = np.random.default_rng(seed)
    for _ in range(samples):
        yield [random_input(t, rng, r) for t, r in zip(graph.inputs, rows)]


def random_inputs(graph: Graph, samples: int, seed: int = 0) -> list[list[np.ndarray]]:
    """`samples` input sets for `graph` (a list: for tests and small counts)."""
    return list(iter_random_inputs(graph, samples, seed))


def conform(tensor: Tensor, value: np.ndarray, *, cast: bool = False, where: str = "") -> np.ndarray:
    """`value` as an input of `tensor`: its shape must match; its dtype must match too unless
    `cast`, and a cast may round a float but never overflow it to inf or change an integer."""
    value = np.asarray(value)
    want = NUMPY_DTYPES.get(tensor.dtype)
    label = f"input {tensor.name!r}{where}"
    if tuple(value.shape) != tuple(tensor.shape):
        raise UsageError(f"{label}: value has shape {list(value.shape)}, the model wants {list(tensor.shape)}")
    if want is None or value.dtype == want:
        return value
    if want == np.bool_ and value.dtype == np.uint8 and (value <= 1).all():
        return value.astype(np.bool_)  # HDF5's native bool (hbool) is an 8-bit unsigned integer
    if not cast:
        raise UsageError(f"{label}: value is {value.dtype}, the model wants {want} (--cast converts)")
    if value.dtype.kind not in "biuf":
        raise UsageError(f"{label}: {value.dtype} values cannot be cast to {want}")
    with np.errstate(invalid="ignore", over="ignore"):
        converted = value.astype(want)
        if want.kind == "f":
            lossless = np.array_equal(np.isfinite(converted), np.isfinite(value))
        else:
            lossless = np.array_equal(converted.astype(value.dtype), value)
    if not lossless:
        raise UsageError(f"{label}: {value.dtype} values do not fit {want}")
    return converted


# ---- comparison ------------------------------------------------------------------------------


def compare(name: str, a: np.ndarray, b: np.ndarray, tolerance: Tolerance = Tolerance()) -> OutputDiff:
    """Compare `b` against reference `a` (module docstring: the criterion and its figures)."""
    a, b = _hbool(np.asarray(a), np.asarray(b)), _hbool(np.asarray(b), np.asarray(a))
    if a.shape != b.shape:
        return OutputDiff(name, passed=False, problem=f"shape {list(a.shape)} vs {list(b.shape)}")
    if a.dtype != b.dtype:
        return OutputDiff(name, passed=False, problem=f"dtype {a.dtype} vs {b.dtype}")
    if a.size == 0:
        return OutputDiff(name)
    if a.dtype.kind in "SUOV":  # strings, objects: equal or not
        same = bool(np.array_equal(a, b))
        return OutputDiff(name, 0.0 if same else np.inf, 0.0 if same else np.inf, 0.0 if same else np.inf, same)
    err, ref = _errors(a, b)
    peak = float(ref[np.isfinite(ref)].max(initial=0.0))
    rtol, atol = tolerance.rtol, tolerance.atol
    if a.dtype.kind in "biu" and tolerance.exact_integers:
        rtol, atol = 0.0, 0.0
    max_abs = float(err.max())
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(err == 0, 0.0, err / ref)
        scaled = 0.0 if max_abs == 0 else (max_abs / peak if peak > 0 else np.inf)
    passed = max_abs <= atol + rtol * peak
    return OutputDiff(name, max_abs, float(np.where(np.isnan(rel), np.inf, rel).max()), float(scaled), bool(passed))


def _hbool(x: np.ndarray, other: np.ndarray) -> np.ndarray:
    """`x` as bool when it is HDF5's native bool (uint8 0/1) and `other` is bool."""
    if x.dtype == np.uint8 and other.dtype == np.bool_ and (x <= 1).all():
        return x.astype(np.bool_)
    return x


def _errors(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(|a - b|, |a|) in float64; 0 error where both are the same NaN/infinity, inf where one
    side only is NaN or the infinities differ."""
    if a.dtype.kind in "biu":  # equality decided exactly, even beyond float64's 2**53
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        err = np.abs(a64 - b64)
        return np.where(a == b, 0.0, np.maximum(err, 1.0)), np.abs(a64)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    a64, b64 = a.astype(wide), b.astype(wide)
    same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a64 - b64)
    err = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))
    return err, np.abs(a64)


def compare_all(
    names: list[str], expected: list[np.ndarray], actual: list[np.ndarray], tolerance: Tolerance = Tolerance()
) -> list[OutputDiff]:
    if len(expected) != len(actual):
        raise ModelError(f"{len(expected)} outputs vs {len(actual)}")
    return [compare(n, a, b, tolerance) for n, a, b in zip(names, expected, actual)]


# ---- model against model ---------------------------------------------------------------------


def _check_signatures(model_a: Model, model_b: Model) -> None:
    """Refuse two models that cannot take the same inputs, naming both files (when read from one)."""
    a, b = model_a.graphs[0], model_b.graphs[0]
    name_a, name_b = (
        getattr(m.source, "path", None) or fallback for m, fallback in ((model_a, "model A"), (model_b, "model B"))
    )
    if len(a.inputs) != len(b.inputs) or len(a.outputs) != len(b.outputs):
        raise UsageError(
            f"{name_a} has {len(a.inputs)} input(s) and {len(a.outputs)} output(s), "
            f"{name_b} {len(b.inputs)} and {len(b.outputs)}"
        )
    for x, y in zip(a.inputs, b.inputs):
        if x.dtype != y.dtype or x.shape != y.shape:
            raise UsageError(
                f"input {x.name!r} is {x.dtype}{list(x.shape)} in {name_a} and {y.dtype}{list(y.shape)} in {name_b}"
            )


SampleSink = Callable[[int, list[np.ndarray], list[np.ndarray]], None]


def check_models(
    model_a: Model,
    model_b: Model,
    *,
    samples: int = 1,
    seed: int = 0,
    inputs: Iterable[list[np.ndarray]] | None = None,
    tolerance: Tolerance = Tolerance(),
    backend: str = "auto",
    on_sample: SampleSink | None = None,
    deadline: Deadline | None = None,
) -> CheckResult:
    """Run both models (subgraph 0) on the same inputs and compare B's outputs to A's.

    `inputs` (already conformed to the model's inputs) replaces the random samples; each sample
    is generated, run, compared and handed to `on_sample(index, inputs, expected)` before the
    next one exists."""
    graph_a = model_a.graphs[0]
    _check_signatures(model_a, model_b)
    if inputs is None:
        inputs = iter_random_inputs(graph_a, samples, seed)
    run_both = Backends([model_a, model_b], backend, deadline=deadline)
    names = [t.name for t in graph_a.outputs]
    result = CheckResult([OutputDiff(n) for n in names], run_both.description, 0, tolerance, [Spread(n) for n in names])
    for index, sample in enumerate(inputs):
        if deadline:
            deadline.check()
        want, got = run_both(sample)
        if on_sample:
            on_sample(index, sample, want)
        _tally(result, names, want, got)
    result.backend = run_both.description
    return result


def compare_to_expected(
    model: Model,
    inputs: Iterable[list[np.ndarray]],
    expected: Iterable[list[tuple[str, np.ndarray]]],
    *,
    tolerance: Tolerance = Tolerance(),
    backend: str = "auto",
    deadline: Deadline | None = None,
) -> CheckResult:
    """Run `model` on each sample of `inputs` and compare with the stored outputs of the same
    sample (matched to the model's outputs by name when the names match, else by position)."""
    graph = model.graphs[0]
    run = Backends([model], backend, deadline=deadline)
    names = [t.name for t in graph.outputs]
    result = CheckResult([OutputDiff(n) for n in names], run.description, 0, tolerance, [Spread(n) for n in names])
    for sample, stored in _zip_samples(inputs, expected):
        if deadline:
            deadline.check()
        want = [v for _, v in match_names(names, stored, what="expected file")]
        (got,) = run(sample)
        _tally(result, names, want, got)
    result.backend = run.description
    return result


def _tally(result: CheckResult, names: list[str], want: list[np.ndarray], got: list[np.ndarray]) -> None:
    """One more sample into `result`: its differences, and the reference's values for their spread."""
    for total, diff in zip(result.outputs, compare_all(names, want, got, result.tolerance)):
        total.merge(diff)
    for spread, value in zip(result.spreads, want):
        spread.add(value)
    result.samples += 1


def _zip_samples(first, second, what: str = "the input and expected files"):
    """Pairs of samples from two iterables that must be equally long."""
    first, second = iter(first), iter(second)
    while True:
        x, y = next(first, None), next(second, None)
        if x is None and y is None:
            return
        if x is None or y is None:
            raise UsageError(f"{what} hold different numbers of samples")
        yield x, y


def _bare(name: str) -> str:
    """A tensor name without ONE's ":0" suffix (TestDataGenerator appends it to names without a colon)."""
    return name[:-2] if name.endswith(":0") else name


def match_names(
    names: list[str], stored: list[tuple[str, np.ndarray]], *, what: str, named: bool = False, owner: str = ""
) -> list[tuple[str, np.ndarray]]:
    """`stored` values in the order of `names`: by name when the stored names are these names
    (ONE's ":0" suffix ignored), else by position, unless the file `named` its values: then names
    that differ are refused, naming both sides (`owner`: whose tensors `names` are)."""
    if len(stored) != len(names):
        raise UsageError(f"{what} has {len(stored)} values; {len(names)} expected")
    by_name = {_bare(n): (n, v) for n, v in stored}
    if len(by_name) == len(stored) and {_bare(n) for n in names} == set(by_name):
        return [by_name[_bare(n)] for n in names]
    if named:
        listed = lambda ns: ", ".join(map(repr, ns))  # noqa: E731
        raise UsageError(f"{what} names {listed(n for n, _ in stored)}; {owner} are {listed(names)}"[:400])
    return stored


def verify(
    original: Model,
    optimized: Model,
    samples: int,
    *,
    seed: int = 0,
    tolerance: Tolerance = Tolerance(),
    backend: str = "auto",
    deadline: Deadline | None = None,
) -> CheckResult:
    """check_models, raising CheckFailed (naming the failing outputs) when it does not pass."""
    result = check_models(
        original, optimized, samples=samples, seed=seed, tolerance=tolerance, backend=backend, deadline=deadline
    )
    if not result.passed:
        raise CheckFailed(result.failure_message(), result=result)
    return result


def compare_files(
    path_a: str, path_b: str, tolerance: Tolerance = Tolerance(), *, by_position: bool = False
) -> CheckResult | None:
    """Compare two h5 files in ONE's layout (or record-minmax files, record by record), value by
    value: by /name when both files name their values (a name without a partner is a difference),
    else, or `by_position`, by position (named after A). None when the files hold no sample."""
    from .h5io import count_samples, has_names, read_samples

    counts = count_samples(path_a), count_samples(path_b)
    if counts[0] != counts[1]:
        raise UsageError(f"{path_a} holds {counts[0]} sample(s), {path_b} {counts[1]}: each needs its partner")
    by_name = not by_position and has_names(path_a) and has_names(path_b)
    result = None
    for a, b in _zip_samples(read_samples(path_a), read_samples(path_b), f"{path_a} and {path_b}"):
        if not by_name and len(a) != len(b):
            raise UsageError(f"{path_a} has {len(a)} values, {path_b} has {len(b)}")
        pairs = _pair_by_name(a, b) if by_name else [(n, x, y) for (n, x), (_, y) in zip(a, b)]
        if result is None:
            result = CheckResult(
                [OutputDiff(n) for n, _, _ in pairs], "files", 0, tolerance, kind="tensor", spelling=str
            )
            result.by_name = by_name
        for total, (name, x, y) in zip(result.outputs, pairs):
            if x is None or y is None:
                total.merge(OutputDiff(name, passed=False, problem=f"only in {path_a if y is None else path_b}"))
            else:
                total.merge(compare(name, x, y, tolerance))
        result.samples += 1
    return result


def _pair_by_name(a: list[tuple[str, np.ndarray]], b: list[tuple[str, np.ndarray]]) -> list[tuple]:
    """(name, value in a or None, value in b or None): A's names in A's order, then the names only
    B has (ONE's ":0" suffix ignored)."""
    in_b = {_bare(n): v for n, v in b}
    in_a = {_bare(n) for n, _ in a}
    return [(n, x, in_b.get(_bare(n))) for n, x in a] + [(n, None, y) for n, y in b if _bare(n) not in in_a]
