"""Model Explorer, the LiteRT ecosystem's graph viewer, as bnfold sees a model (the `[explorer]` extra).

- `graphs.py`: a model read by bnfold's own reader (Circle or TFLite) as Model Explorer graphs,
  built with the package's graph builder: every subgraph, operator (custom ones by their custom
  code), tensor and signature as bnfold lifted it.
- `main.py`: the adapter extension Model Explorer loads (`model-explorer m.circle
  --extensions=bnfold.explorer` imports `bnfold.explorer.main`).
- `node_data.py`: an optimize run's report as node-data overlays, built with the package's
  node-data builder: per operator what it took in, its rewrite's check error and, for every
  batch-norm candidate left, why.

Nothing in bnfold's core imports this package; each module here imports `model_explorer` itself,
so importing `bnfold.explorer` alone costs nothing and needs no extra.
"""

MISSING = "Model Explorer is not installed: pip install 'bnfold[explorer]' (the ai-edge-model-explorer package)"


def require() -> None:
    """Refuse (UsageError) when Model Explorer is missing: before any work, not after it."""
    import importlib.util

    from ..errors import UsageError

    if importlib.util.find_spec("model_explorer") is None:
        raise UsageError(MISSING)
