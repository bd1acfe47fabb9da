"""fuse_batchnorm_with_tconv: OHWI filter with O on axis 0, optional bias created, operator
version raised for the bias (3) and a fused activation (4) in TFLite, activation kept as a
standalone op in Circle; every guard skipped with a reason."""

import numpy as np
import pytest

from bn_models import (
    ELEMENTWISE_ZERO,
    FORMS,
    NEGATIVE,
    build,
    chain,
    channel_shapes,
    check_negative,
    inputs_for,
    mul_add,
    optimize_and_compare,
    positive,
    tconv,
)
from bnfold import api
from bnfold.io.formats import CIRCLE, TFLITE
from bnfold.values import litert

PASS = "fuse_batchnorm_with_tconv"
COUNTS = {"TRANSPOSE_CONV": 1, **ELEMENTWISE_ZERO}


@pytest.mark.parametrize("cshape", channel_shapes(4, 5), ids=str)
def test_folds_every_constant_shape(cshape):
    _, report = optimize_and_compare(positive(tconv, mul_add(), cshape), [PASS], COUNTS)
    assert len(report.folds) == 1


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("channels,kernel", [(5, (3, 3)), (2, (3, 3)), (4, (5, 1))], ids=["5out", "out=in", "5x1"])
def test_folds_with_and_without_bias(bias, channels, kernel):
    model, report = optimize_and_compare(
        positive(lambda: tconv(bias, channels=channels, kernel=kernel), mul_add()), [PASS], COUNTS
    )
    layer = model.graphs[0].ops[0]
    assert len(layer.inputs) == 4 and layer.input(3).shape == (channels,)
    assert layer.opcode.version == 3 and layer.fused_activation == "NONE"


@pytest.mark.parametrize("act", ["RELU", "RELU6"])
def test_activation_is_fused_at_version_4_in_tflite(act):
    model, report = optimize_and_compare(positive(tconv, mul_add(act=act)), [PASS], COUNTS)
    layer = model.graphs[0].ops[0]
    assert layer.fused_activation == act and layer.opcode.version == 4
    assert report.folds[0]["opcode_version"] == [1, 4]


def test_version_is_never_lowered():
    model, report = optimize_and_compare(positive(lambda: tconv(bias=True, version=5), mul_add()), [PASS], COUNTS)
    assert model.graphs[0].ops[0].opcode.version == 5 and "opcode_version" not in report.folds[0]


def test_activation_is_a_standalone_op_in_circle():
    recipe = positive(tconv, mul_add(act="RELU6"))
    original, model = build(recipe, CIRCLE), build(recipe, CIRCLE)
    report = api.apply_passes(model, [PASS])
    assert dict(model.op_counts()) == {"TRANSPOSE_CONV": 1, "RELU6": 1}
    layer, relu = model.graphs[0].ops
    assert layer.fused_activation == "NONE" and relu.outputs[0].name == "bn"
    assert report.folds[0]["standalone_activation"] == "bn"
    xs = inputs_for(original)
    np.testing.assert_allclose(litert.run(model, xs)[0], litert.run(original, xs)[0], rtol=1e-5, atol=1e-5)


def test_the_standalone_activation_is_made_only_where_the_target_runs_it():
    """For onert a chain ending in RELU_N1_TO_1 stays, with the reason: Circle's fold would write it
    as an op of its own, which onert does not run (found by the O1 fuzzer on a Circle input: the
    output gate stopped it, exit 3); RELU6 folds. (onert 0.1.0 runs no TRANSPOSE_CONV at all,
    "KernelGenerator: NYI": LiteRT computes the values.)"""
    kept = build(positive(tconv, mul_add(act="RELU_N1_TO_1")), CIRCLE)
    report = api.apply_passes(kept, [PASS], target="onert")
    assert not report.folds and dict(kept.op_counts()) == {"TRANSPOSE_CONV": 1, "MUL": 1, "ADD": 1}
    assert report.unsupported[0]["reason"] == "onert does not run RELU_N1_TO_1"
    recipe = positive(tconv, mul_add(act="RELU6"))
    original, model = build(recipe, CIRCLE), build(recipe, CIRCLE)
    assert len(api.apply_passes(model, [PASS], target="onert").folds) == 1
    xs = inputs_for(original)
    np.testing.assert_allclose(litert.run(model, xs)[0], litert.run(original, xs)[0], rtol=1e-5, atol=1e-5)


def test_a_tflite_model_written_as_circle_gets_the_standalone_activation():
    """What the output will be decides (the target's `writes`): a TFLite model written as Circle
    gets Circle's standalone activation and no TFLite operator version."""
    model = build(positive(tconv, mul_add(act="RELU6")), TFLITE)
    report = api.apply_passes(model, [PASS], target="onert", writes=CIRCLE)  # what `m.tflite o.circle` makes
    assert dict(model.op_counts()) == {"TRANSPOSE_CONV": 1, "RELU6": 1}
    assert report.folds[0]["standalone_activation"] == "bn" and "opcode_version" not in report.folds[0]


@pytest.mark.parametrize("form", FORMS)
def test_folds_every_chain_form(form):
    optimize_and_compare(positive(tconv, FORMS[form]), [PASS], COUNTS)


@pytest.mark.parametrize("case", NEGATIVE)
def test_skips(case):
    check_negative(tconv, PASS, case)


def test_skip_leaves_version_alone():
    n, y = tconv(act="RELU")
    chain(n, y, mul_add())
    model, _ = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE_CONV": 1, "MUL": 1, "ADD": 1})
    assert model.graphs[0].ops[0].opcode.version == 1
