"""exp_disable_sep_transposeconv_actfunc asks for what bnfold does already: a TRANSPOSE_CONV keeps
its fused activation; nothing changes and nothing is said."""

from __future__ import annotations

import numpy as np

from bn_models import assert_said, tconv
from bnfold import api
from bnfold.recipe.chef import build


def test_tconv_keeps_its_fused_activation():
    net, _ = tconv(bias=True, act="RELU")
    model = build(net.recipe())
    report = api.apply_passes(model, ["exp_disable_sep_transposeconv_actfunc"])
    layer = next(op for op in model.graphs[0].ops if op.kind == "TRANSPOSE_CONV")
    assert layer.fused_activation == "RELU" and report.folds == [] and len(model.graphs[0].ops) == 1
    assert_said(report, "exp_disable_sep_transposeconv_actfunc", None)  # what bnfold does already: no candidate
    assert np.isfinite(layer.inputs[1].data).all()
