"""How a failure of the command line becomes one line on stderr and an exit code.

0 success; 1 a malformed model or h5 file, or values that differ (CheckFailed); 2 a usage error:
a bad option or value, a missing, unreadable or special (directory, FIFO, device) input file;
3 an internal error (a bug in bnfold; BNFOLD_DEBUG=1 shows the traceback); 4 a check that could
not be carried out (CannotVerify); 5 an output that could not be written (WriteFailed: no space,
the file-size limit, a disk error; also stdout or stderr, below); 128 + N a termination signal N
while a file was written, 130 Ctrl-C. The README's "Exit codes" table says the same.
`bnfold` or `bnfold recipe` without a command prints its help (exit 0). The program's process then
ends with that code through `leave`.

The exit code is the command's verdict whatever happens to what it prints (`guarded_output`): a
reader that closes stdout or stderr early (`bnfold check A B | head -1`) stops the printing, never
the work (files are still written, checks still run) and never changes the code. A stream that
cannot take a write (`> /dev/full`: no space, a disk error) is a failed write like any other:
exit 5 with one line, unless the command failed already (its own code and line then stand); the
line says which files the command did write in full, since those are complete.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import signal
import sys
from typing import NoReturn

import click

from .errors import CAUGHT_SIGNALS, BnfoldError, Finished, Interrupted


class _EscapedPipeError(Exception):
    """A BrokenPipeError from something other than stdout or stderr (those are guarded): a bug,
    raised in its place because click would turn it into a silent exit status 1."""


class Group(click.Group):
    """The bnfold command group: a broken pipe that escapes a command is reported as the bug it is."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            raise _EscapedPipeError(f"BrokenPipeError: {e}") from None


def run(main: click.Group, argv=None, *, process: bool = False) -> int:
    """Run the command line `main` on `argv`; every failure becomes one line on stderr and its
    exit code. `process`: the process exits with that code next, so once it is known, SIGINT,
    SIGTERM and SIGHUP are ignored (a late Ctrl-C cannot turn a finished run into a death by
    signal without a message)."""
    code = 130  # unless _run returns: Ctrl-C came while a failure was being reported
    try:
        code = _run(main, argv)
    except KeyboardInterrupt:
        pass
    finally:
        if process:
            for signum in (signal.SIGINT, *CAUGHT_SIGNALS):
                signal.signal(signum, signal.SIG_IGN)
    return code


def leave(code: int) -> NoReturn:
    """End the program's process with `code`, skipping the interpreter's teardown (freeing the
    model's arrays and every module one by one: ~50 ms after a 100 MB model). What the exit would
    have done still happens: the atexit handlers run (multiprocessing's after --out-dir, h5py's,
    logging's), then stdout and stderr are flushed. Every file bnfold writes is closed by then
    (io/atomic.py) and the only threads it starts are daemons. Left to the interpreter's own exit:
    a flush that fails (only what was written after the command, whose output guarded_output
    took care of), which it reports as it always has, and a process something still has to
    finish after the program returns: a profiler, tracer or
    debugger (`python -m cProfile -m bnfold`, coverage, pdb), or `python -i`'s prompt."""
    if sys.gettrace() is not None or sys.getprofile() is not None or sys.flags.inspect:
        sys.exit(code)
    atexit._run_exitfuncs()  # what the interpreter's exit runs first (atexit has no public name for it)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and not stream.closed:
            try:
                stream.flush()
            except OSError:
                sys.exit(code)
    os._exit(code)


def _run(main: click.Group, argv) -> int:
    with guarded_output() as streams:
        code = _command(main, argv)
        failed = [s for s in streams if s.error is not None]
        if failed and code == 0:  # a command that failed already keeps its own code and line
            if failed[0].name == "stdout":  # stderr that cannot take a line is left without one
                _fail(f"cannot write to stdout: {os.strerror(failed[0].error.errno or 0)}{_files_complete()}")
            return 5
        return code


def _command(main: click.Group, argv) -> int:
    Finished.reset()
    try:
        with quiet_float_errors():
            code = main.main(args=argv, prog_name="bnfold", standalone_mode=False)
        return code if isinstance(code, int) else 0  # a command's ctx.exit(N) comes back as N
    except BnfoldError as e:
        if e.exit_code == 3 and os.environ.get("BNFOLD_DEBUG"):  # bnfold's bug, caught and named
            raise
        _fail(str(e))
        return e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        _fail(f"interrupted{_after_writes()}")
        return 130
    except click.NoSuchOption as e:
        _fail(f"no such option: {e.option_name}{_near_options(e)}")
        return 2
    except click.UsageError as e:
        if e.ctx is not None and _asked_for_help(e):
            click.echo(e.ctx.get_help())
            return 0
        _fail(e.format_message().replace("\n", " "))
        return 2
    except click.ClickException as e:
        _fail(e.format_message().replace("\n", " "))
        return 2
    except Interrupted as e:
        _fail(f"interrupted by signal {e.signum}{_after_writes()}")
        return 128 + e.signum
    except Exception as e:  # a bug in bnfold: still one line, traceback only on request
        if os.environ.get("BNFOLD_DEBUG"):
            raise
        what = str(e) if isinstance(e, _EscapedPipeError) else f"{type(e).__name__}: {e}"
        _fail(f"internal error: {what} (set BNFOLD_DEBUG=1 for a traceback)")
        return 3


def _after_writes() -> str:
    """What an interrupt did not undo: the files already written in full."""
    if not Finished.count:
        return ""
    if Finished.count == 1:
        return f" after {Finished.last} was written in full"
    return f" after {Finished.count} files were written in full (the last: {Finished.last})"


def _files_complete() -> str:
    """After a failed stdout: the files the command wrote are complete (exit 5 then means only
    that its printing failed, the README's exit-code table says so)."""
    if not Finished.count:
        return ""
    if Finished.count == 1:
        return f"; {Finished.last} was written in full"
    return f"; the files it wrote are complete (the last: {Finished.last})"


def _asked_for_help(error: click.UsageError) -> bool:
    """`bnfold` or `bnfold recipe` alone: a group called without a command shows its help."""
    return isinstance(error, getattr(click.exceptions, "NoArgsIsHelpError", ()))


def _near_options(error: click.NoSuchOption) -> str:
    """Suggestions for a misspelt option among every option the command has, hidden ONE flags
    included (click's own hint can pick an unrelated visible flag)."""
    command = error.ctx.command if error.ctx else None
    names = [n for p in getattr(command, "params", []) for n in p.opts + p.secondary_opts if n.startswith("--")]
    from . import one  # only for a misspelt option: its tables load nowhere else on optimize's path

    return one.did_you_mean(error.option_name, names) if names else ""


class _GuardedStream(io.RawIOBase):
    """The file descriptor under sys.stdout or sys.stderr, as the command writes to it. A write
    the other end cannot take is not raised into the command: a closed reader (EPIPE) is simply
    gone, any other failure (ENOSPC from /dev/full, EIO, EFBIG) is kept in `error` for the exit
    code. Either way the descriptor is pointed at /dev/null, so every later write (this process's,
    a library's C code, a child's) succeeds and is dropped."""

    def __init__(self, name: str, fd: int):
        super().__init__()
        self.name, self.fd = name, fd
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data) -> int:
        try:
            return os.write(self.fd, data)
        except BrokenPipeError:
            pass
        except OSError as e:
            self.error = self.error or e
        _point_at_devnull(self.fd)
        return len(data)


def _point_at_devnull(fd: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


@contextlib.contextmanager
def guarded_output():
    """sys.stdout and sys.stderr, when they are the process's descriptors 1 and 2, write through
    a _GuardedStream for the block (each keeps its encoding and buffering); yields the guards.
    What the streams held before is flushed first, through the same rule."""
    guards, originals = [], {}
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name)
        if not _writes_to(stream, fd):
            continue
        guard = _GuardedStream(name, fd)
        _flush_or_drop(stream, guard)
        originals[name] = stream
        setattr(sys, name, _text_over(guard, stream))
        guards.append(guard)
    try:
        yield guards
    finally:
        for name, stream in originals.items():
            with contextlib.suppress(OSError, ValueError):
                getattr(sys, name).flush()
            setattr(sys, name, stream)


def _writes_to(stream, fd: int) -> bool:
    try:
        return stream is not None and not stream.closed and stream.fileno() == fd
    except (AttributeError, OSError, ValueError):  # a capture without a descriptor (tests, IDEs)
        return False


def _flush_or_drop(stream, guard: _GuardedStream) -> None:
    try:
        stream.flush()
    except BrokenPipeError:
        _point_at_devnull(guard.fd)
        stream.flush()  # now into /dev/null
    except OSError as e:
        guard.error = e
        _point_at_devnull(guard.fd)
        with contextlib.suppress(OSError):
            stream.flush()


def _text_over(guard: _GuardedStream, like) -> io.TextIOWrapper:
    return io.TextIOWrapper(
        io.BufferedWriter(guard),
        encoding=like.encoding,
        errors=like.errors,
        line_buffering=like.line_buffering,
        write_through=getattr(like, "write_through", False),
    )


@contextlib.contextmanager
def quiet_float_errors():
    """No numpy floating-point warning (overflow, inf - inf, 0 * inf) reaches stderr. They come
    from arithmetic on the user's own values, and every place where such a value decides something
    examines it explicitly instead: a fold whose result is not finite is refused with that reason
    in the report (engine/affine.py), a check compares NaN and inf outputs by rule
    (values/diff.py), and a recipe value that does not fit its type is refused (recipe/chef.py)."""
    import numpy as np

    with np.errstate(all="ignore"):
        yield


def _fail(message: str) -> None:
    first = message.strip().splitlines()[0] if message.strip() else "error"
    click.echo(f"bnfold: error: {first}", err=True)
