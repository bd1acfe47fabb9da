"""fuse_slice_with_tconv: a SLICE of a TRANSPOSE_CONV's output becomes part of the TRANSPOSE_CONV
(ONE's pass of that name): a spatial crop is more padding, a channel range fewer filters.

    before:  x -> TRANSPOSE_CONV(out [N, H, W, C], padding P) -> t
                -> SLICE(begin [0, h0, w0, c0], size [N, H', W', C']) -> y
    after:   x -> TRANSPOSE_CONV(out [N, H', W', C'], padding P', filter rows c0 .. c0+C', bias the same) -> y

Algebra: TRANSPOSE_CONV scatters x through the filter into a full map and crops it at the padding
TFLite computes from the output size, kernel, stride and padding kind (reference/kernels.py `pads`,
the rule the value check runs): pad = P's before-padding of a convolution whose input is the
output. The SLICE crops again at (h0, w0); so the fused op must crop at pad(H) + h0 and
pad(W) + w0, which one of VALID / SAME must give for the new sizes H', W' (TFLite has no
explicit padding: where neither does, nothing is fused). Output channel c of the full map is
filter row c plus bias c, so a channel range is those rows. Exact: the same sums, cropped
elsewhere.

Guards: float32, none quantized; the output shape, begin and size are INT32 constants (a -1 size
runs to the end), the batch axis whole; constant filter (and bias, if any); t read only by the
SLICE and no graph output; the new output size and padding kind must also describe a transposed
convolution of x's size (a convolution of the new output with that padding has x's spatial
size): LiteRT sizes its work by it and computes wrong shapes otherwise. ONE picks the padding
kind by comparing against sizes recomputed from the new output alone, without checking them
against the real input.
"""

from __future__ import annotations

import numpy as np

from ..engine.match import float_const, is_plain_float, only_reader
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import PADDINGS
from ..ir.shapes import out_size, pads


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for slice_op in [op for op in graph.ops if op.kind == "SLICE"]:
        tconv = slice_op.operand(0).producer
        if tconv is None or tconv.kind != "TRANSPOSE_CONV" or only_reader(graph, tconv.outputs[0]) is not slice_op:
            continue
        window = _window(slice_op, tconv)
        if window is None:
            continue
        begin, size = window
        padding = _padding_for(tconv, begin, size)
        if padding is not None:
            _fuse(graph, result, slice_op, tconv, begin, size, padding)
    return result


def _ints(t: Tensor | None) -> list[int] | None:
    if t is None or not t.is_const or t.dtype != "INT32" or len(t.shape) != 1:
        return None
    return [int(v) for v in t.const_data]


def _window(slice_op: Op, tconv: Op) -> tuple[list[int], list[int]] | None:
    """(begin, size) of the SLICE over the TRANSPOSE_CONV's [N, H, W, C] output, sizes resolved."""
    out, begin, size = _ints(tconv.input(0)), _ints(slice_op.input(1)), _ints(slice_op.input(2))
    if out is None or begin is None or size is None or not len(out) == len(begin) == len(size) == 4:
        return None
    size = [d - b if s == -1 else s for d, b, s in zip(out, begin, size)]
    if any(b < 0 or s <= 0 or b + s > d for d, b, s in zip(out, begin, size)) or begin[0] != 0 or size[0] != out[0]:
        return None
    w, x, bias = tconv.operand(1), tconv.operand(2), tconv.input(3)
    if float_const(w) is None or (bias is not None and float_const(bias) is None) or len(w.shape) != 4:
        return None
    if not (is_plain_float(x) and is_plain_float(tconv.outputs[0]) and is_plain_float(slice_op.outputs[0])):
        return None
    return begin, size


def _padding_for(tconv: Op, begin: list[int], size: list[int]) -> int | None:
    """The padding kind (index into PADDINGS) whose TFLite padding for the new output sizes is the
    old one plus the SLICE's offset, along H and W."""
    out, x, options = _ints(tconv.input(0)), tconv.operand(2), tconv.required_options
    assert out is not None  # _window read it
    _, kh, kw, _ = tconv.operand(1).shape
    strides = (options.strideH, options.strideW)
    old = options.padding
    for kind in (PADDINGS.index("VALID"), PADDINGS.index("SAME")):
        if all(
            pads(size[a], k, s, 1, kind)[0] == pads(out[a], k, s, 1, old)[0] + begin[a]
            and out_size(size[a], k, s, 1, kind) == x.shape[a]  # LiteRT sizes its work by this
            for a, k, s in ((1, kh, strides[0]), (2, kw, strides[1]))
        ):
            return kind
    return None


def _fuse(
    graph: Graph, result: PassResult, slice_op: Op, tconv: Op, begin: list[int], size: list[int], padding: int
) -> None:
    shape_t, w, x, bias = tconv.operand(0), tconv.operand(1), tconv.operand(2), tconv.input(3)
    channels = slice(begin[3], begin[3] + size[3])
    inputs = [graph.add_const(graph.unique_name(f"{shape_t.name}/sliced"), np.array(size, np.int32), "INT32")]
    whole = channels == slice(0, w.shape[0])
    inputs.append(w if whole else graph.add_const(graph.unique_name(f"{w.name}/sliced"), w.const_data[channels].copy()))
    inputs.append(x)
    if bias is not None:
        inputs.append(
            bias
            if whole
            else graph.add_const(graph.unique_name(f"{bias.name}/sliced"), bias.const_data[channels].copy())
        )
    result.fold(tconv, [tconv, slice_op], into=[], begin=begin, size=size, padding=PADDINGS[padding])
    for op in (tconv, slice_op):
        graph.remove_op(op)
    made = graph.add_op(tconv.opcode, inputs, slice_op.outputs, tconv.options_with(padding=padding), after=slice_op)
    result.made(made)
