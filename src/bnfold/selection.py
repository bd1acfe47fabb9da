"""Which passes run: from the names a user gave (`--passes`, `--<flag>`, `-O1`, a one-cmds
configuration file, or the library's keywords), read the way one-optimize reads them (one.py).

- Only what is switched on runs; a configuration file or keyword that names nothing runs no pass.
  With nothing named at all (a bare `bnfold optimize IN OUT`) the default set runs.
- A name switched off stays off, even when a group (O1) would switch it on; switched off with
  nothing switched on (`--no-PASS` on the bare command line), the default set runs without it.
- A ONE option that bnfold does not implement is reported (one warning per name) and the run goes
  on as if it were not named: on the bare command line or in the library the default set still
  runs unless a pass is named (in a configuration file only what it switches on runs, as in
  ONE); with `strict` it is a usage error. A group's members that bnfold does not implement are
  listed once, as a note: asking for a group never asks for all of it.
- A name neither bnfold nor ONE has is a usage error that suggests the closest real names.
- A pass parameter (nchw_to_nhwc_input_shape) qualifies its pass; without the pass it does
  nothing, as in ONE, and bnfold says so (alone on the bare command line, the default set runs).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from .engine import registry
from .errors import UsageError
from .io.paths import open_input

CONFIG_SECTION = "one-optimize"
ONECC_SECTIONS = ("onecc", "one-build")  # one-build: the older name ONE still reads


class Selection(NamedTuple):
    passes: list[str]  # registry names, in run order
    not_implemented: list[str]  # ONE options switched on that bnfold lacks
    group_skipped: dict[str, list[str]]  # group -> members bnfold lacks
    parameters: list[str]  # pass parameters switched on (registry.PARAMETERS)

    def warnings(self) -> list[str]:
        idle = [
            f"warning: {name} has no effect without {registry.PARAMETERS[name]}; ignored"
            for name in self.parameters
            if registry.PARAMETERS[name] not in self.passes
        ]
        return [
            f"warning: {name} is a ONE option bnfold does not implement; ignored" for name in self.not_implemented
        ] + idle

    def names(self) -> list[str]:
        """The passes and the parameters that qualify them, as api.apply_passes takes them."""
        return self.passes + [p for p in self.parameters if registry.PARAMETERS[p] in self.passes]

    def notes(self) -> list[str]:
        """One short line per group: how many of its members do not run (the report lists them;
        those switched on by name already had their warning)."""
        lines = []
        for group, names in self.group_skipped.items():
            rest = [n for n in names if n not in self.not_implemented]
            if rest:
                lines.append(
                    f"note: {group}: {len(rest)} of its passes are not in bnfold and do not run "
                    "(--report lists them; see 'bnfold passes' for what runs)"
                )
        return lines


def known_names() -> set[str]:
    """Every name a user may switch: bnfold's passes, ONE's options and groups."""
    from . import one  # ONE's tables: only a run that names something consults them

    return set(registry.BY_NAME) | one.PASS_OPTIONS | set(one.UTILITY_OPTIONS) | set(one.GROUPS)


def unknown_name_error(name: str, where: str = "", path: str | None = None) -> UsageError:
    from . import one

    return UsageError(
        f"unknown pass or option {name!r}{where}{one.did_you_mean(name, known_names())} (see 'bnfold passes')", path
    )


def split_names(passes: str | Iterable[str]) -> list[str]:
    """Pass names from "a,b" or a list of strings (anything else is a usage error)."""
    try:
        items = passes.split(",") if isinstance(passes, str) else list(passes)
    except TypeError:
        raise UsageError(f"passes must be names ('a,b' or a list of strings), not {passes!r}"[:200]) from None
    bad = [p for p in items if not isinstance(p, str)]
    if bad:
        raise UsageError(f"a pass name must be a string, not {bad[0]!r}"[:200])
    return [p.strip() for p in items if p.strip()]


def select(
    passes: str | Iterable[str] | None, switches: Mapping[str, bool], *, default: bool, strict: bool = False
) -> Selection:
    """Resolve `passes` (names, all on) and `switches` (name -> on/off) into what runs.

    `default`: run the default set when nothing at all is named (the bare command line).
    """
    named = split_names(passes) if passes is not None else []
    for name in list(named) + list(switches):
        if name not in known_names():
            raise unknown_name_error(name)
    on = dict.fromkeys(named, True)
    on.update(switches)
    if not on:  # nothing named: the default set (or none), without consulting ONE's tables
        wanted = registry.default_passes() if passes is None and default else []
        return Selection([spec.name for spec in registry.resolve(wanted)], [], {}, [])
    from . import one

    off = {name for name, value in on.items() if not value}
    wanted, lacking, skipped, parameters = [], [], {}, []
    for name, value in on.items():
        if not value:
            continue
        if name in one.GROUPS:
            members = [m for m in one.GROUPS[name] if m not in off]
            wanted += [m for m in members if m in registry.BY_NAME]
            skipped[name] = [m for m in members if m not in registry.BY_NAME]
        elif name in registry.BY_NAME:
            wanted.append(name)
        elif name in registry.PARAMETERS:
            parameters.append(name)
        else:
            lacking.append(name)
    if strict and lacking:
        raise UsageError(
            f"{', '.join(lacking)}: ONE option{'s' if len(lacking) > 1 else ''} bnfold does not implement (strict mode)"
        )
    names_a_pass = {name for name in on if name not in off and (name in registry.BY_NAME or name in one.GROUPS)}
    if passes is None and default and not names_a_pass:
        # a parameter or an option bnfold lacks names no pass: it is ignored, says so, and the default
        # set runs; a pass switched off alone (--no-PASS) leaves the default set without it
        wanted = [name for name in registry.default_passes() if name not in off]
    return Selection([spec.name for spec in registry.resolve(wanted)], lacking, skipped, parameters)


class Config(NamedTuple):
    """A one-cmds configuration file's [one-optimize] section, read as one-optimize reads it."""

    path: str
    input_path: str | None
    output_path: str | None
    switches: dict[str, bool]
    lines: dict[str, str] = {}  # input_path / output_path -> "file:line" where the cfg gives it

    def named(self, key: str, error: UsageError) -> UsageError:
        """`error` about the file the cfg's `key` names, said as coming from the cfg (file:line)."""
        return UsageError(f"{key}={error.path}: {str(error).removeprefix(f'{error.path}: ')}", self.lines.get(key))


def read_config(path: str) -> Config:
    import configparser  # only for --config: ~5 ms of start-up otherwise

    from . import one

    try:
        with open_input(path, "a configuration file") as f:
            text = f.read().decode("utf-8-sig")  # a BOM (Windows editors write one) is not part of the text
    except UnicodeDecodeError:
        raise UsageError("not a text configuration file", path) from None
    except OSError as e:
        raise UsageError(f"cannot read: {e.strerror or e}", path) from None
    parser = configparser.ConfigParser(interpolation=None)
    # ONE's option names are case-sensitive (O1). The configparser documentation's own way to say so;
    # typeshed declares optionxform a method, which an instance attribute may not replace.
    parser.optionxform = str  # type: ignore[method-assign,assignment]
    try:
        parser.read_string(text, source=path)
    except configparser.Error as e:
        raise _syntax_error(e, path, text.splitlines()) from None
    if not parser.has_section(CONFIG_SECTION):
        raise UsageError(f"no [{CONFIG_SECTION}] section", path)

    def where(section: str, key: str) -> str:
        return f"{path}:{_line_of(text, section, key)}"

    switches: dict[str, bool] = {}
    for section in ONECC_SECTIONS:
        if parser.has_option(section, "include"):  # [onecc] include=O1: a group for one-optimize
            for group in parser.get(section, "include").replace(",", " ").split():
                if group not in one.GROUPS:
                    raise UsageError(
                        f"include={group}: bnfold knows the group(s) {', '.join(one.GROUPS)}", where(section, "include")
                    )
                switches[group] = True
    values = dict(parser.items(CONFIG_SECTION))
    for key, value in values.items():
        if key in one.PATH_KEYS:
            continue
        if key not in known_names():
            raise unknown_name_error(key, f" in [{CONFIG_SECTION}]", where(CONFIG_SECTION, key))
        if key in one.VALUE_OPTIONS:  # takes a value, not a switch: on when given one
            switches[key] = bool(value.strip())
            continue
        state = one.parse_switch(value)
        if state is None:
            raise UsageError(f"{key}={value}: expected True or False", where(CONFIG_SECTION, key))
        switches[key] = state
    lines = {key: where(CONFIG_SECTION, key) for key in one.PATH_KEYS if key in values}
    return Config(path, _path_value(values.get("input_path")), _path_value(values.get("output_path")), switches, lines)


def _syntax_error(error: Exception, path: str, lines: list[str]) -> UsageError:
    """configparser's complaint as file:line and what is wrong there, in one line."""
    import configparser
    import re

    number = getattr(error, "lineno", None)
    if isinstance(error, configparser.MissingSectionHeaderError):  # (a ParsingError without .errors)
        number = error.lineno
        return UsageError(f"{lines[number - 1].strip()!r} comes before any [section] header", f"{path}:{number}")
    if isinstance(error, configparser.ParsingError) and getattr(error, "errors", None):
        number = error.errors[0][0]
        return UsageError(f"{lines[number - 1].strip()!r} is not key=value", f"{path}:{number}")
    message = re.sub(r"^While reading from .*?: ", "", str(error).splitlines()[0])
    return UsageError(f"not a valid configuration file: {message}", f"{path}:{number}" if number else path)


def _path_value(value: str | None) -> str | None:
    return os.path.expanduser(value.strip()) if value and value.strip() else None


def _line_of(text: str, section: str, key: str) -> int:
    """Line number of `key` in `[section]` (for messages; configparser does not keep it)."""
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped[1:-1].strip()
        elif current == section and stripped.split("=", 1)[0].split(":", 1)[0].strip() == key:
            return number
    return 0
