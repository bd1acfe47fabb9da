"""Which paths bnfold may read from and write to.

Reading: every input (model, h5 file, cfg, recipe, report) is opened by `open_input`, which
has one rule for all of them: a missing file, a directory, a FIFO or device, a file the user may
not read are usage errors (exit 2), each one line naming the file. Only regular files (or
symlinks to them) are read: a FIFO would block the open forever, a device would stream without
end, a directory cannot be parsed. What a file holds is its reader's business (a malformed model
or h5 file is exit 1).

Writing: every output is checked before any work (`refuse_unwritable`): its directory must
exist and be writable, the target must be a regular file or new, and a read-only file (no write
permission bit, `chmod a-w`, or none for this user) is never replaced, not even by root: the
mode is the user's statement that the file is not to change. The model output may replace the
input only with --in-place (the user named it twice on purpose). A side file (JSON report, h5
inputs/expected outputs) never replaces a file the
same run reads or writes, and replaces an existing model file only with --force: a report or
h5 file landing on a model is a typo that would destroy the model.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from ..errors import UsageError
from .formats import FORMATS

FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


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


def refuse_unwritable(path: str, error=UsageError, *, what: str = "a file") -> None:
    """Refuse an output path that cannot or must not be written (module docstring), naming why.
    A symlink is judged by the file it leads to, which is what a write replaces."""
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise error(f"is a directory; give the path of {what} to write", path)
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        missing = "does not exist" if not os.path.exists(directory) else "is not a directory"
        raise error(f"output directory {directory} {missing}", path)
    if _read_only_file_system(directory):
        raise error(f"cannot write in {directory}: read-only file system", path)
    if not os.access(directory, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        raise error(f"cannot write in {directory}: permission denied", path)
    if len(os.fsencode(os.path.basename(target))) > _name_max(directory):
        raise error("file name too long for its file system", path)
    kind = special_kind(target)
    if kind is not None:  # renaming over a device node is never what was meant
        raise error(f"is {kind}; only a regular file can be replaced", path)
    if is_read_only(target):
        raise error("is read-only; bnfold does not replace a read-only file (make it writable first)", path)


def is_read_only(path: str) -> bool:
    """An existing file without a write permission bit, or one this user may not write."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not mode & 0o222 or not os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)


def _name_max(directory: str) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not known here: the write itself will say
        return 255


def _read_only_file_system(directory: str) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs here: the write itself will say
        return False


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
        raise UsageError("output is the input file; pass --in-place (in_place=True) to overwrite it", output_path)


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
    refuse_unwritable(path, UsageError)


def numbered(path: str, index: int, count: int) -> str:
    """Where sample `index` of `count` goes: PATH itself for one sample; PATH with .N before the
    extension for more (out.h5 -> out.0.h5, out.1.h5, ...; no extension: .h5)."""
    if count == 1:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.{index}{ext or '.h5'}"


def refuse_numbered_clobber(
    outputs: dict[str, str | None], count: int, run_files: list[str | None], force: bool
) -> None:
    """refuse_side_file_clobber for every file of a numbered series (`outputs`: option -> the
    path it numbers, `count` files each): none may be a file of this run or of another option,
    nor, without --force, an existing model file. Linear and in bulk: one listing per directory
    says which names exist; those are known by their inode and examined as side files, the names
    that do not exist yet by their resolved directory, compared as sets."""
    directories: dict[str, tuple[str, set[str]]] = {}  # as written -> (resolved, names in it)
    claimed: dict[str, dict[str, set[str]]] = {}  # resolved directory -> option -> the names it writes there
    inodes: dict[tuple[int, int], str] = {}  # an existing file -> option ("" for this run's own files)

    def place(path: str) -> tuple[str, str, str, set[str]]:
        directory, name = os.path.split(os.path.abspath(path))
        if directory not in directories:
            directories[directory] = (os.path.realpath(directory), _names_in(directory))
        return directory, name, *directories[directory]

    def claim(option: str, directory: str, resolved: str, names: set[str], series: set[str]) -> None:
        for name in names & series:
            try:
                st = os.stat(os.path.join(directory, name))
            except (OSError, ValueError):  # a dangling symlink: a new file
                continue
            if inodes.setdefault((st.st_dev, st.st_ino), option) != option:
                raise UsageError(
                    f"{option} names a file this run also reads or writes; refusing to overwrite it",
                    os.path.join(directory, name),
                )
            if option:
                refuse_side_file_clobber(os.path.join(directory, name), option, [], force)
        by_option = claimed.setdefault(resolved, {})
        taken = [n for other, theirs in by_option.items() if other != option for n in theirs & series]
        if taken:
            raise UsageError(
                f"{option} names a file this run also reads or writes; refusing to overwrite it",
                os.path.join(directory, min(taken)),
            )
        by_option.setdefault(option, set()).update(series)

    for path in filter(None, run_files):
        directory, name, resolved, names = place(path)
        claim("", directory, resolved, names, {name})
    for option, output in outputs.items():
        if output:
            directory, name, resolved, names = place(output)
            series = {name} if count == 1 else _series(name, count)
            if count > 1:
                _refuse_ambiguous_series(option, output, count, names)
            claim(option, directory, resolved, names, series)
            refuse_unwritable(
                os.path.join(directory, max(series, key=len)), UsageError
            )  # its directory, the longest name


def _refuse_ambiguous_series(option: str, path: str, count: int, names: set[str]) -> None:
    """A series of `count` files written at PATH must be what `--input PATH` reads next: not
    PATH itself, which a reader takes instead of the series, nor a longer series's file
    PATH.count.h5, which it reads on into (both left by an earlier run). Removing them is the
    user's call, so the run is refused before any work (UsageError naming the file)."""
    first, last, beyond = (os.path.basename(numbered(path, i, count)) for i in (0, count - 1, count))
    series = f"{option} writes {first} ... {last}"
    if os.path.basename(path) in names:
        raise UsageError(
            f"exists beside the series {series}, and --input/--expected with this name would read it, "
            "not the series; remove it or choose another name",
            path,
        )
    if beyond in names:
        raise UsageError(
            f"is left from a longer series ({series}), and --input/--expected {os.path.basename(path)} would read "
            "it too; remove the rest of that series or choose another name",
            os.path.join(os.path.dirname(path), beyond),
        )


def _series(name: str, count: int) -> set[str]:
    """{numbered(name, i, count) for every i}, built in one pass (100,000 names in ~20 ms)."""
    stem, ext = os.path.splitext(name)
    ext = ext or ".h5"
    return {f"{stem}.{i}{ext}" for i in range(count)}


def _names_in(directory: str) -> set[str]:
    try:
        return set(os.listdir(directory))
    except OSError:
        return set()
