"""shuffle_weight_to_16x1float32: ONE's rewrite of a float32 FULLY_CONNECTED's weights [O, I] (O a
multiple of 16) into the SHUFFLED16x1FLOAT32 layout (Circle's weights_format 127: blocks of 16
rows stored column by column), for a kernel that reads them so.

bnfold refuses every candidate, with the reason in the report: no runtime bnfold writes for runs
the format. TFLite's schema has no such format (LiteRT reads DEFAULT and SHUFFLED4x16INT8 only),
and onert 0.1.0 refuses to prepare it (measured on a one-FC Circle model with ONE's 16x1 layout:
"FullyConnected: Shuffled16x1Float32 weights_format is not supported"); bnfold's value check
computes no FULLY_CONNECTED in a non-default format either (reference/kernels.py).
The candidates are ONE's: float32, default format, constant weights of rank 2, rows a multiple
of 16, not sparse.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..ir.graph import Graph

REASON = (
    "SHUFFLED16x1FLOAT32 weights: LiteRT has no such format and onert 0.1.0 does not prepare it "
    '("Shuffled16x1Float32 weights_format is not supported"): refused'
)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for fc in [op for op in graph.ops if op.kind == "FULLY_CONNECTED"]:
        weights = fc.input(1)
        if weights is None or not weights.is_const or weights.dtype != "FLOAT32" or len(weights.shape) != 2:
            continue
        if getattr(fc.options, "weightsFormat", 0) != 0 or weights.shape[0] % 16:
            continue
        if getattr(weights.record, "sparsity", None) is not None:
            continue
        result.not_for_target(fc, REASON)
    return result
