"""fuse_bcq: ONE's BCQ operators run in neither LiteRT nor onert, so each candidate of a BCQ model
is refused with the reason and nothing changes; a model without candidates says nothing. fc_net and
_run serve test_shuffle_weight_to_16x1float32.py too."""

from __future__ import annotations

from bn_models import Net
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
    reasons = _run(fc_net(bcq=True), "fuse_bcq")
    assert reasons == [fuse_bcq.REASON]
    assert _run(fc_net(), "fuse_bcq") == []
