"""A wall-clock limit for a value check (`--timeout`)."""

from __future__ import annotations

import time

from ..errors import CannotVerify


class Deadline:
    """A wall-clock limit for a check (None: no limit); `check()` raises once it has passed."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.end = None if seconds is None else time.monotonic() + seconds

    def check(self) -> None:
        if self.end is not None and time.monotonic() > self.end:
            raise self.error()

    def error(self) -> CheckTimeout:
        return CheckTimeout(f"value check stopped: its --timeout of {self.seconds:g} s ran out")


class CheckTimeout(CannotVerify):
    """The check ran out of its --timeout (it could not be completed: exit 4)."""
