"""resolve_customop_splitv: TensorFlow's SplitV left as a CUSTOM op becomes the builtin SPLIT_V (ONE's
pass of that name).

    before:  x, size_splits, split_dim -> CUSTOM(SplitV) -> y0, y1, ...
    after:   x, size_splits', split_dim' -> SPLIT_V(num_splits = len(size_splits)) -> y0, y1, ...

Exact: both cut x along split_dim into pieces of the given sizes (one size may be -1: the rest),
moving elements only. INT64 constants are given as INT32 copies (SPLIT_V's kernels read INT32),
refused when a value does not fit.

Guards: three inputs; size_splits a rank-1 INT32/INT64 constant with one entry per output;
split_dim a one-element INT32/INT64 constant; readable custom options.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.report import PassResult
from ..ir.custom import custom_code, custom_options
from ..ir.graph import Graph, Options, Tensor
from ..ir.ops import INDEX_DTYPES

INT32 = np.iinfo(np.int32)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if custom_code(op) == "SplitV"]:
        if len(op.inputs) != 3 or op.input(0) is None or custom_options(op) is None:
            continue
        sizes, dim = op.inputs[1], op.inputs[2]
        if sizes is None or dim is None or not (_indices(sizes) and _indices(dim)):
            continue
        if len(sizes.shape) != 1 or dim.const_data.size != 1:
            continue
        if sizes.shape[0] != len(op.outputs):
            continue
        inputs = [op.inputs[0], _as_int32(graph, sizes), _as_int32(graph, dim)]
        if None in inputs:
            continue
        unsupported = targets.refusal(graph, "SPLIT_V")
        if unsupported:
            result.not_for_target(op, unsupported)
            continue
        result.fold(op, [op], into=[], resolved="SplitV")
        graph.remove_op(op)
        made = graph.add_op(
            "SPLIT_V", inputs, op.outputs, Options("SplitVOptions", numSplits=len(op.outputs)), after=op
        )
        result.made(made)
    return result


def _indices(t: Tensor | None) -> bool:
    return t is not None and t.is_const and t.dtype in INDEX_DTYPES and not t.is_quantized


def _as_int32(graph: Graph, t: Tensor) -> Tensor | None:
    """`t` (an index constant) when it is INT32, else an INT32 copy (None when a value does not fit)."""
    if t.dtype == "INT32":
        return t
    data = t.const_data
    if data.size and (data.min() < INT32.min or data.max() > INT32.max):
        return None
    return graph.add_const(graph.unique_name(f"{t.name}/int32"), data.astype(np.int32), "INT32")
