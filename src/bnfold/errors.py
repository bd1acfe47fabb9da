"""The project's own error types.

Everything a user can cause (a bad file, a bad flag, a refused conversion) is raised as one of
these; the CLI turns them into a one-line message and an exit code. Anything else escaping is a
bug in bnfold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .values.diff import CheckResult
    from .values.local import LocalResult


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


class UsageError(BnfoldError):
    """The command line or configuration is wrong."""

    exit_code = 2


class CheckFailed(BnfoldError):
    """A value check found outputs outside tolerance; `result` is the check's, when one value
    check (not a summary of several) failed."""

    exit_code = 1

    def __init__(self, message: str, path: str | None = None, result: CheckResult | LocalResult | None = None):
        super().__init__(message, path)
        self.result = result


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
