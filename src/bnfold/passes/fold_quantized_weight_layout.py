"""fold_quantized_weight_layout: a TRANSPOSE or RESHAPE of quantized constant weights, directly or
behind their DEQUANTIZE, is done once on the stored integers, the per-channel quantized_dimension
moved with its axis (the PT2E export's TRANSPOSE on every quantized conv weight, litert-torch #179).

    before:  w [int8 HWIO, per channel along 3] -> DEQUANTIZE -> TRANSPOSE(3,0,1,2) -> wt -> CONV_2D
    after:   w' [int8 OHWI, per channel along 0] -> DEQUANTIZE -> wt -> CONV_2D
    (and w -> TRANSPOSE/RESHAPE -> wt [int8] -> layer: wt becomes the moved constant itself;
    and where the integers are a QUANTIZE of float32 weights that fold_quantize left, a value
    lying at a half step where kernels round apart, the float32 constant is moved instead:
    wf [float32 OIHW] -> QUANTIZE (per channel along 0) -> DEQUANTIZE -> TRANSPOSE(0,2,3,1)
    becomes wf' [float32 OHWI] -> QUANTIZE (along 0) -> DEQUANTIZE -> CONV_2D)

Exact: DEQUANTIZE is elementwise, each integer q of channel c giving s_c·(q - z_c) in float32, and a
TRANSPOSE or RESHAPE only moves elements: moving the integers with their channel's axis first gives
every element the same (q, s_c, z_c), so the same float32 bits. QUANTIZE is elementwise too: a
float32 weight moved with its channel meets the same (s_c, z_c), so becomes the same integer however
a kernel rounds a half step, provided the kernel computes every element alike wherever it lies:
LiteRT does for a per-channel QUANTIZE (PT2E's weights), not for a per-tensor one from float (a
vectorized body and a scalar tail round apart: ir/runtimes.py's BY_POSITION), which is refused;
so is a per-tensor DEQUANTIZE of a nonzero zero point, which LiteRT computes by position too (a
symmetric or per-channel one it computes alike). A RESHAPE keeps each element's
channel when the channel axis and the product of the axes before it stay (`channel_axis_after`).
The layer's float weights are the same bits; but weights that are now a DEQUANTIZE of a constant
let XNNPACK (LiteRT's default kernels) take a float layer the builtin kernel ran before, whose sums
round otherwise: float32 rounding, as any exact float rewrite may cause there.

Guards: the integers are an 8- or 16-bit quantized constant; what the layout op makes is no model
output; the DEQUANTIZE's output is read by the layout op alone (else the DEQUANTIZE stays for its
other readers and nothing would be saved), and so is a QUANTIZE's output by its DEQUANTIZE; without
a DEQUANTIZE the op's output must carry the moved quantization. A constant read elsewhere keeps its
buffer: the moved values get a new one.
"""

from __future__ import annotations

import numpy as np

from ..engine.constfold import make_constant
from ..engine.permute import by_position
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
        if weights is None or weights.dtype not in INTEGER_TYPES or not weights.is_quantized:
            continue
        quantize = _quantize_of_constant(weights) if dequantize is not None else None
        if not weights.is_const and quantize is None:
            continue
        problem = _refusal(graph, op, weights, dequantize, quantize)
        if problem is not None:
            result.refuse_value(op, f"{op.kind} of quantized weights kept: {problem}")
            continue
        removed = [o for o in (quantize, dequantize) if o is not None] + [op]
        result.fold(op, removed, into=[], weights=weights.name, moved_to=list(op.outputs[0].shape))
        if quantize is not None and dequantize is not None:
            _move_before_quantize(graph, op, quantize, dequantize)
        else:
            _move(graph, op, weights, dequantize)
    return result


def _quantize_of_constant(weights: Tensor) -> Op | None:
    """The QUANTIZE computing `weights` from a float32 constant (fold_quantize left it), or None."""
    quantize = weights.producer
    if quantize is None or quantize.kind != "QUANTIZE":
        return None
    source = quantize.input(0)
    if source is None or not source.is_const or source.dtype != "FLOAT32" or source.is_quantized:
        return None
    return quantize


def _refusal(graph: Graph, op: Op, weights: Tensor, dequantize: Op | None, quantize: Op | None) -> str | None:
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
    if quantize is not None and dequantize is not None and not graph.has_single_use(weights, dequantize):
        return f"{weights.name!r} is read by other ops too"
    if quantize is not None:
        return by_position(quantize)
    if dequantize is None and not same_quantization(_moved_like(weights, axis), y):
        return f"{y.name!r} is quantized otherwise than the moved weights"
    if dequantize is not None:  # the integers move, the DEQUANTIZE stays: it must dequantize each alike
        return by_position(dequantize)
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


def _moved_values(op: Op, values: np.ndarray) -> np.ndarray:
    if op.kind == "TRANSPOSE":
        return np.transpose(values, [int(p) for p in op.operand(1).const_data.reshape(-1)])
    return values.reshape(op.outputs[0].shape)


def _move_before_quantize(graph: Graph, op: Op, quantize: Op, dequantize: Op) -> None:
    """float32 constant -> QUANTIZE -> DEQUANTIZE -> op -> y becomes the moved float32 constant ->
    QUANTIZE (the moved quantization) -> DEQUANTIZE -> y; the old chain is left unread."""
    weights, y = quantize.outputs[0], op.outputs[0]
    source = quantize.operand(0)
    axis = channel_axis_after(weights, op)
    assert not isinstance(axis, str)  # _refusal said it is known
    graph.remove_op(op)
    stored = graph.add_const(f"{source.name}/moved", np.ascontiguousarray(_moved_values(op, source.const_data)))
    moved = graph.add_tensor(
        f"{weights.name}/moved", weights.dtype, y.shape, quantization=_moved_quantization(weights, axis)
    )
    graph.add_op(quantize.opcode, [stored], [moved], quantize.options, after=quantize)
    graph.add_op(dequantize.opcode, [moved], [y], dequantize.options, after=dequantize)


def _move(graph: Graph, op: Op, weights: Tensor, dequantize: Op | None) -> None:
    y = op.outputs[0]
    moved = _moved_values(op, weights.const_data)
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
