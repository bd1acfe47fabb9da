"""The `bnfold` command line: parse, call the library (api.py, `bnfold.<command>`), print.

Every failure is one line on stderr and a non-zero exit: 2 for usage errors (bad options, missing
or unreadable input files), 1 for malformed models and h5 files and for values that differ, 4
when a check could not be carried out, 3 only for a bug in bnfold. Set BNFOLD_DEBUG=1 to see the
traceback of an unexpected error.
"""

from __future__ import annotations

import importlib

import click

from .. import exits

# command name -> (its module in this package, the click command there)
COMMANDS = {
    "optimize": ("optimize", "optimize"),
    "convert": ("model", "convert"),
    "inspect": ("model", "inspect"),
    "passes": ("model", "list_passes"),
    "check": ("values", "check"),
    "run": ("values", "run_model"),
    "h5diff": ("values", "h5diff"),
    "recipe": ("recipe", "recipe"),
}


class Commands(exits.Group):
    """The group builds only the command it runs: a command's module (and what it imports of the
    library) is loaded when the command is looked up, so `bnfold optimize` loads nothing of
    check's, run's or recipe's (tests/test_layers.py); `bnfold --help` looks up them all."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)  # as click lists the commands of a group

    def resolve_command(self, ctx, args):
        if args and args[0] not in COMMANDS and not args[0].startswith("-") and not self.commands:
            # click suggests a near name among the group's commands: every one is loaded for that
            # (the run ends with the error)
            self.commands = {name: self.get_command(ctx, name) for name in COMMANDS}
        return super().resolve_command(ctx, args)

    def get_command(self, ctx, cmd_name):
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bnfold")
def main():
    """Fold batch normalization and its neighbours into conv-like layers of TFLite and Circle models."""


def run(argv=None) -> int:
    """Runs the CLI and turns every failure into one line and an exit code (exits.py)."""
    return exits.run(main, argv)


_PROGRAM: list[bool] = []  # set by entry: the process ends with the command


def ends_process() -> bool:
    """Whether the command runs in the program (entry), whose process ends with it: what a
    library caller must have undone after a command, the program may leave to its exit."""
    return bool(_PROGRAM)


def entry() -> None:
    """The `bnfold` program: the process ends with the command's exit code (exits.leave)."""
    _PROGRAM.append(True)
    exits.leave(exits.run(main, process=True))
