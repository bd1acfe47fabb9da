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


@dataclass
class Expectation:
    passes: list[str] | None
    rules: dict[str, int] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5


def expectation(recipe: dict) -> Expectation:
    spec = recipe.get("expect", {})
    rules = spec.get("rules", {})
    if not all(isinstance(v, int) for v in rules.values()):
        raise UsageError("recipe rules must be operator = count")
    return Expectation(spec.get("passes"), dict(rules), float(spec.get("rtol", 1e-5)), float(spec.get("atol", 1e-5)))


def broken_rules(model: Model, rules: dict[str, int]) -> list[str]:
    """Human-readable list of the operator-count rules `model` does not meet."""
    counts = model.op_counts()
    return [f"{kind} = {counts.get(kind, 0)}, expected {want}" for kind, want in rules.items() if counts.get(kind, 0) != want]
