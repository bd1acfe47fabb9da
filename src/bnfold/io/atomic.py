"""Every file bnfold writes (model, report, h5) is written here, the same way.

    .bnfold-PID-N.tmp  --rename-->  target

The bytes go to a new temporary file in the target's directory, which is renamed onto the
target only once it is complete, so a reader of the target sees the old file or the new one,
never a partial one. The target is the end of the symlink chain when the path is a symlink (the
link stays, the file it names is replaced), as a shell's `>` would do.

A replaced file keeps its permission bits. The temporary file is removed whatever stops the write: an exception, Ctrl-C, or SIGTERM (turned
into `Interrupted` while a write is under way, so the process exits 128+15 after cleaning up).
Only SIGKILL can leave one behind; the next run that writes into the same directory removes
the temporary files whose process is gone.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import Interrupted, ModelError
from .paths import special_kind

TEMP_NAME = re.compile(r"\.bnfold-(\d+)-\d+\.tmp")
CAUGHT_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Finished:
    """The files this process has renamed into place (count and last), so an interrupt that
    comes after a write can say the file is complete (exits.py resets it per command)."""

    count = 0
    last: str | None = None

    @classmethod
    def reset(cls) -> None:
        cls.count, cls.last = 0, None

    @classmethod
    def note(cls, path: str) -> None:
        cls.count, cls.last = cls.count + 1, path


def target_of(path: str) -> str:
    """The file a write to `path` replaces: `path` itself, or what its symlinks lead to."""
    return os.path.realpath(path) if os.path.islink(path) else path


@contextmanager
def atomic_path(path: str, error=ModelError) -> Iterator[str]:
    """A new, empty temporary file beside `path`'s target, renamed onto the target when the
    block completes and removed when it does not (for writers that want a path, like h5py).
    OSErrors become `error(message, path)`."""
    with _temporary(path, error) as (fd, tmp):
        os.close(fd)
        yield tmp


@contextmanager
def atomic_file(path: str, mode: str = "wb", error=ModelError, **open_args):
    """`atomic_path`, opened: yields the temporary file's file object."""
    with _temporary(path, error) as (fd, tmp), os.fdopen(fd, mode, **open_args) as f:
        yield f


@contextmanager
def _temporary(path: str, error):
    target = target_of(path)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise error("output directory does not exist", path)
    kind = special_kind(target)
    if kind is not None:  # renaming over a device node or into a directory is never what was meant
        raise error(f"is {kind}; only a regular file can be replaced", path)
    remove_stale_temps(directory)
    with signals_interrupt():
        try:
            fd, tmp = _create_temp(directory)
        except OSError as e:
            raise error(f"cannot create a file in {directory}: {e.strerror or e}", path) from None
        try:
            _keep_mode(target, fd)
            yield fd, tmp
            os.replace(tmp, target)
        except BaseException as e:
            if not _unlink_quietly(tmp) and not os.path.lexists(tmp):  # renamed: an interrupt came just after
                Finished.note(path)
            if isinstance(e, OSError):
                raise error(f"cannot write: {e.strerror or e}", path) from None
            raise
        Finished.note(path)


def write_text(path: str, text: str, error=ModelError) -> None:
    with atomic_file(path, "w", error, encoding="utf-8") as f:
        f.write(text)


def remove_stale_temps(directory: str) -> list[str]:
    """Remove the temporary files in `directory` left by bnfold processes that no longer exist
    (killed with SIGKILL mid-write); returns their names. Another live run's files are kept."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = TEMP_NAME.fullmatch(name)
        if match and not _process_exists(int(match.group(1))):
            if _unlink_quietly(os.path.join(directory, name)):
                removed.append(name)
    return removed


def _process_exists(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process (or a name we cannot judge): leave its file alone
    return True


def _create_temp(directory: str) -> tuple[int, str]:
    """A new file in `directory`, created exclusively with mode 0o666 less the umask (what a plain
    open() gives the final file). Not tempfile.mkstemp: importing tempfile costs ~5 ms of every
    run, and mkstemp's 0o600 would need a chmod after."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for attempt in range(1000):
        tmp = os.path.join(directory, f".bnfold-{os.getpid()}-{attempt}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", directory)


def _keep_mode(target: str, fd: int) -> None:
    """A file that is replaced keeps its permission bits (a private 0600 model stays private)."""
    try:
        os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
    except (OSError, AttributeError):  # no target yet (the umask rules), or no fchmod here
        pass


def _unlink_quietly(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


@contextmanager
def signals_interrupt():
    """While a temporary file exists, SIGTERM/SIGHUP raise Interrupted (Ctrl-C already raises
    KeyboardInterrupt), so the cleanup above runs instead of the process just dying."""
    previous = {}
    try:
        for signum in CAUGHT_SIGNALS:
            previous[signum] = signal.signal(signum, _raise_interrupted)
    except ValueError:  # not the main thread: signals cannot be caught here
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler installed outside Python, not restorable
                signal.signal(signum, handler)
