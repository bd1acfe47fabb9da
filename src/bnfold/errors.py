"""The project's own error types.

Everything a user can cause (a bad file, a bad flag, a refused conversion) is raised as one of
these; the CLI turns them into a one-line message and an exit code. Anything else escaping is a
bug in bnfold.
"""


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
    """A value check found outputs outside tolerance."""

    exit_code = 1


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
