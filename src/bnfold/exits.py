"""How a failure of the command line becomes one line on stderr and an exit code.

0 success; 1 a malformed model or h5 file, or values that differ (CheckFailed); 2 a usage error:
a bad option or value, a missing, unreadable or special (directory, FIFO, device) input file;
3 an internal error (a bug in bnfold; BNFOLD_DEBUG=1 shows the traceback); 4 a check that could
not be carried out (CannotVerify); 128 + N a termination signal N while a file was written, 130
Ctrl-C. The README's "Exit codes" table says the same. `bnfold` or `bnfold recipe` without a
command prints its help (exit 0). A reader that closes stdout early is not an error (exit 0).
The program's process then ends with that code through `leave`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from typing import NoReturn

import click

from . import one
from .errors import BnfoldError, Interrupted
from .io.atomic import CAUGHT_SIGNALS, Finished


class _ReaderGone(Exception):
    """stdout's reader closed the pipe. Raised in place of BrokenPipeError, which click would
    turn into exit status 1."""


class Group(click.Group):
    """The bnfold command group: a closed stdout pipe is not an error."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _ReaderGone() from None


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
    a flush that fails (the reader closed the pipe), which it reports as it always has, and a
    process something still has to finish after the program returns: a profiler, tracer or
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
    except (_ReaderGone, BrokenPipeError):  # the reader went away (`bnfold passes | head -1`): not an error
        _silence_stdout()
        return 0
    except Exception as e:  # a bug in bnfold: still one line, traceback only on request
        if os.environ.get("BNFOLD_DEBUG"):
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set BNFOLD_DEBUG=1 for a traceback)")
        return 3


def _after_writes() -> str:
    """What an interrupt did not undo: the files already written in full."""
    if not Finished.count:
        return ""
    if Finished.count == 1:
        return f" after {Finished.last} was written in full"
    return f" after {Finished.count} files were written in full (the last: {Finished.last})"


def _asked_for_help(error: click.UsageError) -> bool:
    """`bnfold` or `bnfold recipe` alone: a group called without a command shows its help."""
    return isinstance(error, getattr(click.exceptions, "NoArgsIsHelpError", ()))


def _near_options(error: click.NoSuchOption) -> str:
    """Suggestions for a misspelt option among every option the command has, hidden ONE flags
    included (click's own hint can pick an unrelated visible flag)."""
    command = error.ctx.command if error.ctx else None
    names = [n for p in getattr(command, "params", []) for n in p.opts + p.secondary_opts if n.startswith("--")]
    return one.did_you_mean(error.option_name, names) if names else ""


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


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
