"""substitute_padv2_to_pad: a PADV2 of a non-negative value by a pad value <= 0 that only a
MAX_POOL_2D reads, each padding narrower than the pool's window on its axis, becomes a PAD (zeros)
(ONE's pass of that name: PyTorch's max pool exports pad with -3.4e38, which quantizes badly).

    before:  conv(RELU) -> x -> [TRANSPOSE ->] PADV2(paddings, -3.4e38) -> [TRANSPOSE ->] MAX_POOL_2D(3x3, VALID)
    after:   conv(RELU) -> x -> [TRANSPOSE ->] PAD(paddings)           -> [TRANSPOSE ->] MAX_POOL_2D

Exact: every window of the pool holds at least one element of x (a padding narrower than the
window on both sides of H and W cannot fill one: a window inside the front padding needs
front >= window, one inside the back needs back >= window), and those are >= 0. The pool's
maximum is then max(elements of x) >= 0 >= the pad value, whether the pad is v <= 0 or 0: the same.

Guards: x is >= 0 because its producer says so (RELU, RELU6, or a fused RELU/RELU6), seen through
TRANSPOSEs; the pad value is one constant float <= 0; the PADV2's output is read only by the pool,
possibly through TRANSPOSEs that only it reads (their permutations carry the paddings to the
pool's NHWC axes); constant paddings; not a model output.
"""

from __future__ import annotations

import numpy as np

from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options, Tensor

KINDS = frozenset({"PADV2"})
NON_NEGATIVE_KINDS = frozenset({"RELU", "RELU6"})
NON_NEGATIVE_ACTIVATIONS = frozenset({"RELU", "RELU6"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in KINDS]:
        x, paddings, value = op.input(0), op.input(1), op.input(2)
        if x is None or paddings is None or value is None or not paddings.is_const or not value.is_const:
            continue
        if value.dtype != "FLOAT32" or value.data.size != 1 or not float(value.data.reshape(-1)[0]) <= 0:
            continue
        rows = paddings.data.reshape(-1, 2)
        source = _non_negative_source(x)
        if len(rows) != 4 or source is None or not _only_a_narrow_pool_reads(graph, op.outputs[0], rows):
            continue
        # context: what makes x >= 0, which the per-rewrite check must run too (values/local.py)
        result.fold(op, [op], into=[], pad_value=float(value.data.reshape(-1)[0]), context=source)
        graph.remove_op(op)
        made = graph.add_op("PAD", [x, paddings], list(op.outputs), Options("PadOptions"), after=op)
        result.made(made)
    return result


def _non_negative_source(t: Tensor) -> list[str] | None:
    """The outputs from the op making `t` >= 0 (a RELU, RELU6 or one fused) to `t`, through
    TRANSPOSEs; None when no such op makes it."""
    names = [t.name]
    producer = t.producer
    while producer is not None and producer.kind == "TRANSPOSE" and producer.inputs[0] is not None:
        names.append(producer.inputs[0].name)
        producer = producer.inputs[0].producer
    if producer is None:
        return None
    if producer.kind in NON_NEGATIVE_KINDS or (
        producer.has_fused_activation_slot and producer.fused_activation in NON_NEGATIVE_ACTIVATIONS
    ):
        return names
    return None


def _only_a_narrow_pool_reads(graph: Graph, t: Tensor, rows: np.ndarray) -> bool:
    """Only a MAX_POOL_2D reads `t` (through TRANSPOSEs only it reads), and each padding of its H and
    W axes (rows, permuted along the way) is narrower than the pool's window there."""
    while True:
        readers = graph.consumers(t)
        if graph.is_observed(t) or len(readers) != 1 or readers[0].input(0) is not t:
            return False
        reader: Op = readers[0]
        if reader.kind == "MAX_POOL_2D":
            height, width = int(reader.options.filterHeight), int(reader.options.filterWidth)
            return bool(np.all(rows[1] < height) and np.all(rows[2] < width))
        perm = reader.input(1)
        if reader.kind != "TRANSPOSE" or perm is None or not perm.is_const:
            return False
        rows = rows[[int(p) for p in perm.data.reshape(-1)]]
        t = reader.outputs[0]
