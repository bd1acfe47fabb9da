"""forward_transpose_op: a TRANSPOSE moves forward through elementwise ops where it then cancels
(tests/passes/test_remove_redundant_transpose.py holds the operator cases); one before an op
outside its kinds stays, and the report says why."""

from __future__ import annotations

from test_remove_redundant_transpose import T, back, head, net_mean_keep, net_unary

from bn_models import Net, assert_said, optimize_and_compare

PASS = "forward_transpose_op"


def test_transposes_around_an_elementwise_op_cancel():
    n = Net()
    net_unary(n)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 0, "ABS": 1})
    assert report.folds


def test_transpose_before_a_reduction_stays_and_says_why():
    n = Net()
    net_mean_keep(n)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 2})
    assert_said(report, PASS, "reader MEAN")


def test_transpose_before_a_softmax_stays_and_says_why():
    n = Net()
    back(n, n.op("SOFTMAX", [head(n)], "softmax", T, beta=1.0), T)
    _, report = optimize_and_compare(n.recipe(), [PASS], {"TRANSPOSE": 2})
    assert_said(report, PASS, "reader SOFTMAX")


def _identity_transpose_to_an_output() -> dict:
    """x -> RELU -> r; r -> TRANSPOSE(identity) -> t (a graph output); r -> ABS -> o (seed 41869's shape)."""
    n = Net()
    x = n.input("x", [2, 3])
    r = n.op("RELU", [x], "r", [2, 3])
    t = n.op("TRANSPOSE", [r, n.ints("p", [0, 1])], "t", [2, 3])
    n.outputs = [t, n.op("ABS", [r], "o", [2, 3])]
    return n.recipe()


def test_an_identity_transpose_stays_for_onert_where_its_output_would_gain_a_reader():
    """Its removal would have RELU write the graph output t and ABS read it: onert 0.1.0 may overwrite
    such an output (engine/targets.py), so for onert the TRANSPOSE stays with that reason; for LiteRT
    it goes, same values."""
    import numpy as np

    from bnfold import api
    from bnfold.io.formats import CIRCLE
    from bnfold.recipe.chef import build
    from bnfold.values import litert

    model = build(_identity_transpose_to_an_output(), CIRCLE)
    report = api.apply_passes(model, [PASS], "onert")
    assert not report.folds and model.op_counts()["TRANSPOSE"] == 1
    reasons = {t["reason"] for t in report.transposes}
    assert reasons == {"onert may overwrite a graph output another op reads ('t', read by ABS)"}
    for_litert = build(_identity_transpose_to_an_output(), CIRCLE)
    assert api.apply_passes(for_litert, [PASS], "litert").folds and "TRANSPOSE" not in for_litert.op_counts()
    xs = [np.random.default_rng(0).normal(0, 2, (2, 3)).astype(np.float32)]
    for got, want in zip(litert.run(for_litert, xs), litert.run(model, xs), strict=True):
        np.testing.assert_array_equal(got, want)
