"""fold_dequantize: a DEQUANTIZE of a constant becomes the float32 constant (ONE's pass of that name).

    before:  w (const, INT8 [O,I], scale s, zero point z) -> DEQUANTIZE -> w' (FLOAT32)
    after:   w' (const, FLOAT32, (w - z)·s per channel as quantized)
    before:  w (const, FLOAT16) -> DEQUANTIZE -> w' (FLOAT32)
    after:   w' (const, FLOAT32, w widened: every float16 is a float32)

Exact: the value check's DEQUANTIZE kernel computes (q - z)·s in float32 per tensor or per axis,
as LiteRT's reference kernel does on every run; a float16 widens exactly. The file grows (float32
weights are 2-4x the bytes) and the runtime no longer dequantizes at load: ONE does it so later
folds see float weights. Guards (engine/constfold.py): w' no model output, w' not quantized itself.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"DEQUANTIZE"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
