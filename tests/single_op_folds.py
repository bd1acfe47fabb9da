"""Checks shared by the tests of ONE's single-op folds (fuse_mul_with_* / fuse_add_with_*): the
backward fold restricted to a MUL or to an ADD. Each test module names its pass, layer and op."""

from __future__ import annotations

import numpy as np

from bn_models import chain, optimize_and_compare
from bnfold.ir.ops import LAYERS


def fold_one(layer, pass_name: str, kind: str, cshape=None, act: str = "NONE"):
    """layer -> KIND(c, act): folded completely; the new weights and bias are exactly the backward
    fold of (s, t) = (c, 0) for MUL or (1, c) for ADD. Returns (model, report)."""
    n, y = layer()
    chain(n, y, [(kind, cshape, False, act)])
    recipe = n.recipe()
    layer_kind = recipe["operation"][0]["type"]
    model, report = optimize_and_compare(recipe, [pass_name], {layer_kind: 1, kind: 0})
    (fold,) = report.folds
    spec = LAYERS[layer_kind]
    channels = len(fold["scale"])
    c = np.broadcast_to(_operand(recipe, "bn_c0").reshape(-1), (channels,)).astype(np.float64)
    s, t = (c, np.zeros(channels)) if kind == "MUL" else (np.ones(channels), c)
    np.testing.assert_array_equal(fold["scale"], s)
    np.testing.assert_array_equal(fold["shift"], t)
    op = next(o for o in model.graphs[0].ops if o.kind == layer_kind)
    w0 = _operand(recipe, recipe["operation"][0]["inputs"][spec.weights])
    shape = [1] * w0.ndim
    shape[spec.out_axis] = channels
    np.testing.assert_array_equal(op.input(spec.weights).data, (w0 * s.reshape(shape)).astype(np.float32))
    bias_name = recipe["operation"][0]["inputs"][spec.bias] if len(recipe["operation"][0]["inputs"]) > spec.bias else ""
    b0 = _operand(recipe, bias_name) if bias_name else np.zeros(channels)
    np.testing.assert_array_equal(op.input(spec.bias).data.reshape(-1), (b0 * s + t).astype(np.float32))
    assert op.fused_activation == act
    return model, report


def _operand(recipe: dict, name: str) -> np.ndarray:
    """A constant's values as the chef builds them (the recipe's seed makes them reproducible)."""
    from bnfold.recipe.chef import build

    graph = build(recipe).graphs[0]
    return np.asarray(graph.tensor(name).data, dtype=np.float64)


def only_the_first_op(layer, pass_name: str, kind: str, other: str):
    """layer -> KIND -> OTHER: only KIND folds, OTHER stays after the layer."""
    n, y = layer()
    chain(n, y, [(kind, None, False, "NONE"), (other, None, False, "NONE")])
    recipe = n.recipe()
    layer_kind = recipe["operation"][0]["type"]
    _, report = optimize_and_compare(recipe, [pass_name], {layer_kind: 1, kind: 0, other: 1})
    assert [r["kind"] for r in report.folds[0]["removed"]] == [kind]


def leaves_other_kind(layer, pass_name: str, other: str):
    """layer -> OTHER (the op this pass does not fold): nothing happens, the pass says nothing; the
    batch-norm candidate left gets its one report entry: the layer's batch-norm pass was not run."""
    n, y = layer()
    chain(n, y, [(other, None, False, "NONE")])
    recipe = n.recipe()
    _, report = optimize_and_compare(recipe, [pass_name], {recipe["operation"][0]["type"]: 1, other: 1})
    assert not report.folds and report.counts()[pass_name] == (0, 0)
    [skip] = report.skips
    assert skip["at"]["kind"] == other and skip["pass"] is None and skip["reasons"] == {}
    assert "fuse_batchnorm_with_" in skip["reason"] and "was not run" in skip["reason"]


def refuses_activation_on_layer(layer, pass_name: str, kind: str):
    n, y = layer(act="RELU")
    chain(n, y, [(kind, None, False, "NONE")])
    recipe = n.recipe()
    _, report = optimize_and_compare(recipe, [pass_name], {recipe["operation"][0]["type"]: 1, kind: 1})
    assert not report.folds and any("fused RELU" in s["reason"] for s in report.skips), report.skips
