"""fold_shape: a SHAPE of a tensor whose shape is static becomes that shape as a constant (ONE's
pass of that name: exporters compute reshape targets from SHAPE at run time).

    before:  x ([2, 7, 3], any producer) -> SHAPE(out_type INT32) -> s -> ...
    after:   s (const INT32 [3] = [2, 7, 3]) -> ...

Exact: SHAPE reads only the shape, and a tensor whose shape signature holds no unknown (-1)
dimension has that shape on every run, so the runtime would compute these very integers.
Unlike the other folds, x need not be a constant (SHAPE does not read its values).
Guards (ONE's): x has a static shape (no -1 in its signature) and rank > 0 (the shape of a scalar
is an empty tensor, which ONE does not fold either); the output is INT32 or INT64; plus s is no
model output (a model output stays computed).
"""

from __future__ import annotations

import numpy as np

from ..engine.constfold import make_constant
from ..engine.report import PassResult
from ..ir.graph import Graph, Op

OUT_TYPES = {"INT32": np.int32, "INT64": np.int64}


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "SHAPE"]:
        reason = _why_not(graph, op)
        if reason is not None:
            result.refuse_value(op, reason)
            continue
        x, s = op.operand(0), op.outputs[0]
        value = np.array(x.shape, dtype=OUT_TYPES[s.dtype])
        result.fold(op, [op], into=[], constants=[s.name], shapes=[list(value.shape)])
        graph.remove_op(op)
        make_constant(s, value)
    return result


def _why_not(graph: Graph, op: Op) -> str | None:
    x, s = op.input(0), op.outputs[0]
    if x is None:
        return "it has no input"
    if graph.is_observed(s):
        return f"{s.name!r} is seen from outside the graph (a model output stays computed)"
    if s.dtype not in OUT_TYPES:
        return f"{s.name!r} is {s.dtype}: SHAPE is folded to INT32 or INT64"
    if -1 in x.signature:
        return f"{x.name!r} has a dynamic shape {list(x.signature)}: its shape is known only at run time"
    if not x.shape:
        return f"{x.name!r} is a scalar: its shape would be an empty tensor"
    if s.shape != (len(x.shape),):
        return f"{s.name!r} is recorded as {list(s.shape)}, not [{len(x.shape)}] (the file's shapes disagree)"
    return None
