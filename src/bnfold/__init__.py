"""bnfold: fold batch normalization into conv-like layers of TFLite and Circle models, exactly.

`bnfold.optimize(model, passes=..., check=...)` is the library entry point (pipeline.py).
"""

__version__ = "0.1.0"

from .pipeline import Optimized, optimize  # noqa: E402  (after __version__, which pipeline reads)

__all__ = ["Optimized", "optimize", "__version__"]
