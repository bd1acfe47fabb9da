"""bnfold's version: what reports carry and `bnfold --version` prints (pyproject.toml says the same)."""

__version__ = "0.1.0"
