"""The ONE options bnfold accepts but whose rewrite it refuses (fuse_bcq, shuffle_weight_to_16x1float32),
and exp_disable_sep_transposeconv_actfunc, which asks for what bnfold does: each candidate is
reported with the reason and nothing changes; a model without candidates says nothing."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, tconv
from bnfold import api
from bnfold.passes import fuse_bcq
from bnfold.recipe.chef import build


def fc_net(rows=16, *, bcq=False) -> Net:
    n = Net()
    n.input("x", [2, 6])
    fc = n.op("FULLY_CONNECTED", ["x", n.const("w", [rows, 6]), n.const("b", [rows])], "y", [2, rows])
    if bcq:  # ONE's BCQ metadata: the first output, an INT32 constant between its magic numbers
        n.tensor(
            "bcq_meta", [5], "INT32", {"kind": "explicit", "values": [fuse_bcq.MAGIC[0], 1, 1, 8, fuse_bcq.MAGIC[1]]}
        )
        n.outputs = ["bcq_meta", fc]
    else:
        n.outputs = [fc]
    return n


def _run(net: Net, pass_name: str) -> list[str]:
    """The reasons the report's target section gives (nothing changed)."""
    model = build(net.recipe())
    before = [op.kind for op in model.graphs[0].ops]
    report = api.apply_passes(model, [pass_name])
    assert [op.kind for op in model.graphs[0].ops] == before and report.folds == []
    return [r["reason"] for r in report.to_dict().get("target", {}).get("refused", [])]


def test_fuse_bcq_refuses_each_candidate_of_a_bcq_model_and_says_nothing_otherwise():
    assert _run(fc_net(bcq=True), "fuse_bcq") == [fuse_bcq.REASON]
    assert _run(fc_net(), "fuse_bcq") == []


@pytest.mark.parametrize("rows, refused", [(16, True), (12, False)])
def test_shuffle_weight_refuses_weights_of_16_row_blocks(rows, refused):
    reasons = _run(fc_net(rows), "shuffle_weight_to_16x1float32")
    assert bool(reasons) == refused and all("SHUFFLED16x1FLOAT32" in r for r in reasons)


def test_tconv_keeps_its_fused_activation():
    net, _ = tconv(bias=True, act="RELU")
    model = build(net.recipe())
    report = api.apply_passes(model, ["exp_disable_sep_transposeconv_actfunc"])
    layer = next(op for op in model.graphs[0].ops if op.kind == "TRANSPOSE_CONV")
    assert layer.fused_activation == "RELU" and report.folds == [] and len(model.graphs[0].ops) == 1
    assert np.isfinite(layer.inputs[1].data).all()
