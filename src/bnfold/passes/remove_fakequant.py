"""remove_fakequant: LOSSY. A FAKE_QUANT goes (ONE's RemoveFakeQuantPass).

    before:  x [float32] -> FAKE_QUANT(min, max, num_bits, narrow_range) -> y -> readers
    after:   x -> readers

FAKE_QUANT clamps x to [min, max] (nudged so that zero is on the grid) and rounds it to one of
2^num_bits levels: y differs from x by up to half a step inside the range and by the distance to
the range outside it. Removing it is what ONE does before quantizing a model trained with fake
quantization (the quantizer puts the grid back); on its own it changes the float function. So it
is never in the default set, and whenever it changes a model bnfold measures the output error on
random inputs (values/lossy.py) and reports it. Each fold records the step and range it removed.

Guard: a model output y needs x to have a producer that can be renamed to it.
"""

from __future__ import annotations

from ..engine.quantization import stand_in
from ..engine.report import PassResult
from ..ir.graph import Graph

KINDS = frozenset({"FAKE_QUANT"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        x, y = op.input(0), op.outputs[0]
        if x is None:
            continue
        options = op.options
        low, high = getattr(options, "min", None), getattr(options, "max", None)
        bits = getattr(options, "numBits", None)
        problem = stand_in(graph, y, x, [op])
        if problem is not None:
            result.refuse_value(op, f"FAKE_QUANT kept: {problem}")
            continue
        step = None if low is None or high is None or not bits else (high - low) / ((1 << bits) - 1)
        result.fold(op, [op], into=[], lossy=True, range=[low, high], num_bits=bits, step=step)
    return result
