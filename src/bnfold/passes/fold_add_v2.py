"""fold_add_v2: TensorFlow's AddV2 kept as a custom operator (CUSTOM with custom code "AddV2", what
the TFLite converter leaves when it keeps TF ops) of two integer constants becomes their sum (ONE's
pass of that name: the shape arithmetic of exported models).

    before:  a (const INT32 [3]), b (const INT32 [3] or broadcastable) -> CUSTOM(AddV2) -> y
    after:   y (const INT32, a + b)

Exact: integer addition with broadcasting, computed by the value check's kernel for it
(reference/interpreter.py: ADD's), wrapping as int32/int64 arithmetic does, as TensorFlow's kernel.
Guards: custom code AddV2, exactly two inputs, both INT32 or both INT64 (ONE folds only these), and
engine/constfold.py's.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph, Op

KINDS = frozenset({"CUSTOM"})
INTEGER_TYPES = ("INT32", "INT64")


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS, _integers, custom_code=b"AddV2")


def _integers(op: Op) -> str | None:
    types = {t.dtype for t in op.inputs if t is not None} | {t.dtype for t in op.outputs}
    if len(op.inputs) != 2 or len(op.outputs) != 1 or len(types) != 1 or not types <= set(INTEGER_TYPES):
        return "AddV2 is folded for two INT32 or two INT64 constants only"
    return None
