"""fuse_bcq: ONE's Binary-Coded Quantization fusion (FuseBCQPass). A model exported with BCQ
information carries, as its first output, an INT32 constant opening with -1999999973 and closing
with 1999999973, and after its real outputs the BCQ tables per weight (alphas, packed binary codes,
clusters); ONE then replaces each FULLY_CONNECTED / GATHER whose constant weights match a table by
BCQ_FULLY_CONNECTED / BCQ_GATHER (Circle-only operators, codes -3 and -4).

bnfold refuses every such candidate, with the reason in the report: its operator table
(ir/ops.py) has no BCQ operator, TFLite (hence LiteRT) has none, and bnfold's value check could
not compute one, so no rewrite could be written for a runtime bnfold targets and checked (whether
the onert wheel runs them was not probed: bnfold cannot write them). A model without the BCQ
metadata output has no candidate and the pass says nothing.
"""

from __future__ import annotations

import numpy as np

from ..engine.report import PassResult
from ..ir.graph import Graph, Tensor

MAGIC = (-1999999973, 1999999973)  # ONE's start and end markers of the BCQ metadata
REASON = (
    "fuse_bcq would write BCQ_FULLY_CONNECTED / BCQ_GATHER, which bnfold's operator table, LiteRT and "
    "bnfold's value check lack: refused"
)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    if not graph.outputs or not _is_bcq_metadata(graph.outputs[0]):
        return result
    for op in graph.ops:
        weights = op.input(0 if op.kind == "GATHER" else 1) if op.kind in ("GATHER", "FULLY_CONNECTED") else None
        if weights is not None and weights.is_const:
            result.not_for_target(op, REASON)
    return result


def _is_bcq_metadata(t: Tensor) -> bool:
    if not t.is_const or t.dtype != "INT32" or t.const_data.size < 4:
        return False
    values = np.asarray(t.const_data).reshape(-1)
    return (int(values[0]), int(values[-1])) == MAGIC
