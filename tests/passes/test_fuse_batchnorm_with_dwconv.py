"""fuse_batchnorm_with_dwconv: per output channel for any depth multiplier, every chain form and
constant shape; every guard skipped with a reason."""

import pytest

from bn_models import (
    ELEMENTWISE_ZERO,
    FORMS,
    NEGATIVE,
    channel_shapes,
    check_negative,
    dwconv,
    mul_add,
    optimize_and_compare,
    positive,
)

PASS = "fuse_batchnorm_with_dwconv"
COUNTS = {"DEPTHWISE_CONV_2D": 1, **ELEMENTWISE_ZERO}


@pytest.mark.parametrize("cshape", channel_shapes(4, 6), ids=str)
def test_folds_every_constant_shape(cshape):
    _, report = optimize_and_compare(positive(dwconv, mul_add(), cshape), [PASS], COUNTS)
    assert len(report.folds) == 1


@pytest.mark.parametrize("multiplier", [1, 2, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_folds_over_all_output_channels(multiplier, bias):
    """The constant has I·M entries (not I, as ONE assumes); a missing bias is created."""
    model, report = optimize_and_compare(positive(lambda: dwconv(multiplier, bias), mul_add()), [PASS], COUNTS)
    layer = model.graphs[0].ops[0]
    assert layer.input(2).shape == (3 * multiplier,) and len(report.folds[0]["scale"]) == 3 * multiplier


@pytest.mark.parametrize("form", FORMS)
def test_folds_every_chain_form(form):
    optimize_and_compare(positive(dwconv, FORMS[form]), [PASS], COUNTS)


@pytest.mark.parametrize("case", NEGATIVE)
def test_skips(case):
    check_negative(dwconv, PASS, case)


def test_constant_of_input_channels_only_is_refused():
    """A [I] constant after an M=2 depthwise conv does not broadcast per output channel."""
    recipe = positive(dwconv, mul_add(), [3])
    from bn_models import build
    from bnfold import api

    model = build(recipe)
    report = api.apply_passes(model, [PASS])
    assert not report.folds and model.op_counts()["MUL"] == 1
    assert any("does not match 6 channels" in s.record["reason"] for s in report.said)
    assert report.skips == []  # a [3] constant does not broadcast onto 6 channels: no batch-norm candidate
