"""fuse_add_with_conv: an ADD after CONV_2D into its bias (the backward fold restricted to ADD)."""

import pytest

from bn_models import assert_said, channel_shapes, conv2d, optimize_and_compare
from bnfold.recipe.chef import load_recipe
from conftest import RECIPES
from single_op_folds import fold_one, leaves_other_kind, only_the_first_op, refuses_activation_on_layer

PASS = "fuse_add_with_conv"


@pytest.mark.parametrize("cshape", channel_shapes(4, 4), ids=str)
def test_folds_every_constant_shape(cshape):
    fold_one(conv2d, PASS, "ADD", cshape)


def test_takes_the_activation_and_works_without_a_bias():
    fold_one(lambda: conv2d(bias=False), PASS, "ADD", act="RELU6")


def test_folds_only_the_add_of_a_batch_norm():
    only_the_first_op(conv2d, PASS, "ADD", "MUL")


def test_leaves_a_mul_alone():
    leaves_other_kind(conv2d, PASS, "MUL")


def test_refuses_an_activation_on_the_layer():
    refuses_activation_on_layer(conv2d, PASS, "ADD")


def test_an_add_varying_along_the_width_stays_and_says_why():
    """ONE's FuseAddWithConv negative: an ADD of a [4, 6] constant is no batch-norm candidate, so
    the skip list has no entry for it; the report's not_folded says why it stays."""
    recipe = load_recipe(RECIPES / "Neg_Conv_Add_NotChannelwise_000.toml")
    _, report = optimize_and_compare(recipe, [PASS], {"CONV_2D": 1, "ADD": 1})
    assert report.skips == []
    assert_said(report, PASS, "constant 'add_const' of shape [4, 6] varies along axis 2, not only the channel axis 3")
