"""The `bnfold` command line. Commands only: the work is in api.py and below.

Every failure is one line on stderr and a non-zero exit: 2 for usage errors, 1 for model errors.
Set BNFOLD_DEBUG=1 to see the traceback of an unexpected error.

Each command imports the model I/O it needs (api, pipeline, check, recipe) inside its function,
so start-up pays only for the command run: `bnfold passes` or `--help` load neither numpy nor
the bindings.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys

import click

from . import one, selection
from .errors import BnfoldError, CheckFailed, Interrupted, UsageError
from .io.atomic import write_text
from .io.paths import refuse_run_files, refuse_side_file_clobber
from .passes import registry


class NonNegative(click.ParamType):
    """A finite number >= 0 (a tolerance: NaN, inf and negative values are usage errors)."""

    name = "TOL"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number) or number < 0:
            self.fail(f"{value!r} must be a finite number >= 0", param, ctx)
        return number


class Seconds(NonNegative):
    name = "SECONDS"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if number == 0:
            self.fail("must be greater than 0", param, ctx)
        return number


TOLERANCE = NonNegative()
MAX_SAMPLES = 100_000  # --samples, --check: bounds the work, not the memory (samples stream)
SAMPLES = click.IntRange(1, MAX_SAMPLES)
SEED = click.IntRange(0, 2**32 - 1)


class _ReaderGone(Exception):
    """stdout's reader closed the pipe. Raised in place of BrokenPipeError, which click would
    turn into exit status 1."""


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _ReaderGone() from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bnfold")
def main():
    """Fold batch normalization and its neighbours into conv-like layers of TFLite and Circle models."""


def _pass_flags(function):
    """One boolean --<pass_name> flag per registered pass, generated from the registry; a hidden one
    per ONE option bnfold does not implement, so a one-optimize command line is accepted (and warned
    about) rather than refused."""
    for name in sorted((one.PASS_OPTIONS | set(one.UTILITY_OPTIONS)) - set(registry.BY_NAME), reverse=True):
        function = click.option(f"--{name}", name, is_flag=True, default=False, hidden=True)(function)
    for spec in reversed(registry.PASSES):
        kind = "exact" if spec.exact else "LOSSY"
        function = click.option(f"--{spec.name}", spec.name, is_flag=True, default=False,
                                help=f"[{kind}] {spec.summary}")(function)
    return function


def _print_counts(before, after, echo) -> None:
    kinds = sorted(set(before) | set(after), key=lambda k: (-before.get(k, 0), k))
    width = max([len(k) for k in kinds] + [8])
    echo(f"{'operator':<{width}}  {'before':>7}  {'after':>7}")
    for k in kinds:
        b, a = before.get(k, 0), after.get(k, 0)
        mark = "" if a == b else "  *"
        echo(f"{k:<{width}}  {b:>7}  {a:>7}{mark}")
    echo(f"{'total':<{width}}  {sum(before.values()):>7}  {sum(after.values()):>7}")


def _one_path(what: str, positional: str | None, option: str | None) -> str | None:
    if positional and option and positional != option:
        raise UsageError(f"{what} given twice: {positional!r} and {option!r}")
    return positional or option


@main.command()
@click.argument("input_path", required=False, metavar="IN")
@click.argument("output_path", required=False, metavar="OUT")
@click.option("-i", "--input_path", "--input", "input_option", metavar="IN", help="The input model (one-optimize's spelling of IN).")
@click.option("-o", "--output_path", "--output", "output_option", metavar="OUT", help="The output model (one-optimize's spelling of OUT).")
@click.option("--passes", default=None, metavar="A,B", help="Comma-separated passes to run ('' runs none). Default: the exact default set.")
@click.option("-O", "group", default=None, metavar="1",
              help="-O1: run the passes of ONE's O1 group that bnfold implements (the others are listed).")
@_pass_flags
@click.option("-C", "--config", "config_path", type=str, default=None,
              help="one-cmds configuration file; reads its [one-optimize] section (and [onecc] include=O1).")
@click.option("--strict", is_flag=True, help="Refuse (exit 2) ONE options bnfold does not implement, instead of warning.")
@click.option("--force", is_flag=True, help="Let --report replace an existing model file (never this run's own).")
@click.option("--report", "report_path", default=None, metavar="R.json",
              help="Write the report (passes, folds, refusals, operator counts, times) as JSON; '-' for stdout.")
@click.option("--external-buffers", is_flag=True, help="Store weights after the flatbuffer (Buffer.offset/size layout).")
@click.option("--in-place", is_flag=True, help="Allow OUT to be IN (or omit OUT) and overwrite it.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@click.option("--check", "check_samples", type=SAMPLES, default=None, metavar="N",
              help="Value-check the result against IN on N random samples before writing; write nothing if it fails.")
@click.option("--rtol", type=TOLERANCE, default=None,
              help="--check: |a-b| <= atol + rtol*max|a| per output. Default 1e-5 (1e-2 when float16 weights were rewritten).")
@click.option("--atol", type=TOLERANCE, default=None, help="--check: absolute tolerance. Default 1e-5.")
@click.option("--check-mode", type=click.Choice(["auto", "whole", "local"]), default="auto", show_default=True,  # check.verify.MODES
              help="--check: the whole model, each rewrite on its own, or auto (whole when a backend runs the model, else local).")
def optimize(input_path, output_path, input_option, output_option, passes, group, config_path, strict, force, report_path,
             external_buffers, in_place, quiet, check_samples, rtol, atol, check_mode, **flags):
    """Run passes over IN and write the result to OUT (format from OUT's extension)."""
    from . import api, pipeline
    config = selection.read_config(config_path) if config_path else None
    switches = dict(config.switches) if config else {}
    switches.update({name: True for name, on in flags.items() if on})  # the command line wins, as in ONE
    if group is not None:
        if f"O{group}" not in one.GROUPS:
            raise UsageError(f"-O{group}: bnfold knows the group(s) {', '.join('-' + g for g in one.GROUPS)}")
        switches[f"O{group}"] = True
    input_path = _one_path("IN", input_path, input_option) or (config and config.input_path)
    output_path = _one_path("OUT", output_path, output_option) or (config and config.output_path) or (
        input_path if in_place else None)
    if not input_path or not output_path:
        raise UsageError("need IN and OUT (as arguments, -i/-o, or input_path/output_path in --config)")
    chosen = selection.select(passes, switches, default=config is None, strict=strict)
    to_stdout = report_path == "-"
    echo = functools.partial(click.echo, err=to_stdout)  # stdout carries the JSON then
    for line in chosen.warnings():
        click.echo(f"bnfold: {line}", err=True)
    if not quiet:
        for line in chosen.notes():
            echo(line)
    api.refuse_overwrite(input_path, output_path, in_place)
    refuse_run_files(output_path, "OUT", [config_path])
    api.check_output_path(output_path)
    if report_path and not to_stdout:
        refuse_side_file_clobber(report_path, "--report", [input_path, output_path, config_path], force)
        api.check_output_path(report_path, model=False)
    fmt = api.format_from_extension(output_path)
    try:
        result = pipeline.run(input_path, chosen, check=check_samples or 0, rtol=rtol, atol=atol, check_mode=check_mode)
    except CheckFailed as e:
        if getattr(e, "result", None) is not None:
            click.echo(e.result.table(), err=to_stdout)
        raise
    info = result.save(output_path, fmt=fmt, external=external_buffers, keep_unchanged=True)
    report = result.report
    if to_stdout:
        click.echo(result.to_json())
    elif report_path:  # after the model, so a failed write leaves neither behind
        write_text(report_path, result.to_json(), UsageError)
    lossy = next((n for n in report["notes"] if "lossy_passes" in n), None)
    if lossy is not None and quiet:  # a lossy change is never silent
        click.echo(api.describe_lossy(lossy), err=True)
    if quiet:
        return
    _print_counts(report["operators"]["before"], report["operators"]["after"], echo)
    for name, (folds, skips) in _fold_counts(report).items():
        echo(f"{name}: {folds} folded, {skips} skipped")
    float16 = sum(1 for f in report["folds"] if f.get("float16_weights"))
    if float16:
        echo(f"float16: {float16} fold(s) rewrote float16 weights, each weight rounded once more "
             "(relative error <= 2^-11 per weight; see the report)")
    if not report["converged"]:
        echo(f"warning: passes still changing the model after {report['rounds']} rounds; stopped")
    if lossy is not None:
        echo(api.describe_lossy(lossy))
    if result.check is not None:
        checked, worst = result.check, result.check.worst
        echo(f"check: {checked.samples} sample(s) on {checked.backend}, {checked.scope} within {checked.tolerance} "
             f"(scaled err {worst.scaled:.3e}, max abs err {worst.max_abs:.3e})")
    echo(_written(info, input_path))


def _written(info, input_path: str) -> str:
    """The last line of a write: what happened to the output file."""
    if not info.written:
        return f"unchanged: {input_path} left as it is"
    if info.unchanged:
        return f"unchanged: wrote {info.path} (a copy of {input_path})"
    return f"wrote {info.path}"


def _fold_counts(report: dict) -> dict[str, tuple[int, int]]:
    from .passes.report import pass_counts

    return pass_counts(report)


def _refuse_sample_clobber(outputs: dict[str, str | None], count: int, run_files: list[str], force: bool) -> None:
    """Every h5 file the options in `outputs` will write (one per sample), checked as side files:
    never one of this run's files or another option's, never a model without --force."""
    from .check.samples import sample_path

    paths = {option: [sample_path(path, i, count) for i in range(count)] for option, path in outputs.items() if path}
    for option, mine in paths.items():
        others = [p for o, theirs in paths.items() if o != option for p in theirs]
        for path in mine:
            refuse_side_file_clobber(path, option, [*run_files, *others], force)


@main.command()
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--external-buffers", is_flag=True, help="Store weights after the flatbuffer (Buffer.offset/size layout).")
@click.option("--in-place", is_flag=True, help="Allow OUT to be IN and overwrite it.")
def convert(input_path, output_path, external_buffers, in_place):
    """Write IN as OUT, in the format OUT's extension names (.tflite or .circle)."""
    from . import api
    api.refuse_overwrite(input_path, output_path, in_place)
    fmt = api.format_from_extension(output_path)
    model = api.load(input_path)
    info = api.save(model, output_path, fmt=fmt, external=external_buffers, keep_unchanged=True)
    layout = "offset buffers" if info.external else "standard"
    click.echo(f"{_written(info, input_path)} ({info.format}, {layout} layout, {info.size} bytes)")


@main.command()
@click.argument("model_path", metavar="MODEL")
@click.option("--operators", is_flag=True, help="List every operator with its inputs and outputs.")
@click.option("--tensors", is_flag=True, help="List every tensor.")
@click.option("--leftovers", is_flag=True,
              help="List the batch-norm candidates (MUL/ADD/SUB/DIV by a per-channel or scalar constant) and where they sit.")
@click.option("--report", "report_path", default=None, metavar="R.json",
              help="With --leftovers: the report of the optimize run that wrote MODEL, to say why each candidate stayed.")
def inspect(model_path, operators, tensors, leftovers, report_path):
    """Print operator counts of MODEL (and, optionally, its operators, tensors and batch-norm leftovers)."""
    from . import api
    if report_path and not leftovers:
        raise UsageError("--report needs --leftovers")
    report = _read_report(report_path) if report_path else None
    model = api.load(model_path)
    click.echo(f"{model_path}: {model.format.name}, {len(model.graphs)} subgraph(s), {len(model.buffers)} buffers")
    for kind, count in sorted(model.op_counts().items(), key=lambda kv: (-kv[1], kv[0])):
        click.echo(f"{kind:<24} {count}")
    for gi, graph in enumerate(model.graphs):
        if operators:
            click.echo(f"subgraph {gi} {graph.name or ''}".rstrip())
            for i, op in enumerate(graph.ops):
                ins = ", ".join("-" if t is None else t.name for t in op.inputs)
                outs = ", ".join(t.name for t in op.outputs)
                act = f" [{op.fused_activation}]" if op.fused_activation != "NONE" else ""
                click.echo(f"  {i:>4} {op.kind}{act} ({ins}) -> ({outs})")
        if tensors:
            click.echo(f"subgraph {gi} tensors")
            for i, t in enumerate(graph.tensors):
                const = " const" if t.is_const else ""
                click.echo(f"  {i:>4} {t.name} {t.dtype}{list(t.shape)}{const}")
    if leftovers:
        _print_leftovers(model, report, report_path)


def _read_report(path: str) -> dict:
    import json

    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except FileNotFoundError:
        raise UsageError("report not found", path) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"not a JSON report: {str(e).splitlines()[0]}", path) from None
    skips = report.get("skips") if isinstance(report, dict) else None
    if not isinstance(skips, list) or not all(isinstance(s, dict) and isinstance(s.get("at"), dict) for s in skips):
        raise UsageError("not a bnfold optimize report (no list of skips)", path)
    return report


def _print_leftovers(model, report: dict | None, report_path: str | None) -> None:
    from .passes.leftovers import listing

    rows, unmatched = listing(model, report)
    click.echo(f"batch-norm candidates: {len(rows)}")
    for r in rows:
        act = f" [{r['activation']}]" if r["activation"] != "NONE" else ""
        axis = "a scalar" if r["axis"] is None else f"along axis {r['axis']} of {r['data_shape']}"
        via = " behind a DEQUANTIZE" if r["dequantized"] else ""
        click.echo(f"  subgraph {r['subgraph']} #{r['index']} {r['kind']}{act} -> {r['output']!r}")
        click.echo(f"      constant {r['constant']!r} {r['dtype']}{r['shape']}{via}, {axis}")
        click.echo(f"      data from {r['data_from']}; read by {', '.join(r['read_by']) or 'nothing'}")
        if len(r["chain"]) > 1:
            click.echo(f"      chain {' -> '.join(r['chain'])}")
        if report is not None:
            if r["reason"] is None:
                click.echo("      stays: (no entry in the report: is it the report of the run that wrote this model?)")
            else:
                by = ", ".join(r["passes"]) or "no pass spoke; from where it sits"
                click.echo(f"      stays: {r['reason']} [{by}]")
    if unmatched:
        click.echo(f"warning: {len(unmatched)} skip entries of {report_path} name no candidate of this model "
                   f"(first: {unmatched[0][1]} -> {unmatched[0][2]!r})")


def _value_options(function):
    """The options `check` and `run` share: inputs, casting, backend, time limit."""
    for option in reversed([
        click.option("--input", "input_files", multiple=True, metavar="in.h5",
                     help="Inputs in ONE's h5 layout (repeatable; a record-minmax file holds several samples)."),
        click.option("--cast", is_flag=True, help="Convert --input data of another dtype (refused if a value would change)."),
        click.option("--backend", type=click.Choice(["auto", "litert", "reference"]), default="auto", show_default=True,
                     help="auto: LiteRT when it loads the model(s), else the reference interpreter."),
        click.option("--timeout", type=Seconds(), default=None, metavar="SECONDS",
                     help="Give up (exit 4) after this long."),
    ]):
        function = option(function)
    return function


@main.command()
@click.argument("model_a", metavar="MODEL")
@click.argument("model_b", metavar="[MODEL_B]", required=False)
@_value_options
@click.option("--expected", "expected_files", multiple=True, metavar="expected.h5",
              help="Stored outputs to compare MODEL's with (one per --input file, in order), instead of MODEL_B.")
@click.option("--samples", type=SAMPLES, default=1, show_default=True, help="Random samples when no --input is given.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--write-input", metavar="in.h5", default=None, help="Write the inputs used (file.N.h5 per sample when N > 1).")
@click.option("--write-expected", metavar="expected.h5", default=None, help="Write MODEL's outputs (file.N.h5 per sample when N > 1).")
@click.option("--force", is_flag=True, help="Let --write-input/--write-expected replace existing model files (never this run's own).")
@click.option("--rtol", type=TOLERANCE, default=1e-5, show_default=True, help="Relative tolerance: |a-b| <= atol + rtol*max|a| per output.")
@click.option("--atol", type=TOLERANCE, default=1e-5, show_default=True, help="Absolute tolerance. Integers must match exactly.")
def check(model_a, model_b, input_files, cast, backend, timeout, expected_files, samples, seed, write_input, write_expected, force,
          rtol, atol):
    """Compare MODEL's outputs with MODEL_B's on the same inputs, or with stored --expected outputs;
    exit 0 only if all match (1: they differ, 4: no backend could run them)."""
    from . import api
    from .check import diff, samples as sample_files
    from .check.deadline import Deadline

    if bool(model_b) == bool(expected_files):
        raise UsageError("give MODEL_B or --expected (with --input), not both and not neither")
    if expected_files and not input_files:
        raise UsageError("--expected needs the --input files its outputs came from")
    if expected_files and (write_input or write_expected):
        raise UsageError("--write-input/--write-expected go with MODEL_B, not --expected")
    tolerance, deadline = diff.Tolerance(rtol, atol), Deadline(timeout)
    a = api.load(model_a)
    graph = a.graphs[0]
    inputs = sample_files.input_samples(graph.inputs, list(input_files), cast=cast) if input_files else None
    if expected_files:
        result = diff.compare_to_expected(a, inputs, sample_files.expected_samples(list(expected_files)),
                                          tolerance=tolerance, backend=backend, deadline=deadline)
    else:
        count = sample_files.count_files(list(input_files)) if input_files else samples
        _refuse_sample_clobber({"--write-input": write_input, "--write-expected": write_expected}, count,
                               [model_a, model_b, *input_files], force)
        sink = sample_files.sample_sink(graph, count, write_input, write_expected)
        result = diff.check_models(a, api.load(model_b), samples=samples, seed=seed, inputs=inputs, tolerance=tolerance,
                                   backend=backend, on_sample=sink, deadline=deadline)
    click.echo(result.table())
    click.echo(f"backend {result.backend}, {result.samples} sample(s), {diff.CRITERION}, {tolerance}")
    if not result.passed:
        raise CheckFailed(result.failure_message())


@main.command(name="run")
@click.argument("model_path", metavar="MODEL")
@_value_options
@click.option("--output", "output_path", required=True, metavar="out.h5", help="Where to write the outputs (out.N.h5 per sample when N > 1).")
@click.option("--samples", type=SAMPLES, default=1, show_default=True, help="Random samples when no --input is given.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--write-input", metavar="in.h5", default=None, help="Write the random inputs too (TestDataGenerator's role).")
@click.option("--force", is_flag=True, help="Let --output/--write-input replace existing model files (never this run's own).")
def run_model(model_path, input_files, cast, backend, timeout, output_path, samples, seed, write_input, force):
    """Run MODEL on --input h5 files (or random inputs) and write its outputs in ONE's h5 layout."""
    from . import api
    if not output_path:
        raise UsageError("--output needs a file name")
    from .check import samples as sample_files
    from .check.backend import runners
    from .check.deadline import Deadline
    from .check.diff import iter_random_inputs

    if input_files and write_input:
        raise UsageError("--write-input writes random inputs; with --input they are already in files")
    model = api.load(model_path)
    graph = model.graphs[0]
    deadline = Deadline(timeout)
    if input_files:
        count = sample_files.count_files(list(input_files))
        inputs = sample_files.input_samples(graph.inputs, list(input_files), cast=cast)
    else:
        count, inputs = samples, iter_random_inputs(graph.inputs, samples, seed)
    _refuse_sample_clobber({"--output": output_path, "--write-input": write_input}, count, [model_path, *input_files], force)
    write = sample_files.sample_sink(graph, count, write_input, output_path)
    (runner,) = runners([model], backend, deadline=deadline)
    for index, sample in enumerate(inputs):
        deadline.check()
        write(index, sample, runner(sample))
    last = sample_files.sample_path(output_path, count - 1, count)
    written = output_path if count == 1 else f"{sample_files.sample_path(output_path, 0, count)} ... {last}"
    click.echo(f"wrote {written} ({runner.description})")


@main.command()
@click.argument("file_a", metavar="A.h5")
@click.argument("file_b", metavar="B.h5")
@click.option("--rtol", type=TOLERANCE, default=1e-5, show_default=True, help="Relative tolerance: |a-b| <= atol + rtol*max|a| per value.")
@click.option("--atol", type=TOLERANCE, default=1e-5, show_default=True, help="Absolute tolerance.")
@click.option("-d", "--delta", type=TOLERANCE, default=None, help="Like h5diff -d: absolute tolerance only, for every value, integers too (overrides --rtol/--atol).")
def h5diff(file_a, file_b, rtol, atol, delta):
    """Compare two h5 files in ONE's layout value by value; exit 0 only if all are within tolerance."""
    from .check.diff import Tolerance, compare_files

    tolerance = Tolerance(rtol, atol) if delta is None else Tolerance(0.0, delta, exact_integers=False)
    result = compare_files(file_a, file_b, tolerance)
    click.echo(result.table())
    if not result.passed:
        raise CheckFailed(result.failure_message())


@main.command(name="passes")
def list_passes():
    """List the passes, in the order they run: exact or lossy, on by default, in ONE's O1 group."""
    width = max(len(p.name) for p in registry.PASSES)
    for p in registry.PASSES:
        tag = ("exact" if p.exact else "LOSSY") + (", default" if p.default else "") + (", O1" if p.name in one.O1 else "")
        click.echo(f"{p.name:<{width}}  [{tag}]  {p.summary}")


@main.group()
def recipe():
    """Build models from recipes (recipes/*.toml)."""


@recipe.command(name="build")
@click.argument("recipe_path", metavar="RECIPE.toml")
@click.argument("output_path", metavar="OUT")
def recipe_build(recipe_path, output_path):
    """Build RECIPE into OUT (.tflite or .circle)."""
    from .recipe.chef import build_file

    refuse_run_files(output_path, "OUT", [recipe_path])
    model = build_file(recipe_path, output_path)
    click.echo(f"wrote {output_path} ({sum(len(g.ops) for g in model.graphs)} operators)")


@recipe.command(name="test")
@click.argument("recipes", nargs=-1, required=True, metavar="RECIPE_OR_DIR...")
@click.option("--junit", "junit_path", default=None, metavar="report.xml", help="Also write the results as JUnit XML.")
@click.option("--force", is_flag=True, help="Let --junit replace an existing model file.")
@click.option("--samples", type=SAMPLES, default=2, show_default=True, help="Random samples per recipe.")
@click.option("--seed", type=SEED, default=1, show_default=True, help="Seed of the random inputs.")
@click.option("--backend", type=click.Choice(["auto", "litert", "reference"]), default="auto", show_default=True)
def recipe_test_command(recipes, junit_path, force, samples, seed, backend):
    """Value-test recipes as CI would: build, store input/expected h5, optimize, check rules and values."""
    import tempfile
    from pathlib import Path

    from . import recipe_test

    paths = recipe_test.recipe_paths(list(recipes))
    if junit_path:
        refuse_side_file_clobber(junit_path, "--junit", [str(p) for p in paths], force)
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="bnfold-recipe-test-") as workdir:
        for path in paths:
            outcome = recipe_test.run_recipe_test(path, Path(workdir), samples=samples, seed=seed, backend=backend)
            outcomes.append(outcome)
            click.echo(outcome.line())
    if junit_path:
        write_text(junit_path, recipe_test.junit_xml(outcomes), UsageError)
    bad = [o for o in outcomes if not o.passed]
    click.echo(f"{len(outcomes) - len(bad)} passed, {len(bad)} failed")
    if bad:
        raise CheckFailed(f"{len(bad)} of {len(outcomes)} recipes failed: {', '.join(o.name for o in bad)}")


def run(argv=None) -> int:
    """Entry point: runs the CLI and turns every failure into one line and an exit code."""
    try:
        with quiet_float_errors():
            main.main(args=argv, prog_name="bnfold", standalone_mode=False)
        return 0
    except BnfoldError as e:
        _fail(str(e))
        return e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.exceptions.Abort:
        _fail("interrupted")
        return 130
    except click.NoSuchOption as e:
        _fail(f"no such option: {e.option_name}{_near_options(e)}")
        return 2
    except click.ClickException as e:
        _fail(e.format_message().replace("\n", " "))
        return 2
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except Interrupted as e:
        _fail(f"interrupted by signal {e.signum}")
        return 128 + e.signum
    except (_ReaderGone, BrokenPipeError):  # the reader went away (`bnfold passes | head -1`): not an error
        _silence_stdout()
        return 0
    except Exception as e:  # a bug in bnfold: still one line, traceback only on request
        if os.environ.get("BNFOLD_DEBUG"):
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set BNFOLD_DEBUG=1 for a traceback)")
        return 3


def _near_options(error: click.NoSuchOption) -> str:
    """Suggestions for a misspelt option among every option the command has, hidden ONE flags
    included (click's own hint can pick an unrelated visible flag)."""
    command = error.ctx.command if error.ctx else None
    names = [n for p in getattr(command, "params", []) for n in p.opts + p.secondary_opts if n.startswith("--")]
    return one.did_you_mean(error.option_name, names) if names else ""


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def quiet_float_errors():
    """No numpy floating-point warning (overflow, inf - inf, 0 * inf) reaches stderr. They come
    from arithmetic on the user's own values, and every place where such a value decides something
    examines it explicitly instead: a fold whose result is not finite is refused with that reason
    in the report (passes/affine.py), a check compares NaN and inf outputs by rule
    (check/diff.py), and a recipe value that does not fit its type is refused (recipe/chef.py)."""
    import numpy as np

    with np.errstate(all="ignore"):
        yield


def _fail(message: str) -> None:
    first = message.strip().splitlines()[0] if message.strip() else "error"
    click.echo(f"bnfold: error: {first}", err=True)


def entry() -> None:
    sys.exit(run())
