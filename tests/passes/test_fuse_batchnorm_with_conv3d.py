"""fuse_batchnorm_with_conv3d: DHWIO filter, output channel on axis 4, 5-D constants."""

import pytest

from bn_models import (
    ELEMENTWISE_ZERO,
    FORMS,
    NEGATIVE,
    channel_shapes,
    check_negative,
    conv3d,
    mul_add,
    optimize_and_compare,
    positive,
)

PASS = "fuse_batchnorm_with_conv3d"
COUNTS = {"CONV_3D": 1, **ELEMENTWISE_ZERO}


@pytest.mark.parametrize("cshape", channel_shapes(5, 4), ids=str)
def test_folds_every_constant_shape(cshape):
    _, report = optimize_and_compare(positive(conv3d, mul_add(), cshape), [PASS], COUNTS)
    assert len(report.folds) == 1


def test_creates_bias_when_missing():
    model, _ = optimize_and_compare(positive(lambda: conv3d(bias=False), mul_add(act="RELU")), [PASS], COUNTS)
    layer = model.graphs[0].ops[0]
    assert layer.input(2).shape == (4,) and layer.fused_activation == "RELU"


@pytest.mark.parametrize("form", FORMS)
def test_folds_every_chain_form(form):
    optimize_and_compare(positive(conv3d, FORMS[form]), [PASS], COUNTS)


@pytest.mark.parametrize("case", NEGATIVE)
def test_skips(case):
    check_negative(conv3d, PASS, case)
