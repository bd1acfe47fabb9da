"""The `bnfold` program (`python -m bnfold` and the console script). Loading the command line's
modules takes a moment: a Ctrl-C then is the same one line and exit 130 as one during the command,
not a traceback."""

import sys


def main() -> None:
    try:
        from .cli import entry
    except KeyboardInterrupt:
        sys.stderr.write("bnfold: error: interrupted\n")
        sys.exit(130)
    entry()


if __name__ == "__main__":
    main()
