"""Every file bnfold writes (model, report, h5, JUnit) is written here, the same way; a model
file (`save_model`) is a copy of the input when nothing changed it, else io/writer.py's.

    .bnfold-PID-N.tmp  --rename-->  target

The bytes go to a new temporary file in the target's directory, which is renamed onto the
target only once it is complete, so a reader of the target sees the old file or the new one,
never a partial one. The target is the end of the symlink chain when the path is a symlink (the
link stays, the file it names is replaced), as a shell's `>` would do. Runs writing the same
target at once each rename a complete file of their own: the last rename wins.

Files written inside `written_together()` (a model and its report, every h5 file of a run) are
renamed only when the whole block completes, so a failure part way leaves none of them. The first
temporary file a group makes in a directory is that directory's anchor (it stays open, locked);
the group's other files there are its members, `.bnfold-PID-N.M.tmp`, closed once written (a run
of 100,000 samples holds one descriptor per directory, not 100,000).

A replaced file keeps its permission bits; a read-only one is not replaced (io/paths.py). When a
write fails (no space left, the file-size limit, a disk error) the temporary file is removed and
`WriteFailed` (exit 5) names the file and the reason. SIGXFSZ, which the file-size limit sends
and which kills a process that does not ignore it, is ignored while a temporary file exists, so
the write fails with EFBIG instead. Ctrl-C or SIGTERM/SIGHUP (turned into `Interrupted`) remove
the temporary file too; the process exits 128+N after cleaning up.

Only SIGKILL (or a crash) can leave a temporary file behind. Its writer holds an exclusive flock
on it (on its anchor, for a member) for as long as it exists, and the kernel releases that lock
when the process dies, however it dies: a run that writes into a directory removes the temporary
files nobody holds. A live run's file is never removed, whatever its PID means here (another PID
namespace or host sharing the directory, a PID reused since).
"""

from __future__ import annotations

import contextvars
import errno
import os
import re
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from ..errors import CAUGHT_SIGNALS, Finished, Interrupted, ModelError, UsageError, WriteFailed
from ..ir.invariants import gate
from ..ir.model import Model
from .copier import copy_file
from .formats import TWO_GB, Format
from .paths import refuse_unwritable

try:
    import fcntl
except ImportError:  # no flock here: nothing can tell a live file from a stale one, so none is removed
    fcntl = None  # type: ignore[assignment]  # a platform without it (Windows)

TEMP_NAME = re.compile(r"(\.bnfold-\d+-\d+)(\.\d+)?\.tmp")  # an anchor or lone file; a member (.M)
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
# A directory that takes no new file whoever asks (sysfs, procfs, a read-only mount seen only at the
# create): an output path that may not be written, a usage error (exit 2) as the README promises,
# not a failed write (ENOSPC, EDQUOT, EIO stay exit 5).
REFUSING_DIRECTORY = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR})
IGNORED_SIGNALS = tuple(s for s in (getattr(signal, "SIGXFSZ", None),) if s is not None)


def target_of(path: str) -> str:
    """The file a write to `path` replaces: `path` itself, or what its symlinks lead to."""
    return os.path.realpath(path) if os.path.islink(path) else path


class _Pending:
    """A temporary file and its target. `fd` holds the lock (None for a group's member, which its
    directory's anchor holds for it). (A plain class: a dataclass costs start-up time.)"""

    __slots__ = ("fd", "tmp", "target", "path")

    def __init__(self, fd: int | None, tmp: str, target: str, path: str):
        self.fd, self.tmp, self.target, self.path = fd, tmp, target, path

    def commit(self) -> None:
        try:
            os.replace(self.tmp, self.target)
        except OSError as e:
            self.discard()
            raise WriteFailed(f"cannot write: {reason(e)}", self.path) from None
        except BaseException:  # an interrupt at the rename: it may have happened
            if not os.path.lexists(self.tmp):
                Finished.note(self.path)
            self.discard()
            raise
        Finished.note(self.path)
        self._release()

    def discard(self) -> None:
        _unlink_quietly(self.tmp)  # unlinked while still locked, so no cleaner can mistake it
        self._release()

    def _release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


class _Group:
    """The files of one written_together block: members before anchors, so an anchor's lock
    outlives every member it vouches for."""

    __slots__ = ("members", "anchors")

    def __init__(self, members: list[_Pending], anchors: dict[str, _Pending]):
        self.members = members
        self.anchors = anchors  # directory -> its anchor

    def in_order(self) -> list[_Pending]:
        return self.members + list(self.anchors.values())


_group: contextvars.ContextVar[_Group | None] = contextvars.ContextVar("bnfold_written_together", default=None)


@contextmanager
def written_together() -> Iterator[None]:
    """The files written in the block appear together when it completes; if it fails, none
    does (each temporary file is removed). Nested blocks belong to the outermost."""
    if _group.get() is not None:
        yield
        return
    group = _Group([], {})
    token = _group.set(group)
    try:
        with signals_interrupt():
            try:
                yield
            except BaseException:
                for p in group.in_order():
                    p.discard()
                raise
            pending = group.in_order()
            for i, p in enumerate(pending):
                try:
                    p.commit()
                except WriteFailed:
                    for rest in pending[i + 1 :]:
                        rest.discard()
                    raise
    finally:
        _group.reset(token)


@contextmanager
def atomic_file(path: str, mode: str = "wb", error=ModelError, **open_args):
    """A new temporary file beside `path`'s target, opened (its file object is yielded), renamed
    onto the target when the block completes and removed when it does not. A target that may not
    be written raises `error(message, path)` (io/paths.py: refuse_unwritable); a failed write
    WriteFailed."""
    with _temporary(path, error) as (fd, tmp), os.fdopen(os.dup(fd), mode, **open_args) as f:
        yield f


@contextmanager
def _temporary(path: str, error):
    target = target_of(path)
    refuse_unwritable(path, error)
    directory = os.path.dirname(os.path.abspath(target))
    group = _group.get()
    anchor = group.anchors.get(directory) if group else None
    if anchor is None:  # a group's later files in a directory: cleaned already
        remove_stale_temps(directory)
    with signals_interrupt():
        try:
            if anchor is None or group is None:  # (an anchor is always a group's)
                fd, tmp = _create_temp(directory)
            else:
                fd, tmp = _create_member(anchor.tmp, len(group.members))
        except OSError as e:
            if e.errno in REFUSING_DIRECTORY:  # what refuse_unwritable could not foresee (root in /sys, /proc)
                raise UsageError(f"cannot write in {directory}: {reason(e)}", path) from None
            raise WriteFailed(f"cannot create a file in {directory}: {reason(e)}", path) from None
        pending = _Pending(fd, tmp, target, path)
        try:
            _keep_mode(target, fd)
            yield fd, tmp
        except BaseException as e:
            pending.discard()
            if isinstance(e, OSError):
                raise WriteFailed(f"cannot write: {reason(e)}", path) from None
            raise
        if group is None:
            pending.commit()
        elif anchor is None:
            group.anchors[directory] = pending
        else:
            os.close(fd)
            pending.fd = None
            group.members.append(pending)


def reason(error: OSError) -> str:
    """What went wrong, in one line: the system's words for the errno when there is one (h5py's
    OSErrors carry a multi-line HDF5 trace as their text)."""
    if error.errno:
        return os.strerror(error.errno)
    text = str(error.strerror or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def write_text(path: str, text: str, error=ModelError) -> None:
    with atomic_file(path, "w", error, encoding="utf-8") as f:
        f.write(text)


# ---- model files ------------------------------------------------------------------------------


class WriteInfo(NamedTuple):
    path: str
    format: str
    external: bool
    size: int
    unchanged: bool = False  # the output is the input's bytes (copied, or left in place)
    written: bool = True  # False when the output is the input file itself, left untouched


def save_model(
    model: Model, path: str, fmt: Format, *, external: bool = False, keep_unchanged: bool = False
) -> WriteInfo:
    """Write `model` to `path` atomically (atomic_file: a temporary file beside it, then rename),
    serialized by io/writer.py.

    With `keep_unchanged`, a model no pass changed that would be written in its own format and
    layout is not re-serialized: the output is a copy of the input's bytes (byte-identical, which
    keeps caches and content-addressed stores valid), and nothing at all is written when the
    output is the input file. Such a run loads nothing of the writer (tests/test_layers.py)."""
    source = model.source if keep_unchanged and is_unchanged(model, fmt, external) else None  # to copy as it is
    if source is not None and _same_file(source.path, path):
        return WriteInfo(path, fmt.name, source.offset_layout, source.size, unchanged=True, written=False)
    if source is None:
        gate(model, path)  # the last gate: before any file (even a temporary one) exists
    try:
        with atomic_file(path) as out:
            if source is not None:
                copy_file(out, source)
                return WriteInfo(path, fmt.name, source.offset_layout, source.size, unchanged=True)
            from .writer import serialize  # only a model to serialize loads the writer: a copy does not

            offset_layout, size = serialize(model, out, fmt, external=external)
    except ModelError as e:
        if e.path is None:
            e.path = path
        raise
    return WriteInfo(path, fmt.name, offset_layout, size)


def is_unchanged(model: Model, fmt: Format, external: bool) -> bool:
    """True when writing `model` would only reproduce its input file: nothing changed it, the
    format is the input's, and the layout asked for (offset buffers or not) is the input's."""
    source = model.source
    if source is None or model.changed or fmt is not model.format:
        return False
    wants_offsets = external or source.size >= TWO_GB
    return wants_offsets == source.offset_layout


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def remove_stale_temps(directory: str) -> list[str]:
    """Remove the temporary files in `directory` that no process holds (left by a run killed
    mid-write); returns their names. A file another run is still writing is kept."""
    removed: list[str] = []
    try:
        names = os.listdir(directory) if fcntl else []
    except OSError:
        return removed
    for name in names:
        match = TEMP_NAME.fullmatch(name)
        if match is None:
            continue
        path = os.path.join(directory, name)
        anchor = os.path.join(directory, match.group(1) + ".tmp") if match.group(2) else None
        if _remove_if_unheld(path, anchor):
            removed.append(name)
    return removed


def _remove_if_unheld(path: str, anchor: str | None = None) -> bool:
    """Unlink `path` if no process holds its lock (a member: its anchor's, and a member whose
    anchor is gone is stale); the lock is held while unlinking, so the writer's check in
    _create_temp sees the file gone if it lost the race."""
    try:
        fd = os.open(anchor or path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return anchor is not None and _unlink_quietly(path)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return _names(anchor or path, fd) and _unlink_quietly(path)
    except OSError:  # held: a live run's file
        return False
    finally:
        os.close(fd)


def _names(path: str, fd: int) -> bool:
    """Whether `path` is still the file open as `fd`."""
    try:
        a, b = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _create_temp(directory: str) -> tuple[int, str]:
    """A new file in `directory`, created exclusively with mode 0o666 less the umask (what a plain
    open() gives the final file) and locked. Not tempfile.mkstemp: importing tempfile costs ~5 ms
    of every run, and mkstemp's 0o600 would need a chmod after."""
    for attempt in range(1000):
        tmp = os.path.join(directory, f".bnfold-{os.getpid()}-{attempt}.tmp")
        try:
            fd = os.open(tmp, NEW_FILE, 0o666)
        except FileExistsError:
            continue
        if fcntl is None:
            return fd, tmp
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits only while a cleaner examines it
        if _names(tmp, fd):
            return fd, tmp
        os.close(fd)  # a cleaner took it between its creation and the lock: another name
    raise FileExistsError(17, "no free temporary name", directory)


def _create_member(anchor: str, start: int) -> tuple[int, str]:
    """A new file named after its group's anchor (`anchor` less .tmp, then .M.tmp), not locked:
    the anchor's lock covers it."""
    for number in range(start, start + 1000):
        tmp = f"{anchor[: -len('.tmp')]}.{number}.tmp"
        try:
            return os.open(tmp, NEW_FILE, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(17, "no free temporary name", os.path.dirname(anchor))


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
    KeyboardInterrupt), so the cleanup above runs instead of the process just dying, and SIGXFSZ
    is ignored, so the file-size limit fails the write (EFBIG) instead of killing the process."""
    previous = {}
    try:
        for signum in CAUGHT_SIGNALS + IGNORED_SIGNALS:
            previous[signum] = signal.signal(
                signum, signal.SIG_IGN if signum in IGNORED_SIGNALS else _raise_interrupted
            )
    except ValueError:  # not the main thread: signals cannot be caught here
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler installed outside Python, not restorable
                signal.signal(signum, handler)
