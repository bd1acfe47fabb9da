"""The `bnfold` program (`python -m bnfold` and the console script). Loading the command line's
modules takes a moment: a Ctrl-C then is the same one line and exit 130 as one during the command,
not a traceback.

The modules are loaded with the garbage collector paused, and what they created is then frozen
(left out of every later collection): a start creates ~40k objects the collector tracks (functions,
classes, numpy's and click's tables), all alive until the process ends, and the collections the
imports started walked them again and again for no garbage (~10 ms of CPU). The command itself runs
with the collector on, except that `optimize` pauses it from reading to writing (api.py,
io/gcpause.py) and, optimizing one model, keeps it paused to the exit (cli/optimize.py:
api.pause_to_exit), so that no collection walks the model's objects after the pause to free none.

Before numpy loads, OpenBLAS's worker threads are told to sleep as soon as they have nothing to do
(OPENBLAS_THREAD_TIMEOUT, unless the user set it): by default each spins for ~0.1 s after numpy's
import and after every matrix product, waiting for the next one. Optimizing a model makes no
matrix product (the folds are elementwise), so that spin only took a core from the work the kernel
does for bnfold (writing the output) and from the other workers of a batch: ~85 ms of CPU a run.
The threads still serve the reference interpreter's matrix products; they wake when work comes.

numpy is imported first, here, rather than where bnfold's modules first ask for it. CPython 3.11
keeps its frames on a stack of 16 KB chunks and unmaps a chunk as soon as the frame that opened it
returns. Imported from the depth of bnfold's own nested imports, numpy's module bodies ran right at
the end of the first chunk and crossed it again and again: ~1,700 chunks mapped, faulted in and
unmapped in one run (1,724 16 KB mmaps against 1 this way; ~1,750 fewer page faults)."""

import gc
import os
import sys

BLAS_THREAD_TIMEOUT = "4"  # OpenBLAS waits 2**4 cycles for work before its threads sleep (its minimum)


def main() -> None:
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", BLAS_THREAD_TIMEOUT)
    gc.disable()
    try:
        import numpy  # noqa: F401  (first, at the top of the stack: see above)

        from .cli import entry
    except KeyboardInterrupt:
        sys.stderr.write("bnfold: error: interrupted\n")
        sys.exit(130)
    gc.freeze()
    gc.enable()
    entry()


if __name__ == "__main__":
    main()
