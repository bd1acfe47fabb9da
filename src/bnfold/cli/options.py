"""What the commands share: the parameter types (tolerances, samples, seeds, backends), the value
options of `check` and `run`, and printing a list of lines."""

from __future__ import annotations

import math

import click

from .. import api
from ..arguments import sampling_refused


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


class Seconds(click.ParamType):
    """A time limit: a finite number of seconds > 0 (0, a negative number, NaN and inf are refused
    with one message, so --timeout 0 and --timeout -1 say the same thing)."""

    name = "SECONDS"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number <= 0:
            self.fail(f"{value!r} is not a number of seconds greater than 0", param, ctx)
        return number


TOLERANCE = NonNegative()
SAMPLES = click.IntRange(1, api.MAX_SAMPLES)
SEED = click.IntRange(0, api.MAX_SEED)
BACKEND = click.Choice(api.BACKENDS)


quiet_option = click.option(
    "-q", "--quiet", is_flag=True, help="Print nothing on success (a failure's table and line still print)."
)


def refuse_ignored_sampling(input_files) -> None:
    """--samples and --seed shape random inputs: given with --input files, which are the samples,
    they would be ignored, so they are refused (exit 2) rather than dropped silently."""
    if not input_files:
        return
    context = click.get_current_context()
    typed = click.core.ParameterSource.COMMANDLINE
    given = [f"--{name}" for name in ("samples", "seed") if context.get_parameter_source(name) is typed]
    if given:
        raise sampling_refused(given, "--input files")


def echo_lines(lines, echo=click.echo) -> None:
    for line in lines:
        echo(line)


def value_options(function):
    """The options `check` and `run` share: inputs, casting, backend, time limit, samples, seed."""
    for option in reversed(
        [
            click.option(
                "--input",
                "input_files",
                multiple=True,
                metavar="in.h5",
                help="Inputs in ONE's h5 layout (repeatable; a record-minmax file holds several samples).",
            ),
            click.option(
                "--cast", is_flag=True, help="Convert --input data of another dtype (refused if a value would change)."
            ),
            click.option(
                "--backend",
                type=BACKEND,
                default="auto",
                show_default=True,
                help="auto: onert for Circle where it loads the model(s), then LiteRT, else the reference interpreter.",
            ),
            click.option(
                "--timeout", type=Seconds(), default=None, metavar="SECONDS", help="Give up (exit 4) after this long."
            ),
            click.option(
                "--samples",
                type=SAMPLES,
                default=1,
                show_default=True,
                metavar="N",
                help="Random samples when no --input is given.",
            ),
            click.option(
                "--seed", type=SEED, default=0, show_default=True, metavar="S", help="Seed of the random inputs."
            ),
        ]
    ):
        function = option(function)
    return function
