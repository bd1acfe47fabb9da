"""The expectation half of a recipe: which passes to run, what operator counts must follow, and
how close the optimized model's outputs must stay.

    [expect]
    passes = ["fuse_batchnorm_with_conv"]     # omitted: the default set
    rules = { CONV_2D = 1, MUL = 0, ADD = 0 }  # operator counts after optimizing (all subgraphs)
    rtol = 1e-5
    atol = 1e-5
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UsageError
from ..ir.model import Model
from .keys import EXPECT_KEYS, check_keys


@dataclass
class Expectation:
    passes: list[str] | None
    rules: dict[str, int] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5


def expectation(recipe: dict, where: str = "recipe") -> Expectation:
    """The recipe's [expect] table, refused unless well-formed: a misspelt key or operator would
    make a rule that can never fail."""
    spec = recipe.get("expect", {})
    if not isinstance(spec, dict):
        raise UsageError("recipe [expect] must be a table")
    check_keys(spec, EXPECT_KEYS, f"{where} [expect]")
    rules = spec.get("rules", {})
    if not isinstance(rules, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in rules.values()):
        raise UsageError("recipe rules must be operator = count")
    # a custom operator is counted by its code (Model.op_counts: CUSTOM(AddV2)); the code is the recipe's own
    named = {kind for kind in rules if not (kind.startswith("CUSTOM(") and kind.endswith(")"))}
    check_keys({kind: rules[kind] for kind in named}, _operator_kinds(), f"{where} [expect] rules")
    passes = spec.get("passes")
    if passes is not None and not (isinstance(passes, list) and all(isinstance(p, str) for p in passes)):
        raise UsageError("recipe expect.passes must be a list of pass names")
    tolerances = [spec.get("rtol", 1e-5), spec.get("atol", 1e-5)]
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) and t >= 0 for t in tolerances):
        raise UsageError("recipe expect.rtol and expect.atol must be non-negative numbers")
    return Expectation(passes, dict(rules), float(tolerances[0]), float(tolerances[1]))


def _operator_kinds() -> set[str]:
    """Every operator either format knows by name."""
    from ..io.formats import CIRCLE, TFLITE

    return set(TFLITE.op_codes) | set(CIRCLE.op_codes)


def broken_rules(model: Model, rules: dict[str, int]) -> list[str]:
    """Human-readable list of the operator-count rules `model` does not meet."""
    counts = model.op_counts()
    return [
        f"{kind} = {counts.get(kind, 0)}, expected {want}"
        for kind, want in rules.items()
        if counts.get(kind, 0) != want
    ]
