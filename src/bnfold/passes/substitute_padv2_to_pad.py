"""substitute_padv2_to_pad: a PADV2 of a non-negative value by a pad value <= 0 that only a
MAX_POOL_2D reads becomes a PAD (zeros) where every window of the pool holds an element of the
unpadded value (ONE's pass of that name: PyTorch's max pool exports pad with -3.4e38, which
quantizes badly).

    before:  conv(RELU) -> x -> [TRANSPOSE ->] PADV2(paddings, -3.4e38) -> [TRANSPOSE ->] MAX_POOL_2D
    after:   conv(RELU) -> x -> [TRANSPOSE ->] PAD(paddings)           -> [TRANSPOSE ->] MAX_POOL_2D

Exact when every window of the pool holds at least one element of x: those are >= 0, so the
window's maximum is max(elements of x in it) >= 0 >= the pad value, whether the pad is v <= 0 or 0.
The windows are the pool's own (ir/shapes.window_spans: VALID from 0 by the stride; SAME shifted
by the pool's padding, which the pool skips, so a window at the border can hold padding only):
along H and W each must meet the unpadded range [front, size - back). The pool reads each batch
and channel slice alone, so padding on the batch or channel axis makes slices of padding only: it
must be zero there.

Guards: x is >= 0 because its producer says so (ir/ops.py's non-negative kinds and activations),
seen through TRANSPOSEs; the pad value is one constant float <= 0; the PADV2's output is read only
by the pool, possibly through TRANSPOSEs that only it reads (their permutations carry the paddings
to the pool's NHWC axes); constant paddings of a 4-D value; the pool's input shape static; not a
model output. Each near miss is a skip with its reason.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import NON_NEGATIVE_ACTIVATIONS, NON_NEGATIVE_KINDS, PADDINGS
from ..ir.shapes import window_spans

KINDS = frozenset({"PADV2"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        x, paddings, value = op.input(0), op.input(1), op.input(2)
        if x is None or paddings is None or value is None or not paddings.is_const or not value.is_const:
            continue
        if value.dtype != "FLOAT32" or value.const_data.size != 1 or not float(value.const_data.reshape(-1)[0]) <= 0:
            continue  # no candidate: ONE's pattern is a float pad value <= 0
        source = _non_negative_source(x)
        if source is None:
            result.refuse_value(op, f"{x.name!r} is not made >= 0 by a RELU or RELU6 (through TRANSPOSEs)")
            continue
        rows = paddings.const_data.reshape(-1, 2)
        reason = (
            "the padded value is not 4-D" if len(rows) != 4 else _why_a_window_may_hold_padding_only(graph, op, rows)
        )
        if reason is not None:
            result.refuse_value(op, reason)
            continue
        unsupported = targets.refusal(graph, "PAD", rank=len(rows), dtype=x.dtype)
        if unsupported:
            result.not_for_target(op, unsupported)
            continue
        # context: what makes x >= 0, which the per-rewrite check must run too (values/local.py)
        result.fold(op, [op], into=[], pad_value=float(value.const_data.reshape(-1)[0]), context=source)
        graph.remove_op(op)
        made = graph.add_op("PAD", [x, paddings], list(op.outputs), Options("PadOptions"), after=op)
        result.made(made)
    return result


def _non_negative_source(t: Tensor) -> list[str] | None:
    """The outputs from the op making `t` >= 0 (ir/ops.py's non-negative kinds, or one fused) to
    `t`, through TRANSPOSEs; None when no such op makes it."""
    names = [t.name]
    producer = t.producer
    while producer is not None and producer.kind == "TRANSPOSE":
        names.append(producer.operand(0).name)
        producer = producer.operand(0).producer
    if producer is None:
        return None
    if producer.kind in NON_NEGATIVE_KINDS or (
        producer.has_fused_activation_slot and producer.fused_activation in NON_NEGATIVE_ACTIVATIONS
    ):
        return names
    return None


def _why_a_window_may_hold_padding_only(graph: Graph, padv2: Op, rows: np.ndarray) -> str | None:
    """None when only a MAX_POOL_2D reads the PADV2's output (through TRANSPOSEs only it reads) and
    each of its windows holds an element of the unpadded value (rows: the paddings, permuted along
    the way to the pool's NHWC axes); else why not."""
    t = padv2.outputs[0]
    while True:
        readers = graph.consumers(t)
        if graph.is_observed(t) or len(readers) != 1 or readers[0].input(0) is not t:
            return f"{t.name!r} is read by more than a MAX_POOL_2D (or is a model output)"
        reader: Op = readers[0]
        if reader.kind == "MAX_POOL_2D":
            return _pool_windows_meet_the_value(reader, rows)
        perm = reader.input(1)
        if reader.kind != "TRANSPOSE" or perm is None or not perm.is_const:
            return f"{t.name!r} is read by {reader.kind}, not a MAX_POOL_2D"
        rows = rows[[int(p) for p in perm.const_data.reshape(-1)]]
        t = reader.outputs[0]


def _pool_windows_meet_the_value(pool: Op, rows: np.ndarray) -> str | None:
    if rows[0].any() or rows[3].any():
        return "pads the pool's batch or channel axis: those slices hold the pad value only"
    padded = pool.operand(0)
    if -1 in padded.signature:
        return f"{padded.name!r} has no static shape"
    options = pool.required_options
    padding = int(options.padding)
    for axis, name in ((1, "Height"), (2, "Width")):
        size, (front, back) = padded.shape[axis], (int(rows[axis][0]), int(rows[axis][1]))
        stride, window = int(getattr(options, f"stride{name[0]}")) or 1, int(getattr(options, f"filter{name}"))
        spans = window_spans(size, window, stride, padding)
        if any(stop <= front or start >= size - back for start, stop in spans):
            return f"a {PADDINGS[padding]} window of the pool along {name.lower()} holds padding only"
    return None
