"""What the value check offers before any of it runs: its backends, modes and default tolerance,
and the words every command uses for an output a check proved little about.

Here, apart from values/, so that offering them (click's choices, api's defaults, the library's
argument checks) loads nothing of the check: `optimize` without --check imports no module of
values/ (tests/test_layers.py).
"""

BACKENDS = ("auto", "litert", "onert", "reference")  # values/backend.py: who runs a model in a check
CHECK_MODES = ("auto", "whole", "local")  # values/verify.py: what optimize --check compares
DEFAULT_RTOL = 1e-5  # values/diff.py: the default tolerance (ONE's value tests)
DEFAULT_ATOL = 1e-5
CRITERION = "|a - b| <= atol + rtol * max|a|"


def describe(name: str, level: str, why: str) -> str:
    """An output a check proved little about, in the words every command uses for it."""
    return f"{name!r} {'proves nothing' if level == 'none' else 'barely varies'} ({why})"
