"""fuse_batchnorm_with_concat: the negative recipes keep their batch norm, and the report says why
(recipes/ holds the positive ones, value-tested by tests/test_recipes.py): a concatenation along
the width does not split the channels between its parts' layers; a part read elsewhere must keep
the unscaled value."""

from __future__ import annotations

import pytest

from bn_models import assert_said, optimize_and_compare
from bnfold.recipe.chef import load_recipe
from conftest import RECIPES

PASS = "fuse_batchnorm_with_concat"


@pytest.mark.parametrize(
    "name, counts, reason",
    [
        (
            "Neg_Concat_BN_Axis_000",
            {"CONV_2D": 2, "CONCATENATION": 1, "MUL": 1, "ADD": 1},
            "constant 'scale' of shape [4] varies along axis 3, not only the channel axis 2",
        ),
        (
            "Neg_Concat_BN_OtherReader_000",
            {"CONV_2D": 2, "CONCATENATION": 1, "MUL": 2, "ADD": 1},
            "part 't1': it has other readers or is a graph output, and must keep the unscaled value",
        ),
    ],
)
def test_batch_norm_after_a_concatenation_stays_and_says_why(name, counts, reason):
    _, report = optimize_and_compare(load_recipe(RECIPES / f"{name}.toml"), [PASS], counts)
    assert report.folds == []
    assert_said(report, PASS, reason)
