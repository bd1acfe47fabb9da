"""The value commands: `check` (two models, or one against stored outputs), `run`, `h5diff`."""

from __future__ import annotations

import click

from .. import api, text
from ..errors import CannotVerify, CheckFailed
from .options import TOLERANCE, quiet_option, refuse_ignored_sampling, value_options


@click.command()
@click.argument("model_a", metavar="MODEL")
@click.argument("model_b", metavar="[MODEL_B]", required=False)
@value_options
@click.option(
    "--expected",
    "expected_files",
    multiple=True,
    metavar="expected.h5",
    help="Stored outputs to compare MODEL's with (one per --input file, in order), instead of MODEL_B.",
)
@click.option(
    "--write-input", metavar="in.h5", default=None, help="Write the inputs used (file.N.h5 per sample when N > 1)."
)
@click.option(
    "--write-expected",
    metavar="expected.h5",
    default=None,
    help="Write MODEL's outputs (file.N.h5 per sample when N > 1).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Let --write-input/--write-expected replace existing model files (never this run's own).",
)
@click.option(
    "--rtol",
    type=TOLERANCE,
    default=1e-5,
    show_default=True,
    help="Relative tolerance: |a-b| <= atol + rtol*max|a| per output.",
)
@click.option(
    "--atol", type=TOLERANCE, default=1e-5, show_default=True, help="Absolute tolerance. Integers must match exactly."
)
@click.option(
    "--require-variation",
    is_flag=True,
    help="Exit 4 when an output proves nothing: it did not change across the samples (needs 2 or more).",
)
@quiet_option
def check(
    model_a,
    model_b,
    input_files,
    cast,
    backend,
    timeout,
    samples,
    seed,
    expected_files,
    write_input,
    write_expected,
    force,
    rtol,
    atol,
    require_variation,
    quiet,
):
    """Compare MODEL's outputs with MODEL_B's on the same inputs, or with stored --expected outputs;
    exit 0 only if all match (1: they differ, 4: no backend could run them, or, with
    --require-variation, an output proved nothing)."""
    refuse_ignored_sampling(input_files)
    from ..progress import StepLine

    with StepLine(quiet) as step:
        result = api.check(
            model_a,
            model_b,
            inputs=input_files,
            expected=expected_files,
            samples=None if input_files else samples,
            seed=None if input_files else seed,
            write_input=write_input,
            write_expected=write_expected,
            force=force,
            rtol=rtol,
            atol=atol,
            backend=backend,
            timeout=timeout,
            cast=cast,
            progress=step,
        )
    proved_nothing = result.proved_nothing()
    if result.passed and quiet:  # nothing on success, but a check that proved nothing is not one
        if proved_nothing and not require_variation:  # which then says it as its error
            click.echo(f"bnfold: warning: weak check: {proved_nothing}", err=True)
    else:
        click.echo(result.table())
        read = " and ".join(f"{text.files(paths)} (--{what})" for what, paths in result.files.items())
        samples = f"{result.samples} sample(s)" + (f" read from {read}" if read else "")
        click.echo(f"backend {result.backend}, {samples}, {api.CRITERION}, {result.tolerance}")
    if not result.passed:
        raise CheckFailed(result.failure_message())
    if require_variation and result.samples < 2:
        raise CannotVerify("--require-variation: whether an output varies takes 2 or more samples; 1 was compared")
    if require_variation and proved_nothing:
        raise CannotVerify(f"--require-variation: {proved_nothing}")


@click.command(name="run")
@click.argument("model_path", metavar="MODEL")
@value_options
@click.option(
    "--output",
    "output_path",
    required=True,
    metavar="out.h5",
    help="Where to write the outputs (out.N.h5 per sample when N > 1).",
)
@click.option(
    "--write-input", metavar="in.h5", default=None, help="Write the random inputs too (TestDataGenerator's role)."
)
@click.option(
    "--force", is_flag=True, help="Let --output/--write-input replace existing model files (never this run's own)."
)
@quiet_option
def run_model(model_path, input_files, cast, backend, timeout, samples, seed, output_path, write_input, force, quiet):
    """Run MODEL on --input h5 files (or random inputs) and write its outputs in ONE's h5 layout."""
    refuse_ignored_sampling(input_files)
    from ..progress import StepLine

    with StepLine(quiet) as step:
        ran = api.run(
            model_path,
            output_path,
            inputs=input_files,
            samples=None if input_files else samples,
            seed=None if input_files else seed,
            write_input=write_input,
            force=force,
            backend=backend,
            timeout=timeout,
            cast=cast,
            progress=step,
        )
    if quiet:
        return
    inputs = f" and {text.files(ran.inputs)}" if ran.inputs else ""
    click.echo(f"wrote {text.files(ran.outputs)}{inputs} ({ran.backend})")


@click.command()
@click.argument("file_a", metavar="A.h5")
@click.argument("file_b", metavar="B.h5")
@click.option(
    "--rtol",
    type=TOLERANCE,
    default=1e-5,
    show_default=True,
    help="Relative tolerance: |a-b| <= atol + rtol*max|a| per value.",
)
@click.option("--atol", type=TOLERANCE, default=1e-5, show_default=True, help="Absolute tolerance.")
@click.option(
    "-d",
    "--delta",
    type=TOLERANCE,
    default=None,
    help="Like h5diff -d: absolute tolerance only, for every value, integers too (overrides --rtol/--atol).",
)
@click.option(
    "--by-position",
    is_flag=True,
    help="Pair values by position even when both files name them (else a name only one has is a difference).",
)
@quiet_option
def h5diff(file_a, file_b, rtol, atol, delta, by_position, quiet):
    """Compare two h5 files in ONE's layout value by value; exit 0 only if all are within tolerance."""
    result = api.h5diff(file_a, file_b, rtol=rtol, atol=atol, delta=delta, by_position=by_position)
    if result.passed and quiet:
        return
    click.echo(result.table())
    paired = "by position" if by_position or not result.by_name else "by name"
    click.echo(f"{file_a} and {file_b}: {result.samples} sample(s), paired {paired}, {result.tolerance.criterion}")
    if not result.passed:
        raise CheckFailed(result.failure_message())
