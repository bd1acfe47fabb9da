"""The project's own error types.

Everything a user can cause (a bad file, a bad flag, a refused conversion) is raised as one of
these; the CLI turns them into a one-line message and an exit code. Anything else escaping is a
bug in bnfold.

Interrupted, the signals that raise it and `Finished` (what an interrupt leaves written) are here,
beside the errors, because both sides need them: io/atomic.py raises and records, the program's
exit handling (exits.py) reports, and neither reaches into the other.
"""

from __future__ import annotations

import signal
from typing import Protocol


class CheckedTable(Protocol):
    """What a failed value check hands its error (values/diff.py: CheckResult, values/local.py:
    LocalResult): who ran it, on how many samples, and the table the command prints. A protocol,
    so that this module, which every layer imports, imports none of them."""

    backend: str
    samples: int

    def table(self) -> str: ...


# A run of many models exits with the first of these that some model exited with (batch.py; the
# README and `optimize --help` print this order). A bug in bnfold (3) says the most about the run,
# then an output that could not be written (5: a full disk, the file-size limit; the models after
# it likely fail the same way), then a refused path or option (2), then a model that is malformed
# or whose check differs (1), then a check that could not be carried out (4).
EXIT_PRECEDENCE = (3, 5, 2, 1, 4)
CAUGHT_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class BnfoldError(Exception):
    """Base class. `exit_code` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        message = super().__str__()
        return f"{self.path}: {message}" if self.path else message


class ModelError(BnfoldError):
    """The model file is unreadable, malformed, or cannot be written as asked."""

    exit_code = 1
    op: object = None  # the operator the problem is about, when there is one (ir/invariants.py)


class InternalError(BnfoldError):
    """bnfold's own bug, caught before it reached a file: a pass left a model that breaks what the
    reader enforces, or an operator whose recorded shapes its inputs and options contradict
    (ir/invariants.py: check_output). Nothing is written."""

    exit_code = 3

    def __str__(self) -> str:
        return f"{super().__str__()} (internal error: a bug in bnfold; nothing written)"


class UsageError(BnfoldError):
    """The command line or configuration is wrong."""

    exit_code = 2


class CheckFailed(BnfoldError):
    """A value check found outputs outside tolerance; `result` is the check's, when one value
    check (not a summary of several) failed."""

    exit_code = 1
    report: dict | None = None  # optimize's report, set when the check of an optimize run failed (api.py)

    def __init__(self, message: str, path: str | None = None, result: CheckedTable | None = None):
        super().__init__(message, path)
        self.result = result
        self.report: dict | None = None  # optimize's report up to the failed check (api.py), for --report


class CannotVerify(BnfoldError):
    """A value check could not be carried out: no backend runs the model (not a difference)."""

    exit_code = 4


class RunFailed(CannotVerify):
    """One backend cannot run the model: it has no kernel for an operator, or a kernel failed
    while running (an index out of range, an input type it refuses). The value check tries the
    next backend; when none runs the model, it could not verify (exit 4): never a difference."""


class WriteFailed(BnfoldError):
    """An output could not be written: no space left, a file-size limit (EFBIG), a disk error.
    Nothing was written (io/atomic.py removed the temporary file) and the input is intact."""

    exit_code = 5


class Interrupted(BaseException):
    """A termination signal arrived while a file was being written (raised by io.atomic so the
    temporary file is removed). A BaseException, like KeyboardInterrupt: no handler of errors
    may swallow it. The CLI exits with 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Finished:
    """The files this process has renamed into place (count and last), so an interrupt that
    comes after a write can say the file is complete (io/atomic.py notes each rename; exits.py
    resets it per command)."""

    count = 0
    last: str | None = None

    @classmethod
    def reset(cls) -> None:
        cls.count, cls.last = 0, None

    @classmethod
    def note(cls, path: str) -> None:
        cls.count, cls.last = cls.count + 1, path
