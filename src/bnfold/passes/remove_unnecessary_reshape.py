"""remove_unnecessary_reshape: a RESHAPE whose output shape is its input shape goes (ONE's pass of
that name), and so does a flatten that only FULLY_CONNECTED layers read, which flatten by themselves.

    before:  x [3,7,5] -> RESHAPE([3,7,5]) -> y -> readers
    after:   x [3,7,5] -> readers            (y's readers read x)

    before:  x [1,1,1,C] -> RESHAPE([1,C]) -> y -> FULLY_CONNECTED(W [U,C]) -> [1,U]
    after:   x [1,1,1,C] -> FULLY_CONNECTED(W, keep_num_dims=false) -> [1,U]
             (the classifier after a MEAN with keep_dims, as TICO exports it)

Exact: a RESHAPE never moves an element, so with the same shape it is the identity. A
FULLY_CONNECTED without keep_num_dims reads its input of any rank as the row-major [-1, K] matrix,
K its weights' columns (LiteRT's float, int8 and XNNPACK kernels alike): for y = [N, K] that is y
itself, so reading x gives the same rows. On y's rank-2 input keep_num_dims changes nothing
(the output is [N, U] either way), so a reader that had it set gets it cleared (TICO sets it). When y is a
graph output (or a signature names it), its name must stay: then x's producer writes y directly,
which needs x to have no other reader and to be seen by no one; otherwise the RESHAPE stays.

Guards for the flatten: y is [N, K] with K the weights' columns of every reader; a static N only
from a static x (a dynamic x's size is checked by the RESHAPE);
the same quantization on both sides; y no graph output.

A RESHAPE nothing reads is left to the cleanup, which keeps it where its reference is what stops
LiteRT from running an op in place over a buffer still read (engine/planner.py).

Guards for the identity: y's readers reading x must not let LiteRT run an op in place over a buffer
another reader still needs (engine/reshapes.py: `bypass_hazard`); both shapes known the same,
dynamic dimensions in the same places (a RESHAPE to a static shape from a dynamic one checks the
size at run time, which is not nothing); the new shape, when given as an operand, is a constant; the
same quantization on both sides.
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..engine.reshapes import HAZARD, bypass_hazard, same_quantization
from ..ir.graph import Graph, Op, Tensor


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "RESHAPE"]:
        x, y = op.input(0), op.outputs[0]
        if x is None or graph.is_unread(y):  # the cleanup's: it keeps one LiteRT needs (planner.py)
            continue
        shape = op.input(1)
        if shape is not None and not shape.is_const:
            continue
        if _only_flattening_layers_read(graph, x, y) and same_quantization(x, y):
            fcs = graph.consumers(y)
            result.fold(op, [op], into=fcs, flattened_by=[fc.outputs[0].name for fc in fcs])
            for fc in fcs:
                if fc.options is not None:  # without options keep_num_dims is off already
                    fc.options = fc.options.copy(keepNumDims=False)
            graph.remove_op(op)
            graph.replace_uses(y, x)
            continue
        if x.signature != y.signature:
            if _flattens_for_a_layer(graph, y):
                result.refuse_value(
                    op, f"{y.name!r} is read by other ops than FULLY_CONNECTED layers (or is a model output)"
                )
            continue
        if not same_quantization(x, y):
            result.refuse_value(op, f"{y.name!r} reads its bytes with another quantization than {x.name!r}")
            continue
        if graph.is_observed(y):
            if not _producer_takes_output(graph, op, x):
                result.refuse_value(
                    op,
                    f"{y.name!r} is a model output, and {x.name!r} is a graph input, a constant or read elsewhere:"
                    f" no op could write {y.name!r} in the RESHAPE's place",
                )
                continue
        elif bypass_hazard(graph, x, y):
            result.refuse_value(op, HAZARD)  # (a RESHAPE is no batch-norm candidate: not a skip)
            continue
        result.fold(op, [op], shape=list(y.signature))
        _bypass(graph, op, x)
    return result


def _only_flattening_layers_read(graph: Graph, x: Tensor, y: Tensor) -> bool:
    """y is [N, K] (N dynamic only if x is: a static N is checked at run time), not seen from
    outside, and only read, as data, by FULLY_CONNECTED layers with K weight columns (which flatten
    any input to [-1, K] once keep_num_dims is off)."""
    sig = y.signature
    readers = graph.consumers(y)
    if len(sig) != 2 or sig[1] < 0 or (sig[0] >= 0 and -1 in x.signature) or graph.is_observed(y) or not readers:
        return False
    for fc in readers:
        w = fc.input(1)
        if (
            fc.kind != "FULLY_CONNECTED"
            or fc.input(0) is not y
            or y in fc.inputs[1:]
            or w is None
            or len(w.shape) != 2
            or w.shape[1] != sig[1]
        ):
            return False
    return True


def _flattens_for_a_layer(graph: Graph, y: Tensor) -> bool:
    """y is [N, K] and a FULLY_CONNECTED with K weight columns reads it as its data: the flatten
    those layers would do themselves (for the report, once it stays)."""
    sig = y.signature
    return len(sig) == 2 and any(
        fc.kind == "FULLY_CONNECTED"
        and fc.input(0) is y
        and (w := fc.input(1)) is not None
        and len(w.shape) == 2
        and w.shape[1] == sig[1]
        for fc in graph.consumers(y)
    )


def _producer_takes_output(graph: Graph, op: Op, x: Tensor) -> bool:
    return x.producer is not None and graph.has_single_use(x, op)


def _bypass(graph: Graph, op: Op, x: Tensor) -> None:
    y = op.outputs[0]
    graph.remove_op(op)
    if graph.is_observed(y):
        producer = x.producer
        assert producer is not None  # _producer_takes_output
        graph.set_output(producer, producer.outputs.index(x), y)
    else:
        graph.replace_uses(y, x)
