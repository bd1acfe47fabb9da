"""exp_disable_sep_transposeconv_actfunc: circle2circle's experimental switch that turns *off* its
default XpSepActFromTransposeConv (which splits a TRANSPOSE_CONV's fused RELU / RELU6 into a
standalone op, for backends that could not run it fused). bnfold never splits it, so with or
without this switch a TRANSPOSE_CONV keeps its fused activation: the switch asks for what bnfold
does, and the pass changes nothing (tests/passes/ checks that the activation stays fused).

Where a target cannot run TRANSPOSE_CONV with its activation fused, bnfold's folds do not fuse one
there (engine/targets.py), which is the part of ONE's separation a runtime needs.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return PassResult()
