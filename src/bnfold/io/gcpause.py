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


@contextmanager
def paused_gc():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
