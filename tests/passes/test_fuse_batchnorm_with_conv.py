"""fuse_batchnorm_with_conv: folds every chain form and constant shape, skips every guard with a
reason, never touches a shared filter, keeps the real-exporter fixtures exact, reports."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bn_models import (
    ELEMENTWISE_ZERO,
    FORMS,
    NEGATIVE,
    Net,
    build,
    chain,
    channel_shapes,
    check_negative,
    conv2d,
    inputs_for,
    mul_add,
    optimize_and_compare,
    positive,
)
from bnfold import api
from bnfold.values import litert
from conftest import DATA, fixture_input, run_litert

PASS = "fuse_batchnorm_with_conv"


@pytest.mark.parametrize("cshape", channel_shapes(4, 4), ids=str)
def test_folds_every_constant_shape(cshape):
    model, report = optimize_and_compare(
        positive(conv2d, mul_add(), cshape), [PASS], {"CONV_2D": 1, **ELEMENTWISE_ZERO}
    )
    assert len(report.folds) == 1


@pytest.mark.parametrize("form", FORMS)
def test_folds_every_chain_form(form):
    optimize_and_compare(positive(conv2d, FORMS[form]), [PASS], {"CONV_2D": 1, **ELEMENTWISE_ZERO})


def test_creates_bias_when_missing():
    model, report = optimize_and_compare(
        positive(lambda: conv2d(bias=False), mul_add()), [PASS], {"CONV_2D": 1, **ELEMENTWISE_ZERO}
    )
    conv = model.graphs[0].ops[0]
    assert conv.input(2) is not None and conv.input(2).shape == (4,)
    assert report.folds[0]["buffers_created"] == ["new bias"]


def test_takes_the_activation_of_the_last_op():
    model, _ = optimize_and_compare(positive(conv2d, mul_add(act="RELU6")), [PASS], {"CONV_2D": 1, **ELEMENTWISE_ZERO})
    assert model.graphs[0].ops[0].fused_activation == "RELU6"


@pytest.mark.parametrize("case", NEGATIVE)
def test_skips(case):
    check_negative(conv2d, PASS, case)


def test_intermediate_read_elsewhere_stops_the_chain():
    """conv -> MUL -> ADD with the MUL output also read elsewhere: only the MUL folds (exact: the
    other reader sees the same scaled value, now produced by the conv); the ADD stays."""
    n, y = conv2d()
    bn = chain(n, y, mul_add())
    n.outputs = [bn, n.op("RELU", ["bn_0"], "other_reader", n.shapes[y])]
    model, report = optimize_and_compare(n.recipe(), [PASS], {"CONV_2D": 1, "MUL": 0, "ADD": 1})
    assert [f["removed"][0]["kind"] for f in report.folds] == ["MUL"]
    assert any("other readers" in s["reason"] for s in report.skips)


def test_shared_filter_is_never_edited():
    """Two convs share one filter tensor; only the first is followed by a batch norm. The second
    conv's output is bit-identical and the shared buffer unchanged."""
    n = Net()
    n.input("ifm", [1, 5, 7, 3])
    n.const("filter", [4, 3, 2, 3])
    n.const("bias", [4])
    for name in ("conv_a", "conv_b"):
        n.op("CONV_2D", ["ifm", "filter", "bias"], name, [1, 5, 7, 4], padding="SAME", stride_w=1, stride_h=1)
    n.outputs = [chain(n, "conv_a", mul_add()), "conv_b"]
    recipe = n.recipe()
    original, model = build(recipe), build(recipe)
    shared = model.graphs[0].tensor("filter")
    before = np.array(shared.data, copy=True)
    report = api.apply_passes(model, [PASS])
    assert len(report.folds) == 1 and model.op_counts()["MUL"] == 0
    a, b = model.graphs[0].ops[:2]
    assert b.input(1) is shared and a.input(1) is not shared
    assert shared.data.tobytes() == before.tobytes()
    xs = inputs_for(original)
    want, have = litert.run(original, xs), litert.run(model, xs)
    assert have[1].tobytes() == want[1].tobytes()
    np.testing.assert_allclose(have[0], want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fixture", ["conv_relu_bn.tflite", "conv_bn_two_consumers.tflite"])
def test_fixtures_keep_their_batch_norm_and_stay_exact(fixture, tmp_path):
    model = api.load(str(DATA / fixture))
    report = api.apply_passes(model, [PASS])
    assert not report.folds
    assert model.op_counts()["MUL"] == 1 and model.op_counts()["ADD"] == 1
    assert [(s["at"]["kind"], s["pass"]) for s in report.skips] == [("MUL", PASS), ("ADD", PASS)]  # one per op
    out = tmp_path / fixture
    api.save(model, str(out))
    x = fixture_input(fixture)
    for want, have in zip(run_litert(DATA / fixture, [x]), run_litert(out, [x])):
        np.testing.assert_array_equal(have, want)


def test_report_json_from_the_cli(tmp_path):
    """`bnfold optimize --report` lists every fold (pass, subgraph, layer, removed ops, scale and
    shift absorbed, buffers) and every skip (where, why)."""
    from bnfold.io.atomic import save_model

    n, y = conv2d()
    bn = chain(n, y, mul_add(act="RELU"))
    n.op(
        "CONV_2D",
        [bn, "filter2", "bias2"],
        "conv2",
        [1, 5, 7, 4],
        padding="SAME",
        stride_w=1,
        stride_h=1,
        fused_activation_function="RELU",
    )
    n.const("filter2", [4, 1, 1, 4])
    n.const("bias2", [4])
    chain(n, "conv2", mul_add(), name="bn2")
    recipe = n.recipe()
    src, out, rep = tmp_path / "in.tflite", tmp_path / "out.tflite", tmp_path / "r.json"
    model = build(recipe)
    save_model(model, str(src), model.format)
    done = subprocess.run(
        [sys.executable, "-m", "bnfold", "optimize", str(src), str(out), "--passes", PASS, "--report", str(rep)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(rep.read_text())
    (fold,) = report["folds"]
    assert fold["pass"] == PASS and fold["subgraph"] == 0
    assert fold["layer"] == {"index": 0, "kind": "CONV_2D", "output": "conv"}
    assert [r["kind"] for r in fold["removed"]] == ["MUL", "ADD"]
    scale = model.graphs[0].tensor("bn_c0").data.astype(np.float64)
    shift = model.graphs[0].tensor("bn_c1").data.astype(np.float64)
    np.testing.assert_allclose(fold["scale"], scale)
    np.testing.assert_allclose(fold["shift"], shift)
    assert fold["activation"] == "RELU"
    assert sorted(fold["buffers_replaced"]) == ["bias", "filter"] and sorted(fold["buffers_freed"]) == [
        "bn_c0",
        "bn_c1",
    ]
    skip, also = report["skips"]  # one entry for each op of the chain left
    assert skip["pass"] == PASS and skip["at"]["kind"] == "MUL" and "fused RELU" in skip["reason"]
    assert skip["layer"] == "conv2" and skip["reasons"] == {PASS: skip["reason"]}
    assert also["at"]["kind"] == "ADD" and also["reason"] == skip["reason"] and also["chain"] == skip["chain"]
    assert "fuse_batchnorm_with_conv" in done.stdout + done.stderr


NEGATIVE_RECIPES = [
    "Neg_Conv_BN_Activation_000",
    "Neg_Conv_BN_Spatial_000",
    "Neg_TConv_BN_Activation_000",
    "Neg_FC_BN_Reshape_000",
    "Neg_FC_BN_GraphOutput_000",
    "Neg_Conv3D_BN_Spatial_000",
]


@pytest.mark.parametrize("name", NEGATIVE_RECIPES)
def test_negative_recipes_record_why(name):
    """tests/test_recipes.py checks their operator counts and values; here: each says why."""
    from bnfold.recipe.chef import load_recipe
    from bnfold.recipe.rules import expectation
    from conftest import RECIPES

    recipe = load_recipe(RECIPES / f"{name}.toml")
    (pass_name,) = expectation(recipe).passes
    report = api.apply_passes(build(recipe), [pass_name])
    assert not report.folds and report.skips and all(s["pass"] == pass_name and s["reason"] for s in report.skips)
