"""The check the resolve_customop_* tests make: a model holding TensorFlow ops left as CUSTOM
runs only in the reference interpreter (reference/custom_kernels.py, TensorFlow's semantics); the
resolved one must run in LiteRT's builtin kernels and agree with it, and the per-rewrite check
(values/local.py) must pass on it."""

from __future__ import annotations

import numpy as np

from bn_models import ATOL, RTOL, build_copy, inputs_for
from bnfold import api
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from bnfold.values import litert
from bnfold.values.diff import Tolerance
from bnfold.values.local import check_rewrites


def resolve_and_compare(recipe: dict, passes: list[str], counts: dict[str, int]):
    """Build twice, resolve one, check operator counts (CUSTOM ops counted as "CUSTOM(code)"),
    the original in the reference interpreter against the result in LiteRT, and each rewrite on
    its own; returns (model, report). A model with a CUSTOM op left runs in the interpreter."""
    original, model = build(recipe), build(recipe)
    report = api.apply_passes(model, passes)
    got = model.op_counts()
    assert {k: got.get(k, 0) for k in counts} == counts, f"operator counts {dict(got)}"
    xs = inputs_for(original)
    resolved = not any(op.kind == "CUSTOM" for g in model.graphs for op in g.ops)
    run = litert.run if resolved else interpreter.run  # a CUSTOM op left runs in the interpreter only
    for want, have in zip(interpreter.run(original, xs), run(build_copy(model), xs)):
        assert want.dtype == have.dtype and want.shape == have.shape
        np.testing.assert_allclose(have, want, rtol=RTOL, atol=ATOL)
    if report.folds:
        local = check_rewrites(original, model, samples=2, tolerance=Tolerance(RTOL, ATOL))
        assert local.regions and all(r.passed for r in local.regions)
    return model, report
