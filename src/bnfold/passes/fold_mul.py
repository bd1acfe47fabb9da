"""fold_mul: a MUL of two float32 constants becomes their product (ONE's pass of that name; what
fuse_mul_to_fullyconnected_weights leaves for it: the weights times the scale).

    before:  a (const FLOAT32), b (const FLOAT32, broadcastable) -> MUL -> y
    after:   y (const FLOAT32, a·b)

Exact: each product is computed once by the value check's MUL kernel in float32, as the runtime
computes it on every run (one rounding per element either way); a fused activation is applied as
the kernel applies it. ONE folds float32 only, and only when the smaller operand's dimensions are
the larger's last ones; bnfold folds any pair the kernel broadcasts (the output shape is checked).
Guards: the output float32 and not quantized (ONE's), and engine/constfold.py's.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph, Op

KINDS = frozenset({"MUL"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS, _float32)


def _float32(op: Op) -> str | None:
    if op.outputs[0].dtype != "FLOAT32":
        return f"MUL is folded for float32 only (as ONE does), not {op.outputs[0].dtype}"
    return None
