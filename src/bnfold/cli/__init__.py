"""The `bnfold` command line: parse, call the library (api.py, `bnfold.<command>`), print.

Every failure is one line on stderr and a non-zero exit: 2 for usage errors (bad options, missing
or unreadable input files), 1 for malformed models and h5 files and for values that differ, 4
when a check could not be carried out, 3 only for a bug in bnfold. Set BNFOLD_DEBUG=1 to see the
traceback of an unexpected error.
"""

from __future__ import annotations

import click

from .. import exits
from . import model, optimize, recipe, values


@click.group(cls=exits.Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bnfold")
def main():
    """Fold batch normalization and its neighbours into conv-like layers of TFLite and Circle models."""


for command in (
    optimize.optimize,
    model.convert,
    model.inspect,
    model.list_passes,
    values.check,
    values.run_model,
    values.h5diff,
    recipe.recipe,
):
    main.add_command(command)


def run(argv=None) -> int:
    """Runs the CLI and turns every failure into one line and an exit code (exits.py)."""
    return exits.run(main, argv)


def entry() -> None:
    """The `bnfold` program: the process ends with the command's exit code (exits.leave)."""
    exits.leave(exits.run(main, process=True))
