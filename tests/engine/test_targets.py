"""The runtime a model is made for: no pass makes what the target cannot run, and says so in the
report; the default target follows the output's format (.tflite litert, .circle onert)."""

from __future__ import annotations

import pytest

from bn_models import Net, chain, conv2d, mul_add
from bnfold import api
from bnfold.engine.targets import Target, default_target
from bnfold.errors import UsageError
from bnfold.recipe.chef import build
from conftest import DATA, FIXTURES

SHAPE = [1, 5, 7, 6]


def _hard_swish_net() -> dict:
    """x -> ADD(3, RELU6) -> MUL(x, r) -> DIV(6): TICO's decomposed nn.Hardswish."""
    n = Net()
    x = n.input("x", SHAPE)
    r = n.op("ADD", [x, n.const("three", [], values=[3.0])], "r", SHAPE, fused_activation_function="RELU6")
    p = n.op("MUL", [r, x], "p", SHAPE)
    n.outputs = [n.op("DIV", [p, n.const("six", [], values=[6.0])], "y", SHAPE)]
    return n.recipe()


@pytest.mark.parametrize("target", ["onert", "any"])
def test_fuse_hardswish_is_refused_for_a_target_without_it(target):
    model = build(_hard_swish_net())
    report = api.apply_passes(model, ["fuse_hardswish"], target)
    assert "HARD_SWISH" not in model.op_counts() and not report.folds
    [refused] = report.to_dict()["target"]["refused"]
    assert refused["pass"] == "fuse_hardswish" and refused["at"]["output"] == "r"
    expected = "onert does not run HARD_SWISH" if target == "onert" else "the input has no HARD_SWISH"
    assert expected in refused["reason"]


def test_fuse_hardswish_on_litert_and_by_the_input_format():
    for target in ("litert", None):  # the recipe is TFLite: its format's target is litert
        model = build(_hard_swish_net())
        report = api.apply_passes(model, ["fuse_hardswish"], target)
        assert model.op_counts()["HARD_SWISH"] == 1 and report.to_dict()["target"] == {"name": "litert", "refused": []}


def test_a_fused_activation_no_runtime_computes_is_not_made():
    """Conv -> MUL -> ADD(TANH): both runtimes load CONV_2D with a fused TANH and ignore it (the
    table), so the chain is not folded into a conv that would carry it, whatever the target."""
    n, y = conv2d(channels=6, in_shape=(1, 5, 7, 3))
    n.outputs = [chain(n, y, mul_add(act="TANH"))]
    for target in ("litert", "onert"):
        model = build(n.recipe())
        report = api.apply_passes(model, ["fuse_batchnorm_with_conv"], target)
        assert model.op_counts()["ADD"] == 1 and not report.folds
        assert "does not run CONV_2D with a fused TANH" in report.unsupported[0]["reason"]


def test_the_default_target_follows_the_output(tmp_path):
    circle = DATA / "torch_conv_bn_nchw.circle"
    as_tflite = api.optimize_file(circle, tmp_path / "o.tflite")
    as_circle = api.optimize_file(circle, tmp_path / "o.circle")
    assert as_tflite.report["target"]["name"] == "litert" and as_circle.report["target"]["name"] == "onert"
    assert api.optimize(circle).report["target"]["name"] == "onert"  # nothing written: the input's format
    assert api.optimize(circle, target="any").report["target"]["name"] == "any"
    assert default_target("tflite") == "litert"


def test_an_unknown_target_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="target must be one of litert, onert, any"):
        api.optimize(DATA / "torch_conv_bn_nchw.circle", target="tpu")
    with pytest.raises(UsageError):
        Target("tpu")


def test_any_allows_what_the_input_had():
    target = Target("any", frozenset({"CONV_2D", "HARD_SWISH"}))
    assert target.refusal("HARD_SWISH") is None and target.refusal("CONV_2D", "RELU") is None
    assert "the input has no RESHAPE" in target.refusal("RESHAPE")
    assert "does not run CONV_2D with a fused TANH" in target.refusal("CONV_2D", "TANH")


@pytest.mark.parametrize("name", FIXTURES)
def test_any_makes_no_operator_kind_the_input_lacks(name):
    """Every fixture (keras, TICO, the converter's pre-activation ResNet): with target any, the
    output's operator kinds are among the input's, and the report says what that cost."""
    result = api.optimize(DATA / name, target="any")
    before, after = result.report["operators"]["before"], result.report["operators"]["after"]
    assert set(after) <= set(before), sorted(set(after) - set(before))


def test_any_refuses_the_pre_activation_relu_the_input_lacks():
    """resnet_v2_mini has no standalone RELU: the pre-activation fold leaves one, so for any it
    is refused with that reason (for litert it folds)."""
    for_any = api.optimize(DATA / "resnet_v2_mini.tflite", target="any").report
    for_litert = api.optimize(DATA / "resnet_v2_mini.tflite").report
    assert "RELU" in for_litert["operators"]["after"] and "RELU" not in for_any["operators"]["before"]
    reasons = {r["reason"] for r in for_any["target"]["refused"] if r["pass"] == "fuse_preactivation_batchnorm"}
    assert reasons == {"the input has no RELU, and the target is any (only operators the input already had)"}
