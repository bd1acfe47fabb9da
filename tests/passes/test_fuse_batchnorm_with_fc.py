"""fuse_batchnorm_with_fc: weights [O, I] scaled by row, also through a RESHAPE that keeps the
last axis (the RESHAPE stays); every guard skipped with a reason."""

import pytest

from bn_models import (
    ELEMENTWISE_ZERO,
    FORMS,
    NEGATIVE,
    Net,
    chain,
    channel_shapes,
    check_negative,
    fc,
    mul_add,
    optimize_and_compare,
    positive,
)

PASS = "fuse_batchnorm_with_fc"
COUNTS = {"FULLY_CONNECTED": 1, **ELEMENTWISE_ZERO}


@pytest.mark.parametrize("cshape", channel_shapes(2, 4), ids=str)
def test_folds_every_constant_shape(cshape):
    _, report = optimize_and_compare(positive(fc, mul_add(), cshape), [PASS], COUNTS)
    assert len(report.folds) == 1


@pytest.mark.parametrize("cshape", channel_shapes(3, 4), ids=str)
def test_folds_with_keep_num_dims(cshape):
    optimize_and_compare(
        positive(lambda: fc(in_shape=(2, 3, 6), keep_num_dims=True), mul_add(), cshape), [PASS], COUNTS
    )


def test_creates_bias_when_missing():
    model, _ = optimize_and_compare(positive(lambda: fc(bias=False), mul_add(act="RELU6")), [PASS], COUNTS)
    layer = model.graphs[0].ops[0]
    assert layer.input(2).shape == (4,) and layer.fused_activation == "RELU6"


def _fc_reshape(new_shape) -> tuple[Net, str]:
    n, y = fc(in_shape=(6, 5))
    shape = n.const("new_shape", [len(new_shape)], values=new_shape, dtype="INT32")
    return n, n.op("RESHAPE", [y, shape], "reshaped", new_shape)


@pytest.mark.parametrize("cshape", channel_shapes(3, 4), ids=str)
def test_folds_through_a_reshape_keeping_the_last_axis(cshape):
    n, y = _fc_reshape([2, 3, 4])
    chain(n, y, [("MUL", cshape, True, "NONE"), ("SUB", cshape, False, "RELU")])
    model, report = optimize_and_compare(n.recipe(), [PASS], {**COUNTS, "RESHAPE": 1})
    assert [r["kind"] for r in report.folds[0]["removed"]] == ["MUL", "SUB"]
    assert model.graphs[0].ops[0].fused_activation == "RELU"


def test_reshape_changing_the_last_axis_is_not_a_candidate():
    n, y = _fc_reshape([3, 8])
    chain(n, y, mul_add([8]))
    _, report = optimize_and_compare(n.recipe(), [PASS], {"FULLY_CONNECTED": 1, "RESHAPE": 1, "MUL": 1, "ADD": 1})
    assert not report.folds


def test_reshape_output_is_graph_output():
    n, y = _fc_reshape([2, 3, 4])
    n.outputs = [chain(n, y, mul_add()), y]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"FULLY_CONNECTED": 1, "RESHAPE": 1, "MUL": 1, "ADD": 1})
    assert any("graph output" in s["reason"] for s in report.skips if s["pass"] == PASS), report.skips


def test_reshape_output_read_elsewhere():
    n, y = _fc_reshape([2, 3, 4])
    n.outputs = [chain(n, y, mul_add()), n.op("RELU", [y], "other_reader", [2, 3, 4])]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"FULLY_CONNECTED": 1, "RESHAPE": 1, "MUL": 1, "ADD": 1})
    assert any(s["pass"] == PASS for s in report.skips), report.skips


def test_fc_output_read_elsewhere_through_reshape():
    n, y = _fc_reshape([2, 3, 4])
    n.outputs = [chain(n, y, mul_add()), "fc"]
    _, report = optimize_and_compare(n.recipe(), [PASS], {"FULLY_CONNECTED": 1, "RESHAPE": 1, "MUL": 1, "ADD": 1})
    assert any("graph output" in s["reason"] for s in report.skips if s["pass"] == PASS), report.skips


@pytest.mark.parametrize("form", FORMS)
def test_folds_every_chain_form(form):
    optimize_and_compare(positive(fc, FORMS[form]), [PASS], COUNTS)


@pytest.mark.parametrize("case", NEGATIVE)
def test_skips(case):
    check_negative(fc, PASS, case)
