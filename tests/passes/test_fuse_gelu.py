"""fuse_gelu: 0.5·x·(1 + erf(x/√2)) written with a CUSTOM Erf, in each grouping of the product and
with x/√2 as a MUL or a DIV, becomes one GELU whose LiteRT values match the written-out form (run
by the reference interpreter's erf); other constants, activations and shared intermediates stay."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bn_models import Net, assert_said
from bnfold import api
from custom_ops import resolve_and_compare

PASS = "fuse_gelu"
SHAPE = [3, 4, 2]
INV_SQRT2 = float(np.float32(math.sqrt(0.5)))


def gelu_net(grouping="xa_half", *, div=False, scale=None, one=1.0, half=0.5, act="NONE", expose=None) -> Net:
    n = Net()
    n.input("x", SHAPE)
    c = n.const("c", [], values=[scale if scale is not None else float(np.float32(math.sqrt(2))) if div else INV_SQRT2])
    t = n.op("DIV" if div else "MUL", ["x", c], "t", SHAPE)
    n.tensor("e", SHAPE)
    n.operations.append({"type": "CUSTOM", "custom_code": "Erf", "inputs": [t], "outputs": ["e"]})
    a = n.op("ADD", [n.const("one", [1], values=[one]), "e"], "a", SHAPE)
    h = n.const("half", [], values=[half])
    if grouping == "xa_half":
        y = n.op("MUL", [n.op("MUL", ["x", a], "m", SHAPE), h], "y", SHAPE, fused_activation_function=act)
    elif grouping == "x_ahalf":
        y = n.op("MUL", ["x", n.op("MUL", [h, a], "m", SHAPE)], "y", SHAPE, fused_activation_function=act)
    else:
        y = n.op("MUL", [n.op("MUL", ["x", h], "m", SHAPE), a], "y", SHAPE, fused_activation_function=act)
    n.outputs = [y] + ([expose] if expose else [])
    return n


@pytest.mark.parametrize("div", [False, True])
@pytest.mark.parametrize("grouping", ["xa_half", "x_ahalf", "xhalf_a"])
def test_written_out_gelu_becomes_one(grouping, div):
    model, report = resolve_and_compare(
        gelu_net(grouping, div=div).recipe(), [PASS], {"GELU": 1, "MUL": 0, "DIV": 0, "ADD": 0}
    )
    (gelu,) = model.graphs[0].ops
    assert gelu.inputs[0].name == "x" and gelu.outputs[0].name == "y" and gelu.options.approximate is False
    assert report.folds[0]["activation"] == "GELU"


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(scale=0.7071), None),  # near 1/√2, not it: another function, no candidate
        (dict(one=2.0), None),
        (dict(half=0.25), None),
        (dict(act="RELU"), "MUL 'y' has a fused RELU"),
        (dict(expose="e"), "'e' is a model output, so it must stay computed"),
        (dict(expose="m"), None),  # the walk of the product stops at the shared m: nothing said (a gap)
    ],
)
def test_other_forms_stay(case, reason):
    model = gelu_net(**case).model()
    report = api.apply_passes(model, [PASS])
    assert not report.folds and model.op_counts().get("GELU", 0) == 0 and model.op_counts()["CUSTOM(Erf)"] == 1
    assert_said(report, PASS, reason)
