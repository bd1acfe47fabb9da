"""Every rewrite of ONE's O1 pattern passes is covered by the per-rewrite check (values/local.py,
`--check-mode local`): on each positive recipe, -O1's changes form at least one region, each run
before and after in the reference interpreter (which has kernels for every operator they make or
remove, TensorFlow's CUSTOM ops included) and found within tolerance."""

from __future__ import annotations

import pytest

from bn_models import apply_for_no_target
from bnfold import api
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.values.diff import Tolerance
from bnfold.values.local import check_rewrites
from conftest import RECIPES

RECIPES_OF_O1_PASSES = [
    "Net_Conv_Min_Max_000",
    "Net_Conv_Min_Relu_000",
    "Net_Mul_Div_000",
    "Net_Mul_Div_001",
    "Net_Mean_Mean_000",
    "Net_Gelu_001",
    "Net_Conv_PReluGraph_000",
    "Net_Horizontal_FullyConnected_Add_000",
    "Net_TConv_Slice_000",
    "Net_BroadcastTo_AddV2_000",
    "BatchMatMulV2_000",
    "MatMul_000",
    "SplitV_000",
    "FullyConnected_008",
    "Net_FC_Gelu_FC_000",
    "Net_InstanceNorm_001",
    "MaxPoolWithArgmax_001",
]

# INSTANCE_NORM runs in no runtime of the target table (every target refuses it): its rewrite is
# checked made for no target (tests/passes/test_fuse_instnorm.py)
MADE_FOR_NO_TARGET = {"Net_InstanceNorm_001"}


@pytest.mark.parametrize("name", RECIPES_OF_O1_PASSES)
def test_o1_rewrite_is_checked_on_its_own(name):
    recipe = load_recipe(RECIPES / f"{name}.toml")
    fmt = recipe_format(recipe)
    original, model = build(recipe, fmt), build(recipe, fmt)
    if name in MADE_FOR_NO_TARGET:
        report = apply_for_no_target(model, *recipe["expect"]["passes"])
    else:
        report = api.apply_passes(model, recipe["expect"]["passes"])
    assert report.folds
    local = check_rewrites(original, model, samples=2, tolerance=Tolerance(1e-5, 1e-5), folds=report.folds)
    assert local.regions and local.passed, local.table()
    assert all(r.folds for r in local.regions)  # each region is tied to the fold that made it
