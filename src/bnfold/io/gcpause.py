"""Pausing Python's cyclic garbage collector while reading or writing a model.

Reading lifts every tensor and operator into a new object and writing packs one record per
table: hundreds of thousands of allocations that start collections which walk every live object
again and again, about a fifth of the time on a 36k-operator graph, for nothing, since neither
step leaves cyclic garbage behind (the IR's own cycles stay alive). Reference counting still
frees everything it can meanwhile.

Leaving the pause, what it made is moved to the oldest generation at once (gc.freeze, then
gc.unfreeze: no object is walked, and the count of new objects starts again from zero). Left
young, the model just read would be walked by the first collection after the pause, again when
it is promoted, and a third time by the full collection that follows (~8% of the CPU of a
36k-operator graph's run); in the oldest generation only a full collection walks it, and any
cyclic garbage the pause left is still found there. (This also unfreezes what the program froze
at start, __main__.py: it joins the oldest generation too.)
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
            gc.freeze()
            gc.unfreeze()
            gc.enable()
