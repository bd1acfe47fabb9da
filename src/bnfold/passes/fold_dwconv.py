"""fold_dwconv: a DEPTHWISE_CONV_2D of a constant input with constant filter and bias becomes the
constant it computes (ONE's pass of that name).

    before:  x (const [1,H,W,C]), w (const [1,KH,KW,C·M]), b (const [C·M]) -> DEPTHWISE_CONV_2D -> y
    after:   y (const [1,OH,OW,C·M])

Exact up to float rounding: the value check's float32 kernel computes
y[n,i,j,c·M+m] = act(b[c·M+m] + sum over taps x[n, i·s+kh·d, j·s+kw·d, c]·w[0,kh,kw,c·M+m]) with
TFLite's SAME/VALID padding, in float32 as LiteRT does (the order of the sum may differ: rounding).
Guards: float32 only (the kernel refuses others), and engine/constfold.py's.
"""

from __future__ import annotations

from ..engine.constfold import fold_constants
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"DEPTHWISE_CONV_2D"})


def run(graph: Graph) -> PassResult:
    return fold_constants(graph, KINDS)
