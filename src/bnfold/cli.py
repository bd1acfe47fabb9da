"""The `bnfold` command line: parse, call the library (api.py, `bnfold.<command>`), print.

Every failure is one line on stderr and a non-zero exit: 2 for usage errors (bad options, missing
or unreadable input files), 1 for malformed models and h5 files and for values that differ, 4
when a check could not be carried out, 3 only for a bug in bnfold. Set BNFOLD_DEBUG=1 to see the
traceback of an unexpected error.
"""

from __future__ import annotations

import functools
import math

import click

from . import api, exits, one, text
from .flags import Optimize, pass_flags
from .errors import CheckFailed, UsageError


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
SAMPLES = click.IntRange(1, api.MAX_SAMPLES)
SEED = click.IntRange(0, api.MAX_SEED)
BACKEND = click.Choice(api.BACKENDS)


@click.group(cls=exits.Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bnfold")
def main():
    """Fold batch normalization and its neighbours into conv-like layers of TFLite and Circle models."""


def _one_path(what: str, positional: str | None, option: str | None) -> str | None:
    if positional and option and positional != option:
        raise UsageError(f"{what} given twice: {positional!r} and {option!r}")
    return positional or option


@main.command(cls=Optimize)
@click.argument("paths", nargs=-1, metavar="IN OUT | --out-dir DIR PATH...")
@click.option("-i", "--input_path", "--input", "input_option", metavar="IN", help="The input model (one-optimize's spelling of IN).")
@click.option("-o", "--output_path", "--output", "output_option", metavar="OUT", help="The output model (one-optimize's spelling of OUT).")
@click.option("--passes", default=None, metavar="A,B", help="Comma-separated passes to run ('' runs none). Default: the exact default set.")
@click.option("-O", "group", default=None, metavar="1",
              help="-O1: run the passes of ONE's O1 group that bnfold implements (the others are listed).")
@pass_flags
@click.option("-C", "--config", "config_path", type=str, default=None, metavar="ONE.cfg",
              help="one-cmds configuration file; reads its [one-optimize] section (and [onecc] include=O1).")
@click.option("--strict", is_flag=True, help="Refuse (exit 2) ONE options bnfold does not implement, instead of warning.")
@click.option("--force", is_flag=True, help="Let --report/--node-data/--node-data-input replace an existing model file (never this run's own).")
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
@click.option("--node-data", default=None, metavar="ND.json", help="Write Model Explorer node data of OUT: what each op absorbed, why each candidate stayed.")
@click.option("--node-data-input", default=None, metavar="ND.json", help="Write Model Explorer node data of IN: what was folded away, into what.")
@click.option("--check-mode", type=click.Choice(api.CHECK_MODES), default="auto", show_default=True,
              help="--check: the whole model, each rewrite on its own, or auto (whole when a backend runs the model, else local).")
@click.option("--out-dir", metavar="DIR", help="Optimize each PATH (model, or directory of them) into DIR; exit: worst model's, 3>2>1>4>0.")
@click.option("-j", "--jobs", type=click.IntRange(1), default=None, metavar="N", help="--out-dir: N worker processes (default: the CPUs).")
@click.option("--shard", default=None, metavar="K/N", help="--out-dir: only the K-th of N equal shares of the models (K = 1..N).")
def optimize(paths, input_option, output_option, passes, group, config_path, strict, force, report_path, external_buffers,
             in_place, quiet, check_samples, rtol, atol, node_data, node_data_input, check_mode, out_dir, jobs, shard, **flags):
    """Run passes over IN and write the result to OUT (format from OUT's extension), or over every model of PATH... into DIR."""
    config = api.read_config(config_path) if config_path else None
    switches = dict(config.switches) if config else {}
    switches.update({name: True for name, on in flags.items() if on})  # the command line wins, as in ONE
    if group is not None:
        if f"O{group}" not in one.GROUPS:
            raise UsageError(f"-O{group}: bnfold knows the group(s) {', '.join('-' + g for g in one.GROUPS)}")
        switches[f"O{group}"] = True
    chosen = api.select(passes, switches, default=config is None, strict=strict)
    to_stdout = report_path == "-"
    echo = functools.partial(click.echo, err=to_stdout)  # stdout carries the JSON then
    _echo_lines([f"bnfold: {line}" for line in chosen.warnings()], functools.partial(click.echo, err=True))
    _echo_lines([] if quiet else chosen.notes(), echo)
    same = dict(force=force, external_buffers=external_buffers, check=check_samples, check_mode=check_mode, rtol=rtol, atol=atol)
    if out_dir is not None:  # progress.py: a bar on a terminal, the failures in input order, one table
        from . import progress  # only for --out-dir: it loads the batch machinery (~2 ms)
        one_model = (input_option, output_option, in_place, node_data, node_data_input)
        click.get_current_context().exit(progress.optimize_many(paths, out_dir, chosen, quiet, one_model, jobs=jobs, shard=shard,
                                                                report=report_path, run_files=[config_path], **same))
    input_path = _one_path("IN", (*paths, None)[0], input_option) or (config and config.input_path)
    output_path = _one_path("OUT", (*paths, None, None)[1], output_option) or (config and config.output_path)
    if not input_path or not (output_path or in_place) or len(paths) > 2 or jobs or shard:
        raise UsageError("need IN and OUT (as arguments, -i/-o, or input_path/output_path in --config); several models, -j, --shard: --out-dir")
    try:
        result = api.optimize_file(input_path, output_path, chosen, in_place=in_place, node_data=node_data, node_data_input=node_data_input,
                                   report=None if to_stdout else report_path, run_files=[config_path], **same)
    except CheckFailed as e:
        if getattr(e, "result", None) is not None:
            click.echo(e.result.table(), err=to_stdout)
        raise
    if to_stdout:
        click.echo(result.to_json())
    if quiet and result.lossy_note is not None:  # a lossy change is never silent
        click.echo(text.lossy_warning(result.lossy_note), err=True)
    elif not quiet:
        _echo_lines(text.optimize_summary(result, input_path), echo)


def _echo_lines(lines, echo=click.echo) -> None:
    for line in lines:
        echo(line)


@main.command()
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--external-buffers", is_flag=True, help="Store weights after the flatbuffer (Buffer.offset/size layout).")
@click.option("--in-place", is_flag=True, help="Allow OUT to be IN and overwrite it.")
def convert(input_path, output_path, external_buffers, in_place):
    """Write IN as OUT, in the format OUT's extension names (.tflite or .circle)."""
    info = api.convert(input_path, output_path, external_buffers=external_buffers, in_place=in_place)
    layout = "offset buffers" if info.external else "standard"
    click.echo(f"{text.written(info, input_path)} ({info.format}, {layout} layout, {info.size} bytes)")


@main.command()
@click.argument("model_path", metavar="MODEL")
@click.option("--operators", is_flag=True, help="List every operator with its inputs and outputs.")
@click.option("--tensors", is_flag=True, help="List every tensor.")
@click.option("--leftovers", is_flag=True,
              help="List the batch-norm candidates (MUL/ADD/SUB/DIV by a per-channel or scalar constant) and the "
                   "TRANSPOSEs, and where they sit.")
@click.option("--report", "report_path", default=None, metavar="R.json",
              help="With --leftovers: the report of the optimize run that wrote MODEL, to say why each candidate stayed.")
def inspect(model_path, operators, tensors, leftovers, report_path):
    """Print operator counts of MODEL (and, optionally, its operators, tensors and batch-norm leftovers)."""
    if report_path and not leftovers:
        raise UsageError("--report needs --leftovers")
    found = api.inspect(model_path, leftovers=leftovers, report=report_path)
    _echo_lines(text.model_listing(model_path, found.model, operators=operators, tensors=tensors))
    if leftovers:
        _echo_lines(text.leftovers(found, report_path))


def _value_options(function):
    """The options `check` and `run` share: inputs, casting, backend, time limit, samples, seed."""
    for option in reversed([
        click.option("--input", "input_files", multiple=True, metavar="in.h5",
                     help="Inputs in ONE's h5 layout (repeatable; a record-minmax file holds several samples)."),
        click.option("--cast", is_flag=True, help="Convert --input data of another dtype (refused if a value would change)."),
        click.option("--backend", type=BACKEND, default="auto", show_default=True,
                     help="auto: LiteRT when it loads the model(s), else the reference interpreter."),
        click.option("--timeout", type=Seconds(), default=None, metavar="SECONDS", help="Give up (exit 4) after this long."),
        click.option("--samples", type=SAMPLES, default=1, show_default=True, metavar="N", help="Random samples when no --input is given."),
        click.option("--seed", type=SEED, default=0, show_default=True, metavar="S", help="Seed of the random inputs."),
    ]):
        function = option(function)
    return function


@main.command()
@click.argument("model_a", metavar="MODEL")
@click.argument("model_b", metavar="[MODEL_B]", required=False)
@_value_options
@click.option("--expected", "expected_files", multiple=True, metavar="expected.h5",
              help="Stored outputs to compare MODEL's with (one per --input file, in order), instead of MODEL_B.")
@click.option("--write-input", metavar="in.h5", default=None, help="Write the inputs used (file.N.h5 per sample when N > 1).")
@click.option("--write-expected", metavar="expected.h5", default=None, help="Write MODEL's outputs (file.N.h5 per sample when N > 1).")
@click.option("--force", is_flag=True, help="Let --write-input/--write-expected replace existing model files (never this run's own).")
@click.option("--rtol", type=TOLERANCE, default=1e-5, show_default=True, help="Relative tolerance: |a-b| <= atol + rtol*max|a| per output.")
@click.option("--atol", type=TOLERANCE, default=1e-5, show_default=True, help="Absolute tolerance. Integers must match exactly.")
def check(model_a, model_b, input_files, cast, backend, timeout, samples, seed, expected_files, write_input, write_expected,
          force, rtol, atol):
    """Compare MODEL's outputs with MODEL_B's on the same inputs, or with stored --expected outputs;
    exit 0 only if all match (1: they differ, 4: no backend could run them)."""
    result = api.check(model_a, model_b, inputs=input_files, expected=expected_files, samples=samples, seed=seed,
                       write_input=write_input, write_expected=write_expected, force=force, rtol=rtol, atol=atol,
                       backend=backend, timeout=timeout, cast=cast)
    click.echo(result.table())
    click.echo(f"backend {result.backend}, {result.samples} sample(s), {api.CRITERION}, {result.tolerance}")
    if not result.passed:
        raise CheckFailed(result.failure_message())


@main.command(name="run")
@click.argument("model_path", metavar="MODEL")
@_value_options
@click.option("--output", "output_path", required=True, metavar="out.h5", help="Where to write the outputs (out.N.h5 per sample when N > 1).")
@click.option("--write-input", metavar="in.h5", default=None, help="Write the random inputs too (TestDataGenerator's role).")
@click.option("--force", is_flag=True, help="Let --output/--write-input replace existing model files (never this run's own).")
def run_model(model_path, input_files, cast, backend, timeout, samples, seed, output_path, write_input, force):
    """Run MODEL on --input h5 files (or random inputs) and write its outputs in ONE's h5 layout."""
    ran = api.run(model_path, output_path, inputs=input_files, samples=samples, seed=seed, write_input=write_input,
                  force=force, backend=backend, timeout=timeout, cast=cast)
    inputs = f" and {text.files(ran.inputs)}" if ran.inputs else ""
    click.echo(f"wrote {text.files(ran.outputs)}{inputs} ({ran.backend})")


@main.command()
@click.argument("file_a", metavar="A.h5")
@click.argument("file_b", metavar="B.h5")
@click.option("--rtol", type=TOLERANCE, default=1e-5, show_default=True, help="Relative tolerance: |a-b| <= atol + rtol*max|a| per value.")
@click.option("--atol", type=TOLERANCE, default=1e-5, show_default=True, help="Absolute tolerance.")
@click.option("-d", "--delta", type=TOLERANCE, default=None, help="Like h5diff -d: absolute tolerance only, for every value, integers too (overrides --rtol/--atol).")
def h5diff(file_a, file_b, rtol, atol, delta):
    """Compare two h5 files in ONE's layout value by value; exit 0 only if all are within tolerance."""
    result = api.h5diff(file_a, file_b, rtol=rtol, atol=atol, delta=delta)
    click.echo(result.table())
    if not result.passed:
        raise CheckFailed(result.failure_message())


@main.command(name="passes")
def list_passes():
    """List the passes, in the order they run: exact or lossy, on by default, in ONE's O1 group."""
    _echo_lines(text.pass_table(api.PASSES, one.O1))


@main.group()
def recipe():
    """Build models from TOML recipes (recipes/*.toml) and value-test them as CI would."""


@recipe.command(name="build")
@click.argument("recipe_path", metavar="RECIPE.toml")
@click.argument("output_path", metavar="OUT")
def recipe_build(recipe_path, output_path):
    """Build RECIPE into OUT (.tflite or .circle)."""
    model = api.build_recipe(recipe_path, output_path)
    click.echo(f"wrote {output_path} ({sum(len(g.ops) for g in model.graphs)} operators)")


@recipe.command(name="test")
@click.argument("recipes", nargs=-1, required=True, metavar="RECIPE_OR_DIR...")
@click.option("--junit", "junit_path", default=None, metavar="report.xml", help="Also write the results as JUnit XML.")
@click.option("--force", is_flag=True, help="Let --junit replace an existing model file.")
@click.option("--samples", type=SAMPLES, default=2, show_default=True, metavar="N", help="Random samples per recipe.")
@click.option("--seed", type=SEED, default=1, show_default=True, metavar="S",
              help="Seed of the random inputs (1, the seed the project's recipe tests were measured with).")
@click.option("--backend", type=BACKEND, default="auto", show_default=True,
              help="auto: LiteRT when it loads the model, else the reference interpreter.")
def recipe_test(recipes, junit_path, force, samples, seed, backend):
    """Value-test recipes as CI would: build, store input/expected h5, optimize, check rules and values."""
    outcomes = api.test_recipes(recipes, samples=samples, seed=seed, backend=backend, junit=junit_path, force=force,
                                on_outcome=lambda outcome: click.echo(outcome.line()))
    bad = [o for o in outcomes if not o.passed]
    click.echo(f"{len(outcomes) - len(bad)} passed, {len(bad)} failed")
    if bad:
        raise CheckFailed(f"{len(bad)} of {len(outcomes)} recipes failed: {', '.join(o.name for o in bad)}")


def run(argv=None) -> int:
    """Runs the CLI and turns every failure into one line and an exit code (exits.py)."""
    return exits.run(main, argv)


def entry() -> None:
    """The `bnfold` program: the process ends with the command's exit code (exits.leave)."""
    exits.leave(exits.run(main, process=True))
