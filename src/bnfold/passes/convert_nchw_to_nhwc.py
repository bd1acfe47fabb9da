"""convert_nchw_to_nhwc: an NCHW graph computed in NHWC inside (ONE's option of that name, with
its parameters nchw_to_nhwc_input_shape / nchw_to_nhwc_output_shape).

An ONNX model converted to Circle keeps ONNX's NCHW layout and wraps each NHWC kernel in
transposes. Layout ops that only move unit axes count as transposes here too (a RESHAPE
[N,H,W,1] -> [N,1,H,W] is TRANSPOSE(0,3,1,2)), so the layout propagation moves them through the
NCHW ops between two kernels until they cancel:

    before:  CONV_2D -> RESHAPE [N,1,H,W] -> PAD(NCHW paddings) -> RESHAPE [N,H',W',1] -> CONV_2D
    after:   CONV_2D -> PAD(NHWC paddings) -> CONV_2D

The model's interface stays as it is, unless a parameter names it:

    nchw_to_nhwc_input_shape    each 4-D graph input becomes NHWC: its shape (and shape signature)
                                permuted, a TRANSPOSE(0,3,1,2) after it feeding what read it
    nchw_to_nhwc_output_shape   each 4-D graph output becomes NHWC: its producer writes the NCHW
                                value to a new tensor, a TRANSPOSE(0,2,3,1) writes the output

Both keep the names. Those boundary transposes are what the propagation then cancels against the
model's own (an ONNX export starts with TRANSPOSE(0,2,3,1) before its first conv). The interface
changes once, before the passes run; the report lists the inputs and outputs that changed layout
and those left as they were, with why (not 4-D; both an input and an output; no producer;
quantized per channel; a producer LiteRT would then run in place over a buffer another reader
needs: a graph output is never shared, the tensor before the new TRANSPOSE may be; an input whose
readers LiteRT would then run in place over the new TRANSPOSE's output, a graph input never being
shared, while another reader of that buffer still needs it; see engine/reshapes.py; a type whose
TRANSPOSE the target cannot run: onert's of INT64).

Exact: a transpose only moves elements; on the NHWC input x.transpose(0,2,3,1) the converted
model gives the original's output transposed the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..engine import targets
from ..engine.layout import transpose_perm
from ..engine.propagation import propagate
from ..engine.quantization import scale_count
from ..engine.report import PassResult
from ..engine.reshapes import in_place_hazard, input_hazard, reading_slots, same_quantization
from ..ir.graph import Graph, Op, Options, Tensor

# the parameters' names, what each does and this permutation are in the registry's table (its
# Interface, asked for before any pass runs); change_interface hears which sides were asked for
TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def run(graph: Graph) -> PassResult:
    return propagate_with_unit_reshapes(graph)


def propagate_with_unit_reshapes(graph: Graph) -> PassResult:
    """Offer every RESHAPE that is a transpose of unit axes to the propagation as that TRANSPOSE;
    those it did not move become their RESHAPE again. When nothing moved at all, what the offers
    added (permutation constants, a TRANSPOSE operator code) goes too: the graph is as it was."""
    assert graph.model is not None  # passes run on the graphs of a model
    opcodes = len(graph.model.opcodes)
    offered = {}
    for op in [op for op in graph.ops if op.kind == "RESHAPE"]:
        perm = unit_axes_permutation(op)
        if perm is not None:
            offered[_as_transpose(graph, op, perm)] = (op, perm)
    result = propagate(graph)
    for transpose, (reshape, perm) in offered.items():
        if _unmoved(graph, transpose, reshape, perm):
            _restore(graph, transpose, reshape)
    if offered and not result.changed:
        _forget(graph, {id(t.inputs[1]) for t in offered}, opcodes)
    kept = [i for i, op in enumerate(result.skipped) if graph.contains(op)]  # not about a restored offer
    result.skips, result.skipped = [result.skips[i] for i in kept], [result.skipped[i] for i in kept]
    return result


def unit_axes_permutation(op: Op) -> tuple[int, ...] | None:
    """The permutation p with output = transpose(input, p) of a RESHAPE that keeps the rank, moves
    only unit axes and reads its output with its input's quantization (None for any other RESHAPE,
    and for one that moves nothing)."""
    x, y = op.input(0), op.outputs[0]
    if x is None or len(x.shape) != len(y.shape) or x.shape == y.shape or len(op.outputs) != 1:
        return None
    if not same_quantization(x, y):
        return None
    if any(d < 0 for d in x.signature + y.signature):
        return None
    long_in = [a for a, d in enumerate(x.shape) if d != 1]
    long_out = [j for j, d in enumerate(y.shape) if d != 1]
    if [x.shape[a] for a in long_in] != [y.shape[j] for j in long_out]:
        return None
    units_in = [a for a, d in enumerate(x.shape) if d == 1]
    perm = [0] * len(y.shape)
    for j, a in zip(long_out, long_in):
        perm[j] = a
    for j, a in zip([j for j, d in enumerate(y.shape) if d == 1], units_in):
        perm[j] = a
    return tuple(perm)


def _as_transpose(graph: Graph, reshape: Op, perm) -> Op:
    x, y = reshape.inputs[0], reshape.outputs[0]
    p = graph.add_const(f"{y.name}/as_perm", np.array(perm, dtype=np.int32), "INT32")
    graph.remove_op(reshape)
    return graph.add_op("TRANSPOSE", [x, p], [y], Options("TransposeOptions"), after=reshape)


def _unmoved(graph: Graph, transpose: Op, reshape: Op, perm) -> bool:
    """The propagation left this TRANSPOSE as it was offered: the RESHAPE's input, output and move."""
    return (
        graph.contains(transpose)
        and transpose.inputs[0] is reshape.inputs[0]
        and transpose.outputs[0] is reshape.outputs[0]
        and transpose_perm(transpose) == perm
    )


def _forget(graph: Graph, perms: set[int], opcodes: int) -> None:
    graph.tensors = [t for t in graph.tensors if id(t) not in perms]
    assert graph.model is not None  # passes run on the graphs of a model
    del graph.model.opcodes[opcodes:]


def _restore(graph: Graph, transpose: Op, reshape: Op) -> None:
    graph.add_op(
        reshape.opcode, reshape.inputs, reshape.outputs, reshape.options, record=reshape.record, after=transpose
    )
    graph.remove_op(transpose)


def change_interface(graph: Graph, *, inputs: bool, outputs: bool) -> dict:
    """Make the 4-D `inputs` and/or `outputs` NHWC (module docstring); what changed and what did not."""
    record: dict[str, list] = {"inputs": [], "outputs": [], "kept": []}
    sides: list[tuple[str, list[Tensor], Callable[[Graph, Tensor], None]]] = []
    sides += [("input", graph.inputs, _input_to_nhwc)] if inputs else []
    sides += [("output", graph.outputs, _output_to_nhwc)] if outputs else []
    for side, tensors, convert in sides:
        for t in dict.fromkeys(tensors):  # a tensor listed twice is one tensor: converted once
            reason = _why_kept(graph, t, side)
            if reason:
                record["kept"].append({"name": t.name, "side": side, "shape": list(t.shape), "reason": reason})
                continue
            was = list(t.shape)
            convert(graph, t)
            record[f"{side}s"].append({"name": t.name, "shape": list(t.shape), "was": was})
    return record


def _why_kept(graph: Graph, t: Tensor, side: str) -> str | None:
    if len(t.shape) != 4:
        return f"rank {len(t.shape)}, not 4-D"
    if t in graph.inputs and t in graph.outputs:
        return "both a graph input and a graph output"
    if side == "output":
        producer = t.producer
        if producer is None:
            return "not made by an operator"
        readers = ["TRANSPOSE", *(u.kind for u in reading_slots(graph, t))]
        if in_place_hazard(graph, producer, readers, internal=True):
            return "LiteRT would run its producer in place over a buffer another reader still needs"
    if side == "input" and input_hazard(graph, t):
        return "LiteRT would run an op in place over its buffer while another reader still needs it"
    if scale_count(t.quantization) > 1:
        return "quantized per channel"
    return targets.refusal(graph, "TRANSPOSE", rank=4, dtype=t.dtype)  # the TRANSPOSE it would get


def _permute(t: Tensor, perm) -> None:
    t.shape = tuple(t.shape[i] for i in perm)
    if t.shape_signature is not None:
        t.shape_signature = tuple(t.shape_signature[i] for i in perm)


def _nchw_copy(graph: Graph, t: Tensor) -> Tensor:
    """A new tensor with t's NCHW shape, type and quantization."""
    return graph.add_tensor(
        f"{t.name}/nchw", t.dtype, t.shape, shape_signature=t.shape_signature, quantization=t.quantization
    )


def _transpose(graph: Graph, x: Tensor, y: Tensor, perm, **where):
    p = graph.add_const(f"{y.name}/perm", np.array(perm, dtype=np.int32), "INT32")
    return graph.add_op("TRANSPOSE", [x, p], [y], Options("TransposeOptions"), **where)


def _input_to_nhwc(graph: Graph, x: Tensor) -> None:
    """x (NCHW) -> readers   becomes   x (NHWC) -> TRANSPOSE(0,3,1,2) -> x/nchw -> readers."""
    nchw = _nchw_copy(graph, x)
    graph.replace_uses(x, nchw)
    _permute(x, TO_NHWC)
    if graph.ops:
        _transpose(graph, x, nchw, TO_NCHW, before=graph.ops[0])


def _output_to_nhwc(graph: Graph, y: Tensor) -> None:
    """producer -> y (NCHW) [-> readers]   becomes   producer -> y/nchw [-> readers] ->
    TRANSPOSE(0,2,3,1) -> y (NHWC): readers inside the graph keep reading the NCHW value."""
    producer = y.producer
    assert producer is not None  # _why_kept keeps an output no op makes
    nchw = _nchw_copy(graph, y)
    graph.replace_uses(y, nchw)
    graph.set_output(producer, producer.outputs.index(y), nchw)
    _permute(y, TO_NHWC)
    _transpose(graph, nchw, y, TO_NHWC, after=producer)
