"""substitute_splitv_to_split: a SPLIT_V into parts of one size becomes a SPLIT (ONE's pass of that
name: SPLIT is the kernel every backend has).

    before:  x [3,12,5] -> SPLIT_V(size_splits [4,4,4], axis 1) -> y0, y1, y2 [3,4,5]
    after:   axis, x -> SPLIT(num_splits=3) -> y0, y1, y2

Exact: both cut the same axis at the same places. Guards: size_splits and axis constant, every
size the same and their sum the axis' static length (a -1 size is left alone), as many outputs as
sizes; float32 or int32 data, unquantized (the SPLIT made is version 1, which takes those).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.report import PassResult
from ..ir.graph import Graph, Options

KINDS = frozenset({"SPLIT_V"})
SPLIT_V1_TYPES = frozenset({"FLOAT32", "INT32"})  # what SPLIT's version 1 kernel takes


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        x, sizes, axis = op.input(0), op.input(1), op.input(2)
        if x is None or sizes is None or axis is None or not sizes.is_const or not axis.is_const:
            continue
        if x.dtype not in SPLIT_V1_TYPES or x.is_quantized:  # the SPLIT made is version 1
            continue
        parts = [int(s) for s in sizes.const_data.reshape(-1)]
        axis_value = int(axis.const_data.reshape(-1)[0])
        if not -len(x.shape) <= axis_value < len(x.shape):
            continue
        length = x.signature[axis_value]
        if len(set(parts)) != 1 or parts[0] <= 0 or sum(parts) != length or len(op.outputs) != len(parts):
            continue
        unsupported = targets.refusal(graph, "SPLIT")
        if unsupported:
            result.not_for_target(op, unsupported)
            continue
        result.fold(op, [op], into=[], num_splits=len(parts))
        graph.remove_op(op)
        axis_tensor = graph.add_const(f"{op.outputs[0].name}/split_axis", np.array([axis_value], np.int32), "INT32")
        options = Options("SplitOptions", numSplits=len(parts))
        result.made(graph.add_op("SPLIT", [axis_tensor, x], list(op.outputs), options, after=op))
    return result
