"""fuse_mul_with_fullyconnected: a MUL after FULLY_CONNECTED into its weights and bias (the backward
fold restricted to MUL)."""

import pytest

from bn_models import channel_shapes, fc
from single_op_folds import fold_one, leaves_other_kind, only_the_first_op, refuses_activation_on_layer

PASS = "fuse_mul_with_fullyconnected"


@pytest.mark.parametrize("cshape", channel_shapes(2, 4), ids=str)
def test_folds_every_constant_shape(cshape):
    fold_one(fc, PASS, "MUL", cshape)


def test_takes_the_activation_and_works_without_a_bias():
    fold_one(lambda: fc(bias=False), PASS, "MUL", act="RELU6")


def test_folds_only_the_mul_of_a_batch_norm():
    only_the_first_op(fc, PASS, "MUL", "ADD")


def test_leaves_a_add_alone():
    leaves_other_kind(fc, PASS, "ADD")


def test_refuses_an_activation_on_the_layer():
    refuses_activation_on_layer(fc, PASS, "MUL")
