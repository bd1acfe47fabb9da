"""bnfold: fold batch normalization into conv-like layers of TFLite and Circle models, exactly.

`bnfold.optimize(model, passes=..., check=...)` is the library entry point (pipeline.py).
"""

__version__ = "0.1.0"

__all__ = ["Optimized", "optimize", "__version__"]


def __getattr__(name: str):
    """`bnfold.optimize` and `bnfold.Optimized` on first use, so `import bnfold` (and with it every
    CLI command) does not pay for the whole pipeline's imports."""
    if name in ("Optimized", "optimize"):
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'bnfold' has no attribute {name!r}")
