"""decompose_hardswish: HARD_SWISH becomes circle2circle's ADD(x, 3) -> RELU6 -> MUL(1/6) ->
MUL(x, ·), exact up to float rounding (against LiteRT's HARD_SWISH and in onert, which has none);
only float32, never together with fuse_hardswish, and never for a target that lacks those ops."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, build_copy
from bnfold import api
from bnfold.errors import UsageError
from bnfold.recipe.chef import build
from bnfold.values import litert, onert

PASS = "decompose_hardswish"
SHAPE = [1, 5, 7, 6]


def _net(dtype: str = "FLOAT32") -> dict:
    n = Net()
    x = n.input("x", SHAPE)
    n.operands[-1]["dtype"] = dtype
    n.outputs = [n.op("HARD_SWISH", [x], "y", SHAPE)]
    n.operands[-1]["dtype"] = dtype
    return n.recipe()


def _x() -> np.ndarray:  # spans every piece of relu6(x + 3): below -3, the ramp, above 3
    return np.random.default_rng(0).normal(0, 4, SHAPE).astype(np.float32)


def test_hard_swish_becomes_ones_decomposition_with_its_names_and_constants():
    model = build(_net())
    report = api.apply_passes(model, [PASS])
    graph = model.graphs[0]
    assert [op.kind for op in graph.ops] == ["ADD", "RELU6", "MUL", "MUL"]
    add, relu6, scale, product = graph.ops
    assert add.inputs[0].name == "x" and add.inputs[1].name == "y/Add/const" and add.inputs[1].shape == ()
    assert float(add.inputs[1].data) == 3.0 and float(scale.inputs[1].data) == np.float32(1 / 6)
    assert scale.inputs[0] is relu6.outputs[0] and product.inputs == (add.inputs[0], scale.outputs[0])
    assert product.outputs[0].name == "y" and all(op.fused_activation == "NONE" for op in (add, scale, product))
    [fold] = report.folds
    assert fold["pass"] == PASS and fold["decomposed"]


def test_the_decomposition_is_hard_swish_up_to_float_rounding():
    original, model = build(_net()), build(_net())
    api.apply_passes(model, [PASS])
    x = _x()
    (want,) = litert.run(original, [x])
    (have,) = litert.run(build_copy(model), [x])
    ulp = np.spacing(np.abs(want).astype(np.float32))
    assert np.all(np.abs(have - want) <= 2 * ulp)  # measured: within 2 ulp of y
    assert not np.array_equal(want, np.zeros_like(want))


@pytest.mark.skipif(onert.missing() is not None, reason=str(onert.missing()))
def test_onert_runs_the_decomposition_as_litert_runs_hard_swish():
    original, model = build(_net()), build(_net())
    api.apply_passes(model, [PASS])
    x = _x()
    (want,) = litert.run(original, [x])
    (have,) = onert.Session(build_copy(model))([x])
    np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-6)


def test_not_float32_is_left_alone():
    recipe = _net()
    for operand in recipe["operand"]:
        operand["dtype"] = "FLOAT16"
    model = build(recipe)
    report = api.apply_passes(model, [PASS])
    assert model.op_counts() == {"HARD_SWISH": 1} and not report.folds
    assert_said(report, PASS, "hard swish of FLOAT16, not float32 (left as ONE leaves it)")


def test_never_with_fuse_hardswish():
    with pytest.raises(UsageError, match="undo each other"):
        api.apply_passes(build(_net()), [PASS, "fuse_hardswish"])


def test_not_for_a_target_without_those_ops():
    model = build(_net())
    report = api.apply_passes(model, [PASS], "any")  # the input has no ADD, RELU6 or MUL
    assert model.op_counts() == {"HARD_SWISH": 1}
    assert "the input has no ADD" in report.to_dict()["target"]["refused"][0]["reason"]


def test_a_one_cfg_switches_it_on(tmp_path):
    model = tmp_path / "m.tflite"
    api.save_model(build(_net()), str(model), api.format_from_extension(str(model)))
    cfg = tmp_path / "one.cfg"
    cfg.write_text(
        f"[one-optimize]\ninput_path={model}\noutput_path={tmp_path / 'o.circle'}\ndecompose_hardswish=True\n"
    )
    from bnfold.cli import run

    assert run(["optimize", "--config", str(cfg)]) == 0
    assert dict(api.load(str(tmp_path / "o.circle")).op_counts()) == {"ADD": 1, "RELU6": 1, "MUL": 2}
