"""bnfold: fold batch normalization into conv-like layers of TFLite and Circle models, exactly.

The library is the command line's own layer (bnfold/api.py; many models in one run: batch.py,
built on it); each command is one function:

    import bnfold
    data, report = bnfold.optimize("model.tflite")        # bytes and a report; nothing written
    bnfold.optimize_file("in.tflite", "out.circle", check=3)   # `bnfold optimize`
    bnfold.optimize_many(["models/"], "out/", jobs=2)            # `bnfold optimize --out-dir out -j 2 models`
    bnfold.convert(...), bnfold.inspect(...), bnfold.check(...), bnfold.run(...), bnfold.h5diff(...),
    bnfold.build_recipe(...), bnfold.test_recipes(...)

`help(bnfold.api)` is the guide; `help(bnfold.optimize)` (and each other name) documents one
function. Errors are the types of bnfold.errors, with the message the command line prints.
"""

from .version import __version__

_API = (
    "Optimized",
    "Inspection",
    "Ran",
    "optimize",
    "optimize_file",
    "optimize_many",
    "convert",
    "inspect",
    "check",
    "run",
    "h5diff",
    "build_recipe",
    "test_recipes",
    "read_config",
    "select",
    "load",
    "save",
    "apply_passes",
    "PASSES",
)
__all__ = [*_API, "__version__"]


def __getattr__(name: str):
    """The library's names on first use, so `import bnfold` stays cheap until one is called."""
    if name == "optimize_many":  # many models, each one api.optimize_file (batch.py imports api)
        from .batch import optimize_many

        return optimize_many
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'bnfold' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
