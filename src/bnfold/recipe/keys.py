"""Which keys each recipe table may hold, and the one refusal of any other (naming the closest):
a misspelt key would silently define nothing. The chef (chef.py) and the rules (rules.py) both
ask it; neither imports the other for it."""

from __future__ import annotations

from ..errors import UsageError

GRAPH_KEYS = {"name", "operand", "operation", "input", "output"}
RECIPE_KEYS = GRAPH_KEYS | {"description", "seed", "format", "subgraph", "signature", "metadata", "expect"}
OPERAND_KEYS = {"name", "shape", "dtype", "filler", "quant", "sparsity"}
OPERATION_KEYS = {"type", "inputs", "outputs", "options", "options_type", "version", "custom_code", "custom_options"}
SIGNATURE_KEYS = {"key", "subgraph", "inputs", "outputs"}
METADATA_KEYS = {"name", "text"}
FILLER_KEYS = {"kind", "mean", "stddev", "low", "high", "value", "values"}
QUANT_KEYS = {"scale", "zero_point", "quantized_dimension"}
SPARSITY_KEYS = {"traversal_order", "block_map", "dim_metadata"}
DIMENSION_KEYS = {"format", "dense_size", "array_segments", "array_indices"}
EXPECT_KEYS = {"passes", "rules", "rtol", "atol"}  # [expect]: recipe/rules.py


def check_keys(table: dict, allowed: set, what: str) -> None:
    """Refuse a key `allowed` lacks, naming it and the closest allowed one."""
    import difflib

    for key in sorted(set(table) - allowed):
        close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(sorted(allowed))})"
        after = " (top-level keys must come before any [[table]])" if key in RECIPE_KEYS - allowed else ""
        raise UsageError(f"{what}: unknown key {key!r}{hint}{after}"[:400])
