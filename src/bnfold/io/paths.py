"""Which paths bnfold may read from and write to.

Reading: only regular files (or symlinks to them). A FIFO would block the open forever, a
device would stream without end, a directory cannot be parsed; each is refused by name before
anything opens it.

Writing: the model output may replace the input only with --in-place (the user named it twice
on purpose). A side file (JSON report, h5 inputs/expected outputs) never replaces a file the
same run reads or writes, and replaces an existing model file only with --force: a report or
h5 file landing on a model is a typo that would destroy the model.
"""

from __future__ import annotations

import os
import stat

from ..errors import ModelError, UsageError
from .formats import FORMATS

FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_kind(path: str) -> str | None:
    """'a directory', 'a FIFO (named pipe)', ... for an existing path that is not a regular
    file (symlinks followed); None for a regular file or a path that does not exist."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")


def require_regular_file(path: str, error=ModelError) -> None:
    """Refuse, before anything opens it for reading, a path that is not a regular file."""
    kind = special_kind(path)
    if kind is not None:
        raise error(f"is {kind}, not a regular file", path)


def same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file (through symlinks and hard links; for paths that
    do not exist yet, the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def is_model_file(path: str) -> bool:
    """An existing regular file that carries a TFLite or Circle file identifier."""
    if special_kind(path) is not None:
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return len(head) == 8 and any(head[4:8] == fmt.identifier for fmt in FORMATS)


def refuse_input_overwrite(input_path: str, output_path: str, in_place: bool) -> None:
    """The model output may be the input only when --in-place says so."""
    if not in_place and os.path.exists(output_path) and same_file(input_path, output_path):
        raise UsageError("output is the input file; pass --in-place to overwrite it", output_path)


def refuse_run_files(path: str, what: str, run_files: list[str | None]) -> None:
    """`path`, written as `what`, must not be another file this run reads or writes."""
    for other in run_files:
        if other and same_file(path, other):
            raise UsageError(f"{what} names a file this run also reads or writes; refusing to overwrite it", path)


def refuse_side_file_clobber(path: str, option: str, run_files: list[str | None], force: bool) -> None:
    """A side file written by `option` must not be any file of this run (its models, inputs,
    other outputs), nor, without --force, an existing model file or anything but a regular file."""
    refuse_run_files(path, option, run_files)
    kind = special_kind(path)
    if kind is not None:
        raise UsageError(f"{option} cannot write here: it is {kind}", path)
    if not force and is_model_file(path):
        raise UsageError(f"{option} would overwrite a model file; pass --force to replace it", path)
