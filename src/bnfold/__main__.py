"""The `bnfold` program (`python -m bnfold` and the console script). Loading the command line's
modules takes a moment: a Ctrl-C then is the same one line and exit 130 as one during the command,
not a traceback.

The modules are loaded with the garbage collector paused, and what they created is then frozen
(left out of every later collection): a start creates ~40k objects the collector tracks (functions,
classes, numpy's and click's tables), all alive until the process ends, and the collections the
imports started walked them again and again for no garbage (~10 ms of CPU). The command itself runs
with the collector on."""

import gc
import sys


def main() -> None:
    gc.disable()
    try:
        from .cli import entry
    except KeyboardInterrupt:
        sys.stderr.write("bnfold: error: interrupted\n")
        sys.exit(130)
    gc.freeze()
    gc.enable()
    entry()


if __name__ == "__main__":
    main()
