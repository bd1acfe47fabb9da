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
the same quantization on both sides; y no graph output; a rank-1 x (one row) only for a target that
runs a FULLY_CONNECTED reading it (onert 0.1.0 does not: ir/runtimes.py's form input_rank_1).

And the RESHAPEs around a BATCH_MATMUL that only merge its batch axes (TICO's attention: rank 4 to 3
and back), as BATCH_MATMUL takes any batch rank itself:

    before:  a [1,H,S,D] -> RESHAPE([H,S,D]) -> BATCH_MATMUL(·, b') -> o [H,S,T] -> RESHAPE([1,H,S,T]) -> y
             b [1,H,D,T] -> RESHAPE([H,D,T]) -^
    after:   a, b -> BATCH_MATMUL -> y [1,H,S,T]

Exact: BATCH_MATMUL multiplies the matrices of the last two axes for each batch index, so merging the
batch axes before and splitting them after moves no element of any product. An operand RESHAPE that
merged other batch axes of the same size (GQA's repeated keys and values, [1,2,2,S,D] to [4,S,D])
and that only the BATCH_MATMUL reads is made to write [*B, S, D] instead: the same elements in the
same order. Guards: each operand a RESHAPE of a tensor [*B', r, c] to [prod(B'), r, c] (the last two
axes kept), B' = B, the product's batch axes after it, or of B's size as just said;
the product read only by a RESHAPE to [*B, rows, cols], seen by no one; float32; an operand RESHAPE
with other readers stays for them (the BATCH_MATMUL reads its input all the same); no RESHAPE goes
where its readers reading its input would let LiteRT run an op in place over a buffer still read.

A RESHAPE nothing reads is left to the cleanup, which keeps it where its reference is what stops
LiteRT from running an op in place over a buffer still read (engine/planner.py).

Guards for the identity: y's readers reading x must not let LiteRT run an op in place over a buffer
another reader still needs (engine/reshapes.py: `bypass_hazard`); both shapes known the same,
dynamic dimensions in the same places (a RESHAPE to a static shape from a dynamic one checks the
size at run time, which is not nothing); the new shape, when given as an operand, is a constant; the
same quantization on both sides.
"""

from __future__ import annotations

import math

from ..engine import targets
from ..engine.match import only_reader
from ..engine.report import PassResult
from ..engine.reshapes import HAZARD, bypass_hazard, same_quantization
from ..ir.graph import Graph, Op, Tensor
from ..ir.ops import fully_connected_form


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for bmm in [op for op in graph.ops if op.kind == "BATCH_MATMUL"]:
        _unmerge_batch(graph, result, bmm)
    for op in [op for op in graph.ops if op.kind == "RESHAPE"]:
        if not graph.contains(op):
            continue
        x, y = op.input(0), op.outputs[0]
        if x is None or graph.is_unread(y):  # the cleanup's: it keeps one LiteRT needs (planner.py)
            continue
        shape = op.input(1)
        if shape is not None and not shape.is_const:
            continue
        if _only_flattening_layers_read(graph, x, y) and same_quantization(x, y):
            form = fully_connected_form(len(x.shape), keep_num_dims=False)
            unsupported = form and targets.refusal(graph, "FULLY_CONNECTED", form=form)
            if unsupported:  # the layers would read x as it is (a single row: onert refuses it)
                result.not_for_target(op, unsupported)
                continue
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


def _batch_source(graph: Graph, t: Tensor | None) -> tuple[Op, tuple[int, ...]] | None:
    """(the RESHAPE, B) when t = RESHAPE(x [*B, r, c]) to [prod(B), r, c], float32, shapes static."""
    op = None if t is None else t.producer
    x = None if op is None or op.kind != "RESHAPE" else op.input(0)
    if op is None or x is None or t is None or -1 in x.signature or -1 in t.signature:
        return None
    if len(x.shape) < 3 or len(t.shape) != 3 or x.shape[-2:] != t.shape[-2:] or not same_quantization(x, t):
        return None
    batch = tuple(x.shape[:-2])
    return (op, batch) if math.prod(batch) == t.shape[0] and x.dtype == "FLOAT32" else None


def _unmerge_batch(graph: Graph, result: PassResult, bmm: Op) -> None:
    """BATCH_MATMUL on the operands before the RESHAPEs merging their batch axes, writing the RESHAPE
    after it directly (module docstring)."""
    o = bmm.outputs[0]
    after = only_reader(graph, o)
    if after is None or after.kind != "RESHAPE" or len(bmm.inputs) != 2 or len(o.shape) != 3:
        return
    if bmm.inputs[0] is bmm.inputs[1]:
        return
    y = after.outputs[0]
    batch = tuple(y.shape[:-2])
    if -1 in y.signature or tuple(y.shape[-2:]) != tuple(o.shape[-2:]) or math.prod(batch) != o.shape[0]:
        return
    found = [_operand_plan(graph, bmm, t, batch) for t in bmm.inputs[:2]]
    plans = [plan for plan in found if plan is not None]
    if len(plans) != 2:
        return
    kept = [pre for plan in plans for pre in plan if plan[pre] is None]
    going = [pre for pre in dict.fromkeys(kept) if graph.has_single_use(pre.outputs[0], bmm)]
    if any(bypass_hazard(graph, _present(p), p.outputs[0]) for p in going):
        result.skip(bmm, HAZARD)
        return
    result.fold(after, [*going, after], into=[bmm], batch=list(batch))
    for i, plan in zip((0, 1), plans):
        ((pre, retarget),) = plan.items()
        if retarget is None:  # its source has the batch axes already: read it
            graph.set_input(bmm, i, _present(pre))
        else:  # the RESHAPE splits the batch axes as the product does
            _set_reshape(graph, pre, retarget)
            graph.set_input(bmm, i, pre.outputs[0])
    graph.remove_op(after)
    graph.set_output(bmm, 0, y)
    for pre in going:
        if graph.contains(pre):
            graph.remove_op(pre)


def _operand_plan(graph: Graph, bmm: Op, t: Tensor | None, batch: tuple[int, ...]) -> dict[Op, tuple | None] | None:
    """How operand t of `bmm` gets the batch axes `batch`: {its RESHAPE: None} when the RESHAPE only
    merged them (read its source), {its RESHAPE: new shape} when it merged other batch axes of the
    same size (GQA's repeated keys and values: [1, 2, 2, S, D] to [4, S, D]) and only `bmm` reads it
    (it is made to write [*batch, S, D] instead); None when neither."""
    source = _batch_source(graph, t)
    if t is None or source is None:
        return None
    pre, its_batch = source
    if its_batch == batch:
        return {pre: None}
    if math.prod(its_batch) == math.prod(batch) and graph.has_single_use(t, bmm):
        return {pre: (*batch, *t.shape[-2:])}
    return None


def _set_reshape(graph: Graph, pre: Op, shape: tuple) -> None:
    """RESHAPE `pre` writes `shape` (its output read only by the BATCH_MATMUL): a new output tensor, the
    shape operand and option to match."""
    from ..engine.permute import reshape_target

    old = pre.outputs[0]
    consts, options = reshape_target(pre, shape)
    for i, values in consts.items():
        graph.set_input(pre, i, graph.add_const(graph.unique_name(f"{old.name}/shape"), values, "INT32"))
    if options:
        pre.options = pre.options_with(**options)
    new = graph.add_tensor(graph.unique_name(f"{old.name}/batched"), old.dtype, shape)
    graph.set_output(pre, 0, new)


def _present(reshape: Op) -> Tensor:
    x = reshape.input(0)
    assert x is not None  # _batch_source matched it
    return x
