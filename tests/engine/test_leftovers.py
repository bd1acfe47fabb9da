"""leftovers.py: the report's skip list has one entry per batch-norm candidate left, and nothing else.

Each model here is built in code, optimized (the default passes unless a test names others) and
value-checked in LiteRT against the original (bn_models.optimize_and_compare); the skip list is
then checked entry by entry.
"""

from __future__ import annotations

from bn_models import Net, chain, conv2d, mul_add, optimize_and_compare

SHAPE = [1, 5, 7, 4]


def _entries(report) -> dict[str, dict]:
    """The skip entries by the output name of the op they are about (each op exactly once)."""
    outputs = [s["at"]["output"] for s in report.skips]
    assert len(outputs) == len(set(outputs)), outputs
    return {s["at"]["output"]: s for s in report.skips}


def test_swish_gating_and_residual_ops_get_no_entry():
    n, y = conv2d()
    sig = n.op("LOGISTIC", [y], "sig", SHAPE)
    swish = n.op("MUL", [y, sig], "swish", SHAPE)
    gate = n.input("gate", [1, 1, 1, 4])  # a squeeze-excite gate, computed at runtime
    gated = n.op("MUL", [swish, gate], "gated", SHAPE)
    n.outputs = [n.op("ADD", [gated, y], "residual", SHAPE)]
    model, report = optimize_and_compare(n.recipe(), None, {"MUL": 2, "ADD": 1})
    assert report.skips == []
    # the backward pass did look at the swish MUL after the conv (its other reader): it said so,
    # and that refusal is about no candidate
    assert any(s.record["at"]["output"] == "swish" for s in report.said)
    assert all(skips == 0 for _, skips in report.counts().values())


def test_a_chain_whose_constants_come_from_dequantize_gets_one_entry_per_op():
    n = Net()
    x = n.input("ifm", SHAPE)
    for name in ("scale", "shift"):
        n.const(f"{name}16", [4], low=0.5, high=2.0, dtype="FLOAT16")
        n.op("DEQUANTIZE", [f"{name}16"], name, [4])
    sig = n.op("LOGISTIC", [x], "sig", SHAPE)
    m = n.op("MUL", [sig, "scale"], "scaled", SHAPE)
    n.op("ADD", [m, "shift"], "shifted", SHAPE)
    n.op("TANH", ["shifted"], "ofm", SHAPE)
    model, report = optimize_and_compare(n.recipe(), None, {"MUL": 1, "ADD": 1, "DEQUANTIZE": 2})
    entries = _entries(report)
    assert set(entries) == {"scaled", "shifted"}
    for s in entries.values():
        assert s["pass"] is None and s["reasons"] == {}  # no pass looks at a chain between two activations
        assert s["reason"] == (
            "no conv-like layer produces its input or reads its result, directly or through layout "
            "ops (it sits between LOGISTIC #2 and TANH #5)"
        )
        assert [c["output"] for c in s["chain"]] == ["scaled", "shifted"]


def test_a_chain_refused_by_two_passes_is_listed_once_with_both_reasons():
    n, y = conv2d(act="RELU")  # backward: the conv's RELU sits between it and the chain
    bn = chain(n, y, mul_add())
    n.op(
        "CONV_2D",
        [bn, n.const("filter2", [6, 1, 1, 4]), n.const("bias2", [6])],
        "conv2",
        [1, 5, 7, 6],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    n.outputs = ["conv2", bn]  # forward: the batch norm's result is a graph output
    model, report = optimize_and_compare(n.recipe(), None, {"MUL": 1, "ADD": 1})
    entries = _entries(report)
    assert set(entries) == {"bn_0", "bn"}
    for s in entries.values():
        assert set(s["reasons"]) == {"fuse_batchnorm_with_conv", "fuse_batchnorm_forward"}
        assert "fused RELU" in s["reasons"]["fuse_batchnorm_with_conv"]
        assert "graph output" in s["reasons"]["fuse_batchnorm_forward"]
        # the last pass that tried is the most specific: it is what could still have folded it
        assert s["pass"] == "fuse_batchnorm_forward" and s["reason"] == s["reasons"]["fuse_batchnorm_forward"]
    # each candidate left once, for the pass whose reason its entry gives: the counts add up to the
    # candidates `inspect --leftovers` lists (two: the chain's MUL and ADD)
    counts = report.counts()
    assert counts["fuse_batchnorm_with_conv"] == (0, 0) and counts["fuse_batchnorm_forward"] == (0, 2)
    assert sum(skipped for _, skipped in counts.values()) == len(entries) == 2


def test_a_reason_handing_the_chain_to_another_pass_that_spoke_is_not_the_chosen_one():
    n = Net()
    x = n.input("ifm", SHAPE)
    bn = n.bn(x, SHAPE, [4], act="RELU")
    n.op(
        "CONV_2D",
        [bn, n.const("filter", [6, 1, 1, 4]), n.const("bias", [6])],
        "conv",
        [1, 5, 7, 6],
        padding="VALID",
        stride_w=1,
        stride_h=1,
    )
    n.outputs = ["conv", bn]  # neither the pre-activation nor the forward fold may change bn_out
    model, report = optimize_and_compare(n.recipe(), None, {"MUL": 1, "ADD": 1})
    for s in _entries(report).values():
        assert "fuse_preactivation_batchnorm's" in s["reasons"]["fuse_batchnorm_forward"]
        assert s["pass"] == "fuse_preactivation_batchnorm" and "graph output" in s["reason"]


def test_a_refusal_at_a_layout_op_lands_on_the_chain():
    n = Net()
    x = n.input("ifm", [6, 3])
    n.op("FULLY_CONNECTED", [x, n.const("w", [4, 3]), n.const("b", [4])], "fc", [6, 4])
    r = n.op("RESHAPE", ["fc", n.ints("shape", [3, 8])], "merged", [3, 8])  # merges the feature axis
    chain(n, r, mul_add())
    model, report = optimize_and_compare(n.recipe(), ["fuse_batchnorm_with_fc"], {"MUL": 1, "ADD": 1})
    [said] = report.said
    assert said.op.kind == "MUL" and "RESHAPE" in said.record["reason"]
    entries = _entries(report)
    assert set(entries) == {"bn_0", "bn"} and all(s["pass"] == "fuse_batchnorm_with_fc" for s in entries.values())


def test_a_candidate_whose_pass_was_not_run_says_so():
    n, y = conv2d()
    chain(n, y, mul_add())
    model, report = optimize_and_compare(n.recipe(), ["fuse_batchnorm_forward"], {"MUL": 1, "ADD": 1})
    for s in _entries(report).values():
        assert s["pass"] is None and s["reason"].startswith(
            "fuse_batchnorm_with_conv, which folds it into the CONV_2D before it, was not run"
        )


def test_folded_chains_leave_no_entry():
    n, y = conv2d()
    chain(n, y, mul_add(act="RELU"))
    model, report = optimize_and_compare(n.recipe(), None, {"MUL": 0, "ADD": 0})
    assert report.skips == [] and report.counts()["fuse_batchnorm_with_conv"] == (1, 0)
