"""fuse_add_with_fully_connected: an ADD after FULLY_CONNECTED into its bias (the backward fold restricted to ADD)."""

import pytest

from bn_models import channel_shapes, fc
from single_op_folds import fold_one, leaves_other_kind, only_the_first_op, refuses_activation_on_layer

PASS = "fuse_add_with_fully_connected"


@pytest.mark.parametrize("cshape", channel_shapes(2, 4), ids=str)
def test_folds_every_constant_shape(cshape):
    fold_one(fc, PASS, "ADD", cshape)


def test_takes_the_activation_and_works_without_a_bias():
    fold_one(lambda: fc(bias=False), PASS, "ADD", act="RELU6")


def test_folds_only_the_add_of_a_batch_norm():
    only_the_first_op(fc, PASS, "ADD", "MUL")


def test_leaves_a_mul_alone():
    leaves_other_kind(fc, PASS, "MUL")


def test_refuses_an_activation_on_the_layer():
    refuses_activation_on_layer(fc, PASS, "ADD")
