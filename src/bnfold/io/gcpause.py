"""Pausing Python's cyclic garbage collector while reading or writing a model.

Reading lifts every tensor and operator into a new object and writing packs one record per
table: hundreds of thousands of allocations that start collections which walk every live object
again and again, about a fifth of the time on a 36k-operator graph, for nothing, since neither
step leaves cyclic garbage behind (the IR's own cycles stay alive). Reference counting still
frees everything it can meanwhile.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

_WAS_ON: list[bool] = []  # for each pause entered and not left: whether the collector ran before it


@contextmanager
def paused_gc():
    enabled = gc.isenabled()
    gc.disable()
    _WAS_ON.append(enabled)
    try:
        yield
    finally:
        _WAS_ON.pop()
        if enabled:
            gc.enable()


def pause_to_exit() -> None:
    """Pause the collector for the rest of the process, as a pause that found it on (the steps
    that leave cyclic garbage still resume it: `collecting`). For a program that exits right
    after one model: the first collection after a pause walks every object the pause made (the
    whole IR, ~0.1 s on a 36k-operator graph) and frees none of them, all alive to the exit,
    which skips freeing them too (exits.leave). Not for a caller that goes on to other models
    (nothing would collect their cycles: batch.py collects before each model itself)."""
    if gc.isenabled() and not _WAS_ON:  # (inside a pause, the pause decides)
        gc.disable()
        _WAS_ON.append(True)  # the outermost pause, never left


@contextmanager
def collecting():
    """The collector on again inside pauses that found it on, for a step that leaves cyclic
    garbage (running an interpreter); paused again after it."""
    resume = bool(_WAS_ON) and _WAS_ON[0] and not gc.isenabled()
    if resume:
        gc.enable()
    try:
        yield
    finally:
        if resume:
            gc.disable()
