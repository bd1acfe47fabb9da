"""Which paths bnfold may read from and write to.

Reading: every input (model, h5 file, cfg, recipe, report) is opened by `open_input`, which
has one rule for all of them: a missing file, a directory, a FIFO or device, a file the user may
not read are usage errors (exit 2), each one line naming the file. Only regular files (or
symlinks to them) are read: a FIFO would block the open forever, a device would stream without
end, a directory cannot be parsed. What a file holds is its reader's business (a malformed model
or h5 file is exit 1).

Writing: the model output may replace the input only with --in-place (the user named it twice
on purpose). A side file (JSON report, h5 inputs/expected outputs) never replaces a file the
same run reads or writes, and replaces an existing model file only with --force: a report or
h5 file landing on a model is a typo that would destroy the model.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from ..errors import UsageError
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


def open_input(path: str, what: str) -> BinaryIO:
    """`path` opened for binary reading, or UsageError for a missing file, a directory, a FIFO,
    a device or a file that cannot be read. `what` names the file's role in the message ("a
    model file", "an h5 file", ...). The open does not block on a FIFO (O_NONBLOCK), and the
    kind is asked of the open descriptor, so nothing can swap the file in between."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UsageError("no such file", path) from None
    except (OSError, ValueError) as e:
        kind = special_kind(path)  # a socket cannot be opened at all
        reason = f"is {kind}, not {what}" if kind else f"cannot read: {getattr(e, 'strerror', None) or e}"
        raise UsageError(reason, path) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")
        raise UsageError(f"is {kind}, not {what}", path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


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


def refuse_numbered_clobber(outputs: dict[str, list[str]], run_files: list[str | None], force: bool) -> None:
    """refuse_side_file_clobber for many side files at once (`outputs`: option -> the files it
    writes, one per sample): none may be a file of this run or of another option, nor, without
    --force, an existing model file. Linear in the number of files: one listing per directory
    says which files exist; a file that exists is known by its inode and examined as a side file,
    one that does not by its resolved directory and name."""
    directories: dict[str, tuple[str, set[str]]] = {}  # as written -> (resolved, names in it)

    def identity(path: str) -> tuple[tuple, bool]:
        directory, name = os.path.split(os.path.abspath(path))
        if directory not in directories:
            directories[directory] = (os.path.realpath(directory), _names_in(directory))
        resolved, names = directories[directory]
        if name in names:
            try:
                st = os.stat(path)
                return ("inode", st.st_dev, st.st_ino), True
            except (OSError, ValueError):  # a dangling symlink
                pass
        return ("new", resolved, name), False

    owner = {identity(p)[0]: "" for p in run_files if p}
    for option, paths in outputs.items():
        for path in paths:
            key, exists = identity(path)
            if owner.setdefault(key, option) != option:
                raise UsageError(f"{option} names a file this run also reads or writes; refusing to overwrite it", path)
            if exists:
                refuse_side_file_clobber(path, option, [], force)


def _names_in(directory: str) -> set[str]:
    try:
        return set(os.listdir(directory))
    except OSError:
        return set()
