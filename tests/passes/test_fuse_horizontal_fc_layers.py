"""fuse_horizontal_fc_layers: ADD(FC(x, W1, b1), FC(x, W2, b2)) becomes FC(x, W1 + W2, b1 + b2) with
the ADD's activation, a missing bias counted as zero; LiteRT values agree. Different inputs,
different options, activations on a layer and outputs read elsewhere stay."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, assert_values_agree, optimize_and_compare, without_options
from bnfold import api
from bnfold.recipe.chef import build

PASS = "fuse_horizontal_fc_layers"
N, K, U = 3, 5, 4


def horizontal_net(
    *, biases=(True, True), act="NONE", act1="NONE", second_input=False, keep=(False, False), other=False
) -> Net:
    n = Net()
    n.input("x", [N, K])
    x2 = n.input("x2", [N, K]) if second_input else "x"
    outs = []
    for i, (src, bias, layer_act, keep_dims) in enumerate(zip(("x", x2), biases, (act1, "NONE"), keep)):
        inputs = [src, n.const(f"w{i}", [U, K]), n.const(f"b{i}", [U]) if bias else ""]
        outs.append(
            n.op(
                "FULLY_CONNECTED", inputs, f"p{i}", [N, U], fused_activation_function=layer_act, keep_num_dims=keep_dims
            )
        )
    n.outputs = [n.op("ADD", outs, "y", [N, U], fused_activation_function=act)]
    if other:
        n.outputs.append(n.op("TANH", ["p0"], "t", [N, U]))
    return n


@pytest.mark.parametrize("biases", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("act", ["NONE", "RELU6"])
def test_two_layers_added_become_one(biases, act):
    model, report = optimize_and_compare(
        horizontal_net(biases=biases, act=act).recipe(), [PASS], {"FULLY_CONNECTED": 1, "ADD": 0}
    )
    (fc,) = model.graphs[0].ops
    original = horizontal_net(biases=biases).model().graphs[0]
    assert np.array_equal(fc.inputs[1].data, original.tensor("w0").data + original.tensor("w1").data)
    assert (
        (fc.input(2) is None) == (biases == (False, False)) and fc.fused_activation == act and fc.outputs[0].name == "y"
    )


@pytest.mark.parametrize(
    "case, reason",
    [
        (dict(second_input=True), None),  # two inputs: no candidate
        (dict(act1="RELU"), "FULLY_CONNECTED 'p0' has a fused RELU"),
        (dict(keep=(True, False)), "the two layers' options differ"),
        (dict(other=True), "'p0' has another reader than the ADD, so it must stay computed"),
    ],
)
def test_other_pairs_stay(case, reason):
    _, report = optimize_and_compare(horizontal_net(**case).recipe(), [PASS], {"FULLY_CONNECTED": 2, "ADD": 1})
    assert_said(report, PASS, reason)


def test_layers_without_options_tables_fuse():
    """A file may give FULLY_CONNECTED no options table (the defaults then): such layers compare
    equal and fuse (mypy found options.fields() called on None: exit 3)."""
    recipe = horizontal_net().recipe()
    model = without_options(recipe, {"FULLY_CONNECTED"})
    assert sum(op.options is None for op in model.graphs[0].ops) == 2
    report = api.apply_passes(model, [PASS])
    assert len(report.folds) == 1 and model.op_counts()["FULLY_CONNECTED"] == 1
    assert_values_agree(build(recipe), model)


def test_layers_of_a_rank_1_input_become_one_only_for_a_target_that_runs_it():
    """Two layers of a rank-1 x (LiteRT reads it as one row) fuse for LiteRT; onert 0.1.0 runs no
    FULLY_CONNECTED reading a rank-1 input, so for it the made layer would be new: the ADD stays,
    said (the O1 fuzzer's seed 160147 exited 3 at the target gate)."""
    n = Net()
    n.input("x", [K])
    outs = [n.op("FULLY_CONNECTED", ["x", n.const(f"w{i}", [U, K])], f"p{i}", [1, U]) for i in range(2)]
    n.outputs = [n.op("ADD", outs, "y", [1, U])]
    optimize_and_compare(n.recipe(), [PASS], {"FULLY_CONNECTED": 1, "ADD": 0})
    model = build(n.recipe())
    report = api.apply_passes(model, [PASS], target="onert")
    assert not report.folds and dict(model.op_counts()) == {"FULLY_CONNECTED": 2, "ADD": 1}
    assert report.unsupported[0]["reason"] == "onert does not run FULLY_CONNECTED (input rank 1)"
