"""substitute_squeeze_to_reshape: a SQUEEZE becomes a RESHAPE to its output shape (values kept); a
SQUEEZE with two dynamic dimensions left stays (a RESHAPE takes one -1)."""

from __future__ import annotations

from bn_models import Net, assert_said, optimize_and_compare
from bnfold import api
from bnfold.recipe.chef import build

PASS = "substitute_squeeze_to_reshape"


def squeeze_net(shape=(1, 7, 1, 5), dims=(0, 2), out=(7, 5)) -> Net:
    n = Net()
    n.input("x", list(shape))
    h = n.op("EXP", ["x"], "h", list(shape))
    s = n.op("SQUEEZE", [h], "s", list(out), squeeze_dims=list(dims))
    n.outputs = [n.op("TANH", [s], "y", list(out))]
    return n


def test_squeeze_becomes_a_reshape():
    model, report = optimize_and_compare(squeeze_net().recipe(), [PASS], {"SQUEEZE": 0, "RESHAPE": 1})
    reshape = next(op for op in model.graphs[0].ops if op.kind == "RESHAPE")
    assert list(reshape.options.newShape) == [7, 5] and len(report.folds) == 1


def test_squeeze_leaving_two_dynamic_dimensions_stays():
    model = build(squeeze_net().recipe())
    graph = model.graphs[0]
    for name in ("x", "h"):
        graph.tensor(name).shape_signature = (1, -1, 1, -1)
    graph.tensor("s").shape_signature = (-1, -1)
    graph.tensor("y").shape_signature = (-1, -1)
    report = api.apply_passes(model, [PASS])
    assert model.op_counts()["SQUEEZE"] == 1
    assert_said(report, PASS, "a RESHAPE cannot give 's' its shape [-1, -1]: one unknown dimension at most")
