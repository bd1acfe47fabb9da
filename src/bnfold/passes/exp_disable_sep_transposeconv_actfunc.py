"""exp_disable_sep_transposeconv_actfunc: circle2circle's experimental switch that turns *off* its
default XpSepActFromTransposeConv, which splits a float TRANSPOSE_CONV's fused RELU / RELU6 into a
standalone op after it (for backends that run TRANSPOSE_CONV without its fused activation).

bnfold never splits an activation a model's TRANSPOSE_CONV already has, with or without this
switch, so the pass changes nothing (tests/passes/test_exp_disable_sep_transposeconv_actfunc.py checks that such an
activation stays fused). Where bnfold's own TRANSPOSE_CONV folds (fuse_batchnorm_with_tconv,
fuse_add_with_tconv) take an activation in a Circle model, they write it standalone after the
layer, which is what ONE does *without* the switch, because runtimes do not run that activation
fused (ir/ops.py: TRANSPOSE_CONV's `fused_output`, `standalone_activation_in_circle`); the
switch does not change that either. Values are the same in both forms: only the graph differs.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return PassResult()
