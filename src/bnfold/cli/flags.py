"""The flags of `bnfold optimize` that are not written out in cli/optimize.py: one boolean --<name> per
pass and per pass parameter, generated from the registry (engine/registry.py, through api.PASSES),
and a hidden one per ONE option bnfold does not implement (one.py), so that a one-optimize command
line is accepted, and warned about, not refused."""

from __future__ import annotations

import click

from .. import api

PASS_NAMES = frozenset(spec.name for spec in api.PASSES)  # each has --no-<name>, which gives False
PARAMETERS = {name: (spec.name, what) for spec in api.PASSES for name, what in spec.parameters.items()}


def not_implemented() -> dict[str, str]:
    """ONE's options bnfold does not implement, flag -> name: accepted (and warned about) as hidden
    flags of optimize. Asked only when a command line holds an option click does not know, so a
    plain run loads none of ONE's tables (one.py)."""
    from .. import one

    known = PASS_NAMES | set(PARAMETERS)
    return {f"--{name}": name for name in sorted((one.PASS_OPTIONS | set(one.UTILITY_OPTIONS)) - known)}


class Optimize(click.Command):
    """`optimize`, whose hidden flags for ONE's unimplemented options are declared the first time a
    command line holds an option click does not know, and the line parsed again: building and
    parsing those 64 options cost every run ~5 ms of CPU (4.4 and 7.0 ms, twice 40 runs of an
    unchanged model). Once declared they serve that line, or click's "no such option" suggests
    among them too, as it did when they were always declared."""

    one_flags_declared = False

    def parse_args(self, ctx, args):
        if self.one_flags_declared:
            return super().parse_args(ctx, args)
        try:
            return super().parse_args(ctx, list(args))  # a copy: click's parser consumes its list
        except click.NoSuchOption:
            self.params += [
                click.Option([flag, name], is_flag=True, default=False, hidden=True)
                for flag, name in not_implemented().items()
            ]
            self.one_flags_declared = True
            return super().parse_args(ctx, args)


def pass_flags(function):
    """One boolean --<pass_name> flag per registered pass (with --no-<pass_name>, which switches it
    off: the default set without it) and per pass parameter (ONE's options bnfold does not
    implement: see Optimize). A pass flag not given is None."""
    for name, (qualified, what) in sorted(PARAMETERS.items(), reverse=True):
        function = click.option(f"--{name}", name, is_flag=True, default=False, help=f"[with --{qualified}] {what}")(
            function
        )
    for spec in reversed(api.PASSES):
        kind = "exact" if spec.exact else "LOSSY"
        function = click.option(
            f"--{spec.name}/--no-{spec.name}", spec.name, default=None, help=f"[{kind}] {spec.summary}"
        )(function)
    return function
