"""fold_shape: a SHAPE of a tensor with a static shape becomes that shape (a constant), whatever
computes the tensor; a dynamic shape, a scalar and a model output stay, with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_values_agree
from bnfold import api
from bnfold.ir.graph import Options
from bnfold.recipe.chef import build

PASS = "fold_shape"


def shape_net(out_type="INT32") -> Net:
    """x [2, 7, 3] -> RELU -> r -> SHAPE -> s -> RESHAPE(r, s) -> y: the exporters' reshape target."""
    n = Net()
    n.input("x", [2, 7, 3])
    r = n.op("RELU", ["x"], "r", [2, 7, 3])
    n.tensor("s", [3], out_type)
    s = n.op("SHAPE", [r], "s", [3])
    if out_type == "INT64":  # LiteRT's RESHAPE reads an INT32 shape
        n.tensor("s32", [3], "INT32")
        s = n.op("CAST", [s], "s32", [3])
    n.outputs = [n.op("RESHAPE", [r, s], "y", [2, 7, 3])]
    return n


def shape_model(net: Net):
    """The net's model with SHAPE's out_type option, which LiteRT reads (the chef writes none)."""
    model = build(net.recipe())
    for op in model.graphs[0].ops:
        if op.kind == "SHAPE":
            op.options = Options("ShapeOptions", outType={"INT32": 2, "INT64": 4}[op.outputs[0].dtype])
    return model


def optimize_and_compare(net: Net, passes, counts, *, numerics=True):
    original, model = shape_model(net), shape_model(net)
    report = api.apply_passes(model, passes)
    assert {k: model.op_counts().get(k, 0) for k in counts} == counts
    if numerics:
        assert_values_agree(original, model)
    return model, report


@pytest.mark.parametrize("out_type", ["INT32", "INT64"])
def test_shape_of_a_static_tensor_is_a_constant(out_type):
    model, report = optimize_and_compare(shape_net(out_type), [PASS], {"SHAPE": 0, "RESHAPE": 1})
    s = model.graphs[0].tensor("s")
    assert s.data.dtype == np.dtype(out_type.lower()) and s.data.tolist() == [2, 7, 3]
    assert [fold["constants"] for fold in report.folds] == [["s"]]


def test_shape_of_a_dynamic_tensor_stays_and_says_why():
    model = shape_model(shape_net())
    graph = model.graphs[0]
    for name in ("x", "r", "y"):
        graph.tensor(name).shape_signature = (-1, 7, 3)
    report = api.apply_passes(model, [PASS])
    assert report.folds == [] and "dynamic shape" in report.not_folded[0]["reason"]


def test_shape_that_is_a_model_output_stays():
    n = shape_net()
    n.outputs = ["s"]
    _, report = optimize_and_compare(n, [PASS], {"SHAPE": 1}, numerics=False)
    assert "seen from outside" in report.not_folded[0]["reason"]
