"""The library's value commands: `check` (two models on the same inputs, or one against stored
outputs), `run` (one model's outputs written in ONE's h5 layout) and `h5diff` (two h5 files).
api.py exposes them as `bnfold.check`, `bnfold.run` and `bnfold.h5diff`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from . import arguments
from .check_names import DEFAULT_ATOL, DEFAULT_RTOL
from .errors import ModelError, UsageError
from .io.atomic import written_together
from .io.paths import refuse_numbered_clobber
from .io.reader import read_model
from .results import Ran


def check(
    model: str | os.PathLike,
    other: str | os.PathLike | None = None,
    *,
    inputs: Iterable[str] = (),
    expected: Iterable[str] = (),
    samples: int | None = None,
    seed: int | None = None,
    write_input: str | None = None,
    write_expected: str | None = None,
    force: bool = False,
    rtol: float | None = DEFAULT_RTOL,
    atol: float | None = DEFAULT_ATOL,
    backend: str = "auto",
    timeout: float | None = None,
    cast: bool = False,
    progress: Callable[[str], None] | None = None,
):
    """`bnfold check`: run `model` and `other` on the same inputs (the h5 files `inputs`, else
    `samples` random ones from `seed`, 1 and 0 by default, refused with `inputs`) and compare,
    or compare `model`'s outputs with the stored `expected` files (one per input file). Returns
    the CheckResult (`.passed`, `.table()`, `.failure_message()`); differing values are not an
    error here. write_input/write_expected store the inputs used and `model`'s outputs
    (file.N.h5 per sample when there are several).
    A missing `inputs` or `expected` path whose numbered series exists (in.h5: in.0.h5, in.1.h5,
    ...) stands for that series. CannotVerify when no backend ("auto", "litert", "reference") runs
    the models or `timeout` seconds pass. `progress(step)` hears each step: reading a model, each
    sample as it begins."""
    from .values import diff
    from .values import samples as sample_files
    from .values.deadline import Deadline

    inputs = sample_files.numbered_series(arguments.paths(inputs))
    expected = sample_files.numbered_series(arguments.paths(expected))
    if bool(other) == bool(expected):
        raise UsageError("give MODEL_B or --expected (with --input), not both and not neither")
    if expected and not inputs:
        raise UsageError("--expected needs the --input files its outputs came from")
    if expected and (write_input or write_expected):
        raise UsageError("--write-input/--write-expected go with MODEL_B, not --expected")
    (samples, seed), backend = arguments.random_sampling(inputs, samples, seed), arguments.backend(backend)
    tolerance = diff.Tolerance(
        arguments.tolerance_or(rtol, "rtol", DEFAULT_RTOL), arguments.tolerance_or(atol, "atol", DEFAULT_ATOL)
    )
    deadline = Deadline(timeout)
    count = sample_files.count_files(inputs) if inputs else samples
    if expected:
        _refuse_unequal_samples(inputs, count, expected, sample_files.count_files(expected))
    if other:  # MODEL_B, so no --expected: before any work
        refuse_numbered_clobber(
            {"--write-input": write_input, "--write-expected": write_expected},
            count,
            [os.fspath(model), os.fspath(other), *inputs],
            force,
        )
    step = progress or _silent
    step(f"reading {os.fspath(model)}")
    a = read_model(os.fspath(model))
    graph = a.graphs[0]
    owner = os.fspath(model)
    given = sample_files.input_samples(graph.inputs, inputs, cast=cast, owner=owner) if inputs else None
    if expected:
        assert given is not None  # --expected came with --input (refused above otherwise)
        stored = sample_files.expected_samples(expected, graph.outputs, owner)
        given = _announced(given, count, step)
        compared = diff.compare_to_expected(a, given, stored, tolerance=tolerance, backend=backend, deadline=deadline)
        compared.files = {"input": inputs, "expected": expected}
        return compared
    from .values.verify import settle_weak

    sink = sample_files.sample_sink(graph, count, write_input, write_expected)
    assert other is not None  # MODEL_B when no --expected (refused above otherwise)
    step(f"reading {os.fspath(other)}")
    b = read_model(os.fspath(other))

    def each(index: int, inputs: list, outputs: list) -> None:  # a sample done: written, the next announced
        if sink is not None:
            sink(index, inputs, outputs)
        if index + 1 < count:
            step(f"sample {index + 2} of {count}")

    step(f"sample 1 of {count}")
    with written_together():  # every h5 file of the run, or none
        result = diff.check_models(
            a,
            b,
            samples=samples,
            seed=seed,
            inputs=given,
            tolerance=tolerance,
            backend=backend,
            on_sample=each,
            deadline=deadline,
        )
    settle_weak(a, b, result, result.samples)  # a difference at a weak output, judged by the rewrites under it
    result.files = {"input": inputs} if inputs else {}
    return result


def _silent(step: str) -> None:
    """No one listens to the steps (the library's default)."""


def _announced(samples: Iterable, count: int, step: Callable[[str], None]) -> Iterator:
    """`samples`, each announced to `step` as it is taken."""
    for index, sample in enumerate(samples):
        step(f"sample {index + 1} of {count}")
        yield sample


def _refuse_unequal_samples(inputs: list[str], count: int, expected: list[str], stored: int) -> None:
    """Each --input sample has its --expected one: unequal counts (a series of one length beside
    files of another) are refused before any work, naming both sides."""
    if count != stored:
        named = lambda paths: paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"  # noqa: E731
        raise UsageError(
            f"the --input files hold {count} sample(s) ({named(inputs)}), the --expected files {stored} "
            f"({named(expected)}): each input needs its expected outputs"
        )


def run(
    model: str | os.PathLike,
    output: str,
    *,
    inputs: Iterable[str] = (),
    samples: int | None = None,
    seed: int | None = None,
    write_input: str | None = None,
    force: bool = False,
    backend: str = "auto",
    timeout: float | None = None,
    cast: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Ran:
    """`bnfold run`: run `model` on the h5 files `inputs` (or `samples` random inputs from
    `seed`, 1 and 0 by default, refused with `inputs`; also written to `write_input` if given)
    and write its outputs to `output` in ONE's h5 layout (out.N.h5 per sample when there are
    several), each sample as it is computed (all renamed into place together at the end). A
    missing `inputs` path whose numbered series exists stands for that series, as in check().
    `progress(step)` hears each step, as in check()."""
    from .values import samples as sample_files
    from .values.backend import Backends
    from .values.deadline import Deadline
    from .values.diff import iter_random_inputs

    inputs, model = sample_files.numbered_series(arguments.paths(inputs)), os.fspath(model)
    if not output:
        raise UsageError("--output needs a file name")
    if inputs and write_input:
        raise UsageError("--write-input writes random inputs; with --input they are already in files")
    (samples, seed), backend = arguments.random_sampling(inputs, samples, seed), arguments.backend(backend)
    count = sample_files.count_files(inputs) if inputs else samples
    refuse_numbered_clobber({"--output": output, "--write-input": write_input}, count, [model, *inputs], force)
    step = progress or _silent
    step(f"reading {model}")
    loaded = read_model(os.fspath(model))
    graph = loaded.graphs[0]
    deadline = Deadline(timeout)
    if inputs:
        given = sample_files.input_samples(graph.inputs, inputs, cast=cast, owner=model)
    else:
        given = iter_random_inputs(graph, samples, seed)
    write = sample_files.sample_sink(graph, count, write_input, output)
    runner = Backends([loaded], backend, deadline=deadline)
    with written_together():  # every h5 file of the run, or none
        for index, sample in enumerate(given):
            step(f"sample {index + 1} of {count}")
            deadline.check()
            write(index, sample, runner(sample)[0])
    names = [sample_files.sample_path(output, i, count) for i in range(count)]
    written_inputs = [sample_files.sample_path(write_input, i, count) for i in range(count)] if write_input else []
    return Ran(names, written_inputs, runner.description)


def h5diff(
    file_a: str,
    file_b: str,
    *,
    rtol: float | None = DEFAULT_RTOL,
    atol: float | None = DEFAULT_ATOL,
    delta: float | None = None,
    by_position: bool = False,
):
    """`bnfold h5diff`: compare two h5 files in ONE's layout value by value; returns the
    CheckResult. Values are matched by name when both files name them (a name only one file has
    is a difference), else or `by_position` by position; numbers compare whatever their byte
    order. `delta` is h5diff's -d: one absolute tolerance for every value, integers too.
    Files holding no values are an error (ModelError): a comparison of nothing proves nothing."""
    from .values.diff import Tolerance, compare_files

    if delta is None:
        tolerance = Tolerance(
            arguments.tolerance_or(rtol, "rtol", DEFAULT_RTOL), arguments.tolerance_or(atol, "atol", DEFAULT_ATOL)
        )
    else:
        tolerance = Tolerance(0.0, arguments.tolerance_or(delta, "delta", 0.0), exact_integers=False)
    result = compare_files(file_a, file_b, tolerance, by_position=by_position)
    if result is None or not result.outputs:
        raise ModelError(f"holds no values to compare (and so does {file_b})", file_a)
    return result
