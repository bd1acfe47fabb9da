"""fuse_prelu: relu(x) + (x - |x|)·α·0.5 (either MUL order, either ADD operand order) becomes one
PRELU with LiteRT outputs equal bit for bit; another factor, an α that broadcasts x, activations
and shared intermediates stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, build_copy, inputs_for, optimize_and_compare
from bnfold.recipe.chef import build
from bnfold.values import litert

PASS = "fuse_prelu"
SHAPE = [2, 3, 4]


def prelu_net(*, alpha_shape=(4,), half=0.5, half_first=False, relu_first=True, act="NONE", expose=None) -> Net:
    n = Net()
    n.input("x", SHAPE)
    a = n.op("ABS", ["x"], "a", SHAPE)
    r = n.op("RELU", ["x"], "r", SHAPE)
    s = n.op("SUB", ["x", a], "s", SHAPE)
    alpha, h = n.const("alpha", list(alpha_shape), low=-1.0, high=1.0), n.const("half", [], values=[half])
    first, second = (h, alpha) if half_first else (alpha, h)
    out_shape = list(np.broadcast_shapes(tuple(alpha_shape), tuple(SHAPE)))
    m1 = n.op("MUL", [s, first], "m1", out_shape)
    m2 = n.op("MUL", [second, m1], "m2", out_shape)
    n.outputs = [n.op("ADD", [r, m2] if relu_first else [m2, r], "y", out_shape, fused_activation_function=act)]
    if expose:
        n.outputs.append(expose)
    return n


@pytest.mark.parametrize("alpha_shape", [(4,), (1, 1, 4), (1,), ()])
@pytest.mark.parametrize("half_first, relu_first", [(False, True), (True, False)])
def test_written_out_prelu_becomes_one(alpha_shape, half_first, relu_first):
    recipe = prelu_net(alpha_shape=alpha_shape, half_first=half_first, relu_first=relu_first).recipe()
    model, report = optimize_and_compare(
        recipe, [PASS], {"PRELU": 1, "ABS": 0, "SUB": 0, "MUL": 0, "ADD": 0, "RELU": 0}
    )
    (prelu,) = model.graphs[0].ops
    assert [t.name for t in prelu.inputs] == ["x", "alpha"] and prelu.outputs[0].name == "y"
    xs = inputs_for(build(recipe))
    assert np.array_equal(litert.run(build(recipe), xs)[0], litert.run(build_copy(model), xs)[0])  # bit for bit


@pytest.mark.parametrize(
    "case", [dict(half=0.25), dict(alpha_shape=(2, 1, 1, 4)), dict(act="RELU"), dict(expose="s"), dict(expose="r")]
)
def test_other_forms_stay(case):
    optimize_and_compare(prelu_net(**case).recipe(), [PASS], {"PRELU": 0, "ABS": 1, "ADD": 1})


@pytest.mark.parametrize(
    "fmt, target, made", [("circle", None, False), ("circle", "litert", True), ("tflite", "onert", False)]
)
def test_the_target_decides_whether_a_prelu_is_made(fmt, target, made):
    """A Circle output's default target, onert, fails to prepare PRELU (ir/runtimes.py: "NYI for
    operation 'PReLU'"): the written-out form stays and the report says why; LiteRT runs it."""
    from bnfold import api
    from bnfold.io.formats import CIRCLE, TFLITE

    model = build(prelu_net().recipe(), CIRCLE if fmt == "circle" else TFLITE)
    report = api.apply_passes(model, [PASS], target=target).to_dict()
    assert model.op_counts().get("PRELU", 0) == int(made) and model.op_counts().get("ABS", 0) == int(not made)
    refused = report["target"]["refused"]
    if made:
        assert not refused and len(report["folds"]) == 1
    else:
        assert [(r["pass"], r["at"]["kind"], r["reason"]) for r in refused] == [
            (PASS, "ADD", "onert does not run PRELU")
        ]
