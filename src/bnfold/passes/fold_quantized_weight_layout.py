"""fold_quantized_weight_layout: a TRANSPOSE or RESHAPE of quantized constant weights, directly or
behind their DEQUANTIZE, is done once on the stored integers, the per-channel quantized_dimension
moved with its axis (the PT2E export's TRANSPOSE on every quantized conv weight, litert-torch #179).

    before:  w [int8 HWIO, per channel along 3] -> DEQUANTIZE -> TRANSPOSE(3,0,1,2) -> wt -> CONV_2D
    after:   w' [int8 OHWI, per channel along 0] -> DEQUANTIZE -> wt -> CONV_2D
    (and w -> TRANSPOSE/RESHAPE -> wt [int8] -> layer: wt becomes the moved constant itself)

Exact: DEQUANTIZE is elementwise, each integer q of channel c giving s_c·(q - z_c) in float32, and a
TRANSPOSE or RESHAPE only moves elements: moving the integers with their channel's axis first gives
every element the same (q, s_c, z_c), so the same float32 bits. A RESHAPE keeps each element's
channel when the channel axis and the product of the axes before it stay (`channel_axis_after`).
The layer's float weights are the same bits; but weights that are now a DEQUANTIZE of a constant
let XNNPACK (LiteRT's default kernels) take a float layer the builtin kernel ran before, whose sums
round otherwise: float32 rounding, as any exact float rewrite may cause there.

Guards: the integers are an 8- or 16-bit quantized constant; what the layout op makes is no model
output; the DEQUANTIZE's output is read by the layout op alone (else the DEQUANTIZE stays for its
other readers and nothing would be saved); without a DEQUANTIZE the op's output must carry the moved
quantization. A constant read elsewhere keeps its buffer: the moved integers get a new one.
"""

from __future__ import annotations

import numpy as np

from ..engine.constfold import make_constant
from ..engine.quantization import INTEGER_TYPES, channel_axis_after
from ..engine.report import PassResult
from ..engine.reshapes import same_quantization
from ..ir.graph import Graph, Op, Tensor

KINDS = frozenset({"TRANSPOSE", "RESHAPE"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        source = op.input(0)
        dequantize = source.producer if source is not None else None
        if dequantize is not None and dequantize.kind == "DEQUANTIZE":
            weights = dequantize.input(0)
        else:
            weights, dequantize = source, None
        if weights is None or not weights.is_const or weights.dtype not in INTEGER_TYPES or not weights.is_quantized:
            continue
        problem = _refusal(graph, op, weights, dequantize)
        if problem is not None:
            result.refuse_value(op, f"{op.kind} of quantized weights kept: {problem}")
            continue
        removed = [op] if dequantize is None else [dequantize, op]
        result.fold(op, removed, into=[], weights=weights.name, moved_to=list(op.outputs[0].shape))
        _move(graph, op, weights, dequantize)
    return result


def _refusal(graph: Graph, op: Op, weights: Tensor, dequantize: Op | None) -> str | None:
    y = op.outputs[0]
    if graph.is_observed(y):
        return f"{y.name!r} is a model output"
    if -1 in y.signature:
        return f"{y.name!r} has a dynamic shape"
    if op.kind == "TRANSPOSE" and not (op.input(1) is not None and op.operand(1).is_const):
        return "its permutation is computed"
    axis = channel_axis_after(weights, op)
    if isinstance(axis, str):
        return axis
    if dequantize is not None and not graph.has_single_use(dequantize.outputs[0], op):
        return f"{dequantize.outputs[0].name!r} is read by other ops too"
    if dequantize is None and not same_quantization(_moved_like(weights, axis), y):
        return f"{y.name!r} is quantized otherwise than the moved weights"
    return None


def _moved_like(weights: Tensor, axis: int | None) -> Tensor:
    """A stand-in tensor with the quantization the moved weights carry (for the comparison)."""
    t = Tensor(weights.name, weights.dtype, weights.shape, quantization=_moved_quantization(weights, axis))
    return t


def _moved_quantization(weights: Tensor, axis: int | None):
    import copy

    q = copy.copy(weights.quantization)
    if axis is not None:
        q.quantizedDimension = axis
    return q


def _move(graph: Graph, op: Op, weights: Tensor, dequantize: Op | None) -> None:
    y = op.outputs[0]
    values = weights.const_data
    if op.kind == "TRANSPOSE":
        moved = np.transpose(values, [int(p) for p in op.operand(1).const_data.reshape(-1)])
    else:
        moved = values.reshape(y.shape)
    axis = channel_axis_after(weights, op)
    assert not isinstance(axis, str)  # _refusal said it is known
    graph.remove_op(op)
    if dequantize is None:
        make_constant(y, moved)
        y.quantization = _moved_quantization(weights, axis)
        return
    stored = graph.add_const(f"{weights.name}/moved", np.ascontiguousarray(moved), weights.dtype)
    stored.quantization = _moved_quantization(weights, axis)
    graph.add_op(dequantize.opcode, [stored], [y], dequantize.options, after=dequantize)
