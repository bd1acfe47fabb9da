"""fuse_attention: an attention written out (BATCH_MATMUL, the scale, a mask, SOFTMAX, BATCH_MATMUL) is
found and refused with the reason, and nothing changes: for onert and LiteRT the runtime table's
(neither runs ATTENTION: derived from the runtimes), for TFLite the format's, and for no target that
bnfold writes no ATTENTION. A SOFTMAX that is no attention's says nothing. The model keeps its values
(it is not changed: checked in onert)."""

from __future__ import annotations

import pytest

from bn_models import Net
from bnfold.ir import runtimes
from decoder_models import CIRCLE, TFLITE, assert_equal_in_runtime, optimized, reasons

PASS = "fuse_attention"
SHAPE = [1, 2, 4, 8]  # batch, heads, positions, head size


def attention_net(
    *, between=("MUL", "ADD"), probs_read_elsewhere=False, scores_from="BATCH_MATMUL", reshaped=False
) -> Net:
    """softmax(q·kᵀ (· scale) (+ mask))·v of three inputs; `scores_from` ABS makes the scores no product;
    `reshaped`: the probabilities reach the product through a RESHAPE merging heads into the batch, as
    TICO's exports write it."""
    n = Net(seed=4)
    q, v = (n.input(name, SHAPE) for name in ("q", "v"))
    kt = n.input("kt", [1, 2, 8, 4])  # the keys transposed
    scores_shape = [*SHAPE[:-1], SHAPE[2]]
    if scores_from == "BATCH_MATMUL":
        scores = n.op("BATCH_MATMUL", [q, kt], "scores", scores_shape)
    else:
        scores = n.op("ABS", [q], "scores", SHAPE)
        scores_shape = SHAPE
    for kind in between:
        other = n.const(f"{kind.lower()}_c", [] if kind == "MUL" else scores_shape[-2:], low=-1, high=1)
        scores = n.op(kind, [scores, other], f"after_{kind.lower()}", scores_shape)
    probs = n.op("SOFTMAX", [scores], "probs", scores_shape, beta=1.0)
    v_in = v
    if scores_from != "BATCH_MATMUL":
        v_in = n.op("TRANSPOSE", [v, n.ints("perm", [0, 1, 3, 2])], "vt", [1, 2, 8, 4])
    out_shape = [*scores_shape[:-1], SHAPE[-1]] if scores_from == "BATCH_MATMUL" else [*SHAPE[:-1], SHAPE[2]]
    if reshaped:
        probs = n.op("RESHAPE", [probs, n.ints("merged", [2, 4, 4])], "probs_3d", [2, 4, 4], new_shape=[2, 4, 4])
        v_in = n.op("RESHAPE", [v_in, n.ints("v_merged", [2, 4, 8])], "v_3d", [2, 4, 8], new_shape=[2, 4, 8])
        out_shape = [2, 4, 8]
    out = n.op("BATCH_MATMUL", [probs, v_in], "out", out_shape)
    n.outputs = [out, probs] if probs_read_elsewhere else [out]
    return n


def test_the_installed_runtimes_run_no_attention():
    """What the refusal stands on, derived from the runtimes (tests/test_runtimes.py re-derives it)."""
    assert ("ATTENTION", "NONE") in runtimes.PROBED
    assert all(("ATTENTION", "NONE") not in runs for runs in runtimes.RUNS.values())


@pytest.mark.parametrize("between", [(), ("MUL",), ("DIV", "ADD"), ("MUL", "ADD")])
@pytest.mark.parametrize("reshaped", [False, True])
def test_each_attention_is_refused_for_onert_and_nothing_changes(between, reshaped):
    original, model, report = optimized(attention_net(between=between, reshaped=reshaped), [PASS])
    assert dict(model.op_counts()) == dict(original.op_counts()) and not report["folds"]
    assert reasons(report) == ["the attention stays: onert does not run ATTENTION"]
    assert report["target"]["refused"][0]["at"]["output"] == "out"  # the product of the probabilities and v
    assert_equal_in_runtime(original, model)


def test_litert_target_and_tflite_say_theirs():
    _, _, report = optimized(attention_net(), [PASS], target="litert")
    assert reasons(report) == ["the attention stays: litert does not run ATTENTION"]
    _, _, report = optimized(attention_net(), [PASS], fmt=TFLITE)
    assert reasons(report) == ["the attention stays: the output format tflite has no ATTENTION (Circle only)"]


def test_for_no_target_bnfold_says_it_writes_no_attention():
    from bnfold.engine.registry import BY_NAME
    from bnfold.passes import fuse_attention
    from bnfold.recipe.chef import build

    model = build(attention_net().recipe(), CIRCLE)
    result = fuse_attention.run(model.graphs[0])  # a graph without a target: a unit test's
    assert [e["reason"] for e in result.not_folded] == [fuse_attention.NO_WRITER]
    assert not result.changed and BY_NAME[PASS].exact


@pytest.mark.parametrize(
    "net",
    [attention_net(probs_read_elsewhere=True), attention_net(scores_from="ABS")],
    ids=["probs-seen", "no-product"],
)
def test_a_softmax_that_is_no_attentions_says_nothing(net):
    # for LiteRT: "probs-seen" makes the probabilities a graph output the second matmul reads, a graph
    # onert's target leaves as it is (with that reason, targets.Target.left_as_is)
    _, _, report = optimized(net, [PASS], target="litert")
    assert reasons(report) == [] and not report["folds"]
