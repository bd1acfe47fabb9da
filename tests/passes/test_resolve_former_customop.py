"""resolve_former_customop: TensorFlow's BroadcastTo left as a CUSTOM op becomes BROADCAST_TO (the
values: LiteRT runs the result; bnfold's reference interpreter runs the original); a BroadcastTo
of a float shape and other custom codes stay."""

from __future__ import annotations

import numpy as np

from bn_models import Net, build_copy, inputs_for, runnable
from bnfold import api
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from bnfold.values import litert

PASS = "resolve_former_customop"


def broadcast_to(code="BroadcastTo", shape_dtype="INT32") -> Net:
    n = Net()
    n.input("x", [2, 3])
    shape = n.tensor("shape", [3], shape_dtype, {"kind": "explicit", "values": [4, 2, 3]})
    n.tensor("y", [4, 2, 3])
    n.operations.append({"type": "CUSTOM", "custom_code": code, "inputs": ["x", shape], "outputs": ["y"]})
    n.outputs = ["y"]
    return n


def test_broadcast_to_becomes_the_builtin():
    recipe = broadcast_to().recipe()
    model = build(recipe)
    report = api.apply_passes(model, [PASS])
    assert [op.kind for op in model.graphs[0].ops] == ["BROADCAST_TO"] and len(report.folds) == 1
    xs = inputs_for(model)
    want = interpreter.run(build(recipe), xs)[0]
    have = litert.run(runnable(build_copy(model)), xs)[0]
    assert np.array_equal(want, have) and have.shape == (4, 2, 3)


def test_a_shape_that_does_not_make_the_output_stays():
    """Found by the fuzzer: a custom op's shapes were never checked, a builtin's are (exit 3 before)."""
    net = broadcast_to()
    net.operands[1]["filler"]["values"] = [4, 3, 3]
    model = build(net.recipe())
    report = api.apply_passes(model, [PASS])
    assert report.folds == [] and "is not its output's shape" in report.not_folded[0]["reason"]


def test_other_custom_ops_and_a_float_shape_stay():
    for net, said in ((broadcast_to(code="Tile"), False), (broadcast_to(shape_dtype="FLOAT32"), True)):
        model = build(net.recipe())
        report = api.apply_passes(model, [PASS])
        assert report.folds == [] and bool(report.not_folded) == said
