"""bnfold as a library: the one layer the command line, Python programs and batch runs call.

    import bnfold
    result = bnfold.optimize("model.tflite")                          # the default passes
    result = bnfold.optimize(data, fuse_batchnorm_with_conv=True)     # bytes; one-optimize's keywords
    result = bnfold.optimize("model.circle", O1=True, check=3)        # bnfold's O1 (one.py GROUPS), value-checked
    data, report = result                                             # optimized bytes, report dict
    result.save("model.opt.circle")

    bnfold.optimize_file("in.tflite", "out.circle", check=3)          # what `bnfold optimize` does
    bnfold.convert("in.tflite", "out.circle")                         # `bnfold convert`
    bnfold.inspect("model.tflite", leftovers=True)                    # `bnfold inspect`
    bnfold.check("a.tflite", "b.circle", samples=10)                  # `bnfold check`: a CheckResult
    bnfold.run("model.tflite", "out.h5", samples=3, write_input="in.h5")   # `bnfold run`
    bnfold.h5diff("expected.h5", "out.h5")                            # `bnfold h5diff`
    bnfold.build_recipe("recipes/Net_Conv_BN_000.toml", "m.tflite")   # `bnfold recipe build`
    bnfold.test_recipes(["recipes"])                                  # `bnfold recipe test`

Each command of the CLI is one of these functions plus printing; `help(bnfold.<name>)` documents
each. Errors are raised as bnfold.errors types (UsageError: a bad argument or input file;
ModelError: a malformed model or h5 file; CheckFailed: values differ; CannotVerify: nothing could
run the model), each with the message the CLI prints.

Passes are chosen as on the command line: `passes` names them ("a,b" or a list), keywords switch
them on or off by their ONE names, nothing named runs the default set. `check=N` runs the original
and the optimized model on N random samples (`check_mode`, `rtol`, `atol` as `optimize
--check-mode/--rtol/--atol`) and raises CheckFailed (with `.result`, nothing returned or written)
if an output differs beyond tolerance. The report is a plain dict (JSON-ready): what ran, what
folded, what was refused and why, operator counts before and after, and the time each step took.

`load`, `save` and `apply_passes` work on the IR (`bnfold.ir.model.Model`) for tests and tools.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from . import arguments, results
from .check_names import BACKENDS as BACKENDS  # re-exported: the CLI offers them
from .check_names import CHECK_MODES as CHECK_MODES
from .check_names import CRITERION as CRITERION
from .engine import registry
from .engine.manager import InputPlanNeeded, run_passes
from .engine.report import Report
from .engine.targets import TARGETS as TARGETS  # re-exported: the CLI offers them
from .engine.targets import default_target
from .errors import BnfoldError, CheckFailed, InternalError, UsageError
from .io.atomic import WriteInfo, save_model, write_text, written_together
from .io.formats import Format, format_from_extension
from .io.gcpause import collecting, paused_gc
from .io.gcpause import pause_to_exit as pause_to_exit  # re-exported: the program's optimize (cli/optimize.py)
from .io.paths import (
    refuse_input_overwrite,
    refuse_run_files,
    refuse_side_file_clobber,
    refuse_unwritable,
)
from .io.reader import read_model
from .ir.model import Model
from .results import Inspection, Optimized, Ran, refuse_model_write
from .selection import Selection, read_config, select

if TYPE_CHECKING:  # at run time __getattr__ below imports them on first use
    from .value_commands import check, h5diff, run

MAX_SAMPLES, MAX_SEED = arguments.MAX_SAMPLES, arguments.MAX_SEED
PASSES = registry.PASSES  # every pass, in run order (name, summary, exact, default)
ModelInput = str | os.PathLike | bytes | bytearray | memoryview

__all__ = [
    "Optimized",
    "Inspection",
    "Ran",
    "optimize",
    "optimize_file",
    "convert",
    "inspect",
    "check",
    "run",
    "h5diff",
    "build_recipe",
    "test_recipes",
    "read_config",
    "select",
    "load",
    "save",
    "apply_passes",
    "PASSES",
]


LAZY = {"check": "value_commands", "run": "value_commands", "h5diff": "value_commands"}


def __getattr__(name: str):
    """The value commands (check, run, h5diff: value_commands.py) on first use: only a run that
    uses them pays for loading them and what they import (tests/test_layers.py: what `optimize`
    imports). Many models in one run are batch.py's (`bnfold.optimize_many`), built on this module."""
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY))


# ---- the IR ----------------------------------------------------------------------------------


def load(path: str | os.PathLike) -> Model:
    """Read a .tflite or .circle file into the IR (validated; UsageError/ModelError if not)."""
    return read_model(os.fspath(path))


def save(
    model: Model,
    path: str | os.PathLike,
    *,
    fmt: Format | None = None,
    external: bool = False,
    keep_unchanged: bool = False,
    in_place: bool = False,
) -> WriteInfo:
    """Write `model` atomically (format from the extension unless `fmt`); with `keep_unchanged`, a
    model nothing changed is kept as the input's bytes (see io.atomic.save_model). The file it
    was read from is replaced only with `in_place`; a path the CLI would refuse is a UsageError."""
    path = os.fspath(path)
    refuse_model_write(model, path, in_place)
    return save_model(model, path, fmt or format_from_extension(path), external=external, keep_unchanged=keep_unchanged)


def apply_passes(
    model: Model,
    passes: list[str] | None = None,
    target: str | None = None,
    writes: Format | None = None,
    *,
    plan_input: bool = True,
) -> Report:
    """Run `passes` (the default set when None; pass parameters such as nchw_to_nhwc_input_shape
    may be among them) over every subgraph of the IR `model` to a fixpoint, in place, for the
    runtime `target` ("litert", "onert", "any"; None: the format's) and the format the model will
    be written in (`writes`: a Circle-only operator only where it is Circle; None: the model's
    own); the Report says what folded and what was refused. `plan_input=False`: for a caller
    that can run them again on the model as read (engine/manager.py: InputPlanNeeded)."""
    names = registry.default_passes() if passes is None else passes
    parameters = registry.parameters_in(names)
    return run_passes(
        model, registry.resolve(names), parameters=parameters, target=target, writes=writes, plan_input=plan_input
    )


@contextlib.contextmanager
def _as_written(model: Model, writes: Format | None, output: str | None) -> Iterator[Model]:
    """`model` as OUT (`output`) will hold it, for the value check: written in `writes` and read
    back when that is another format than the model's (a TFLite model written as Circle is checked
    as the Circle it becomes, so that onert, which runs Circle's own operators, can run it); else
    itself. What OUT's format cannot hold is said of OUT, as the write would say it."""
    if writes is None or writes.name == model.format.name:
        yield model
        return
    import tempfile  # only a check across formats needs a scratch file

    with tempfile.TemporaryDirectory(prefix="bnfold-check-") as scratch:
        written = os.path.join(scratch, "out" + writes.extension)
        try:
            save_model(model, written, writes)
        except BnfoldError as e:  # what the write of OUT would say, of OUT
            if e.path == written:
                e.path = output or e.path
            raise
        yield read_model(written)


def load_reference(path: str, report: Report) -> Model:
    """The model at `path` as the optimized one must match it: with the interface change the run
    made (report.interface: 4-D inputs/outputs made NHWC), and nothing else, applied."""
    return registry.with_interface_of(load(path), report.interface)


# ---- optimize --------------------------------------------------------------------------------


def optimize(
    model: ModelInput,
    passes: str | Iterable[str] | Selection | None = None,
    *,
    check: int | None = None,
    check_mode: str = "auto",
    check_backend: str = "auto",
    rtol: float | None = None,
    atol: float | None = None,
    check_seed: int = 0,
    strict: bool = False,
    target: str | None = None,
    **options: bool,
) -> Optimized:
    """Optimize `model`, a .tflite/.circle path or a file's bytes; nothing is written.

    passes: names ("a,b" or a list) that run, or None for the default set (or a Selection).
    **options: ONE's option names switched on or off (`O1=True`, `fuse_batchnorm_with_conv=True`);
        naming any replaces the default set, as on one-optimize's command line.
    strict: refuse ONE options bnfold does not implement (else they are listed in the report).
    target: the runtime the result is made for, "litert", "onert" or "any" (only operators the input
        had); None: the input's format's (.tflite: litert, .circle: onert). No pass makes what it
        cannot run (engine/targets.py).
    check: value-check the result on this many random samples (1..100000); raises CheckFailed if
        an output differs beyond tolerance (rtol/atol; defaults as `optimize --check`), CannotVerify
        if the check cannot be carried out. check_mode: "auto", "whole" or "local". check_backend: who
        runs the whole-model check ("auto", "onert", "litert", "reference", as `check`'s backend).
        check_seed: the seed of its samples (`optimize --check N --seed S`: the samples `check --seed S`
        and `recipe test --seed S` draw).
    Returns an Optimized: `.data` (bytes), `.report` (dict), `.save(path)`; unpacks as data, report.
    """
    if isinstance(model, Model):
        raise TypeError(
            "bnfold.optimize takes a path or a file's bytes; run passes over a loaded Model "
            "with bnfold.api.apply_passes(model, passes)"
        )
    chosen = arguments.selection(passes, options, strict)
    checking = arguments.checking(check, check_mode, rtol, atol, check_seed, check_backend)
    checking["target"] = arguments.target(target)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _from_bytes(bytes(model), chosen, checking)
    return _optimize_path(os.fspath(model), chosen, **checking)


def optimize_file(
    input_path: str | os.PathLike,
    output_path: str | os.PathLike | None = None,
    passes: str | Iterable[str] | Selection | None = None,
    *,
    in_place: bool = False,
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
    node_data: str | None = None,
    node_data_input: str | None = None,
    progress: Callable[[str], None] = lambda step: None,
    **options: bool,
) -> Optimized:
    """`bnfold optimize`: optimize `input_path` and write `output_path` (format from its
    extension), as optimize() chooses and checks; `.written` says what happened to the file.
    `target` defaults to OUT's format's runtime (.tflite: litert, .circle: onert).

    Every refusal comes before any work: the output may be the input only with `in_place` (then
    `output_path` may be omitted), must not be one of `run_files` (e.g. the cfg) and must be
    writable; `report` (a JSON path) must not be a file of this run nor, without `force`, an
    existing model; so must `node_data` and `node_data_input` (Model Explorer node data of the
    output and of the input; they need the [explorer] extra). The model and these files appear
    together or not at all. A model no pass changed is copied byte for byte (or, in place, left
    untouched). A failed check writes no model, only the `report` (with the check's table and
    verdict); the CheckFailed carries that report as `.report`.
    `progress(step)` is called as each step begins: "reading", "passes", "check", "writing".
    """
    input_path = os.fspath(input_path)
    output_path = os.fspath(output_path) if output_path is not None else (input_path if in_place else None)
    if output_path is None:
        raise UsageError("need an output path (or in_place)")
    chosen = arguments.selection(passes, options, strict)
    checking = arguments.checking(check, check_mode, rtol, atol, check_seed, check_backend)
    run_files = list(run_files)
    refuse_input_overwrite(input_path, output_path, in_place)
    refuse_run_files(output_path, "OUT", run_files)
    check_output_path(output_path)
    if report:
        refuse_side_file_clobber(report, "--report", [input_path, output_path, *run_files], force)
        check_output_path(report, model=False)
    overlays = {
        option: path for option, path in (("--node-data", node_data), ("--node-data-input", node_data_input)) if path
    }
    if overlays:
        from .explorer import require

        require()
    for option, path in overlays.items():
        others = [p for o, p in overlays.items() if o != option]
        refuse_side_file_clobber(path, option, [input_path, output_path, report, *others, *run_files], force)
        check_output_path(path, model=False)
    fmt = format_from_extension(output_path)
    made_for = arguments.target(target) or default_target(fmt.name)
    # one collector pause from reading to writing (_optimize_path says why; a check resumes it):
    # the model is then walked at most once, by the first collection after it
    with paused_gc():
        try:
            result = _optimize_path(
                input_path, chosen, progress=progress, target=made_for, writes=fmt, output=output_path, **checking
            )
        except CheckFailed as e:  # no model, but the report a CI job needs then: the check's table and verdict
            if report:
                import json  # only a report asked for needs it (~3 ms of a start)

                write_text(report, json.dumps(e.report, indent=2), UsageError)
            raise
        original = load(input_path) if node_data_input else None  # before an in-place write replaces it
        progress("writing")
        with written_together():
            result.save(output_path, fmt=fmt, external=external_buffers, keep_unchanged=True, in_place=in_place)
            if report:
                write_text(report, result.to_json(), UsageError)
            if node_data:
                write_text(node_data, result.node_data().to_json_string(indent=2), UsageError)
            if node_data_input:
                write_text(node_data_input, result.input_node_data(original).to_json_string(indent=2), UsageError)
    return result


def _optimize_path(
    path: str,
    chosen: Selection,
    *,
    check: int | None = None,
    label: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    check_mode: str = "auto",
    check_seed: int = 0,
    check_backend: str = "auto",
    target: str | None = None,
    writes: Format | None = None,
    output: str | None = None,
    progress=lambda step: None,
) -> Optimized:
    """Read `path`, run the chosen passes for the format the result will be written in (`writes`;
    None: the input's), measure lossy changes, optionally value-check (values/verify.py) the model
    as OUT (`output`, which an error then names) will hold it; `label` names the input in the
    report; `progress(step)` hears each step."""
    times = {}
    # Reading and the passes run with the cyclic collector paused, as the reader and the writer do
    # (io/gcpause.py): they allocate objects by the hundred thousand, all alive until the end or
    # freed by their reference counts (a removed op drops its links), and each collection walked
    # the whole IR again (~15% of the CPU of a 36k-operator graph's run). The value check and the
    # lossy measurement, which run interpreters, keep it on.
    with paused_gc():
        progress("reading")
        start = time.perf_counter()
        model = load(path)
        times["read"] = time.perf_counter() - start
        before = dict(model.op_counts())
        progress("passes")
        start = time.perf_counter()
        try:
            try:
                log = apply_passes(model, chosen.names(), target, writes, plan_input=False)
            except InputPlanNeeded:  # an output with a clobber (rare): again, on the input read anew, with its plan
                model = load(path)
                log = apply_passes(model, chosen.names(), target, writes)
        except InternalError as e:  # the gate names the pass; the input names the model (--out-dir lists many)
            e.path = e.path or path
            raise
        times["passes"] = time.perf_counter() - start
    lossy_passes = registry.lossy_passes_in(log.folds)
    if lossy_passes:  # their error, measured (values/: only a run a lossy pass changed loads it)
        from .values.lossy import measure_lossy

        with collecting():  # it runs interpreters: their garbage is collected
            lossy = measure_lossy(lambda: load_reference(path, log), model, lossy_passes)
        log.notes += [lossy] if lossy else []
    checked = None
    if check:
        from .values.verify import check_tolerance, verify_optimized

        progress("check")
        start = time.perf_counter()
        tolerance = check_tolerance(log.folds, rtol, atol)
        try:
            with collecting(), _as_written(model, writes, output) as written:  # interpreters: garbage collected
                checked, check_note = verify_optimized(
                    load_reference(path, log),
                    written,
                    check,
                    tolerance=tolerance,
                    mode=check_mode,
                    backend=check_backend,
                    folds=log.folds,
                    seed=check_seed,
                )
        except CheckFailed as e:  # the report still tells what ran and how the check failed
            times["check"] = time.perf_counter() - start
            e.report = failed = results.optimize_report(path, label, model, log, before, chosen, times)
            failed["check"] = {
                "rtol": tolerance.rtol,
                "atol": tolerance.atol,
                "seed": check_seed,
                **results.failed_check(e),
            }
            raise
        times["check"] = time.perf_counter() - start
    check_entry = None
    if checked is not None:
        passed, seed = checked.passed, check_seed
        check_entry = {"rtol": tolerance.rtol, "atol": tolerance.atol, "seed": seed, "passed": passed, **check_note}
    # the report is made when first asked for (results.Optimized.report)
    report = results.deferred_report(path, label, model, log, before, chosen, times, check_entry)
    return Optimized(model, report, checked, lossy=bool(lossy_passes))


def _from_bytes(data: bytes, chosen: Selection, checking: dict) -> Optimized:
    """The reader maps a file, so the bytes go to a temporary file first; the mapping outlives
    the file's name (unlinked at once), and unchanged buffers are copied from it as usual. An
    error names the input "<bytes>", never the temporary file."""
    import tempfile

    from .errors import BnfoldError

    with tempfile.NamedTemporaryFile(prefix="bnfold-", suffix=".model", delete=False) as f:
        f.write(data)
    try:
        return _optimize_path(f.name, chosen, label="<bytes>", **checking)
    except BnfoldError as e:
        if e.path == f.name:
            e.path = "<bytes>"
        raise
    finally:
        os.unlink(f.name)


def check_output_path(path: str, *, model: bool = True) -> None:
    """Refuse, before any work, an output path that cannot be written (io/paths.py:
    refuse_unwritable). (`model`: the path must then be a model file.)"""
    refuse_unwritable(path, UsageError, what="a model file" if model else "a file")


# ---- convert, inspect ------------------------------------------------------------------------


def convert(
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    *,
    external_buffers: bool = False,
    in_place: bool = False,
) -> WriteInfo:
    """`bnfold convert`: write the model as the format `output_path`'s extension names (.tflite
    or .circle); an unchanged model in its own format and layout is copied byte for byte."""
    input_path, output_path = os.fspath(input_path), os.fspath(output_path)
    refuse_input_overwrite(input_path, output_path, in_place)
    check_output_path(output_path)
    fmt = format_from_extension(output_path)
    return save(
        load(input_path), output_path, fmt=fmt, external=external_buffers, keep_unchanged=True, in_place=in_place
    )


def inspect(path: str | os.PathLike, *, leftovers: bool = False, report: str | dict | None = None) -> Inspection:
    """`bnfold inspect`: the model at `path`; with `leftovers`, its batch-norm candidates and,
    given `report` (the optimize report, a dict or a JSON path, of the run that wrote the model),
    why each one stayed."""
    if report is not None and not leftovers:
        raise UsageError("a report goes with leftovers")
    if isinstance(report, str):
        report = results.read_report(report)
    model = load(path)
    if not leftovers:
        return Inspection(model)
    from .engine.leftovers import listing, transpose_listing

    rows, unmatched = listing(model, report)
    return Inspection(model, rows, unmatched, transpose_listing(model, report))


# ---- recipes ---------------------------------------------------------------------------------


def build_recipe(recipe_path: str | os.PathLike, output_path: str | os.PathLike) -> Model:
    """`bnfold recipe build`: the model a TOML recipe describes, written to `output_path`
    (.tflite or .circle)."""
    from .recipe.chef import build_file

    recipe_path, output_path = os.fspath(recipe_path), os.fspath(output_path)
    refuse_run_files(output_path, "OUT", [recipe_path])
    check_output_path(output_path)
    return build_file(recipe_path, output_path)


def test_recipes(
    recipes: Iterable[str],
    *,
    samples: int = 2,
    seed: int = 1,
    backend: str = "auto",
    junit: str | None = None,
    force: bool = False,
    on_outcome: Callable | None = None,
) -> list:
    """`bnfold recipe test`: value-test recipe files (a directory stands for its *.toml) as CI
    would (recipe/ci.py); returns one Outcome each (`.passed`, `.line()`), passing each to
    `on_outcome` as it is known. `junit`: also write the outcomes as JUnit XML."""
    import tempfile
    from pathlib import Path

    from .recipe import ci

    samples, seed, backend = arguments.count(samples, "samples"), arguments.seed(seed), arguments.backend(backend)
    paths = ci.recipe_paths([os.fspath(r) for r in recipes])
    if junit:
        refuse_side_file_clobber(junit, "--junit", [str(p) for p in paths], force)
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="bnfold-recipe-test-") as workdir:
        for path in paths:
            outcomes.append(ci.run_recipe_test(path, Path(workdir), samples=samples, seed=seed, backend=backend))
            if on_outcome:
                on_outcome(outcomes[-1])
    if junit:
        write_text(junit, ci.junit_xml(outcomes), UsageError)
    return outcomes
