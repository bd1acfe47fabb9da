"""resolve_customop_batchmatmul: TensorFlow's BatchMatMulV2 left as a CUSTOM op becomes the builtin
BATCH_MATMUL (ONE's pass of that name).

    before:  x, y -> CUSTOM(BatchMatMulV2, adj_x, adj_y) -> z
    after:   x, y -> BATCH_MATMUL(adj_x, adj_y) -> z

Exact: both are the matrix product over the last two axes, batch axes broadcast, with x's (y's)
last two axes swapped when adj_x (adj_y) is set; float32 sums either way (the kernels' order of
summation may differ: float rounding). The attributes are read from the flexbuffer map by name
(ONE reads bytes 22 and 23 of the options, which holds only for the exact map TF writes).

Guards: two float32 inputs and one float32 output, none quantized, each input of rank 2 or more;
readable custom options whose adj_x and adj_y (absent: false) are booleans.
"""

from __future__ import annotations

from ..engine import targets
from ..engine.match import batch_matmul_options, is_plain_float
from ..engine.report import PassResult
from ..ir.custom import custom_code, custom_options
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if custom_code(op) == "BatchMatMulV2"]:
        options = custom_options(op)
        if options is None or len(op.inputs) != 2 or len(op.outputs) != 1:
            continue
        adj = [options.get(name, False) for name in ("adj_x", "adj_y")]
        if not all(isinstance(a, bool) for a in adj):
            continue
        a, b = op.inputs
        if a is None or b is None or not all(is_plain_float(t) for t in (a, b, *op.outputs)):
            continue
        if min(len(a.shape), len(b.shape)) < 2:
            continue
        constant = [i for i, t in enumerate((a, b)) if t.is_const]
        unsupported = targets.refusal(graph, "BATCH_MATMUL", constant_inputs=constant)
        if unsupported:
            result.not_for_target(op, unsupported)
            continue
        result.fold(op, [op], into=[], resolved="BatchMatMulV2", adj_x=adj[0], adj_y=adj[1])
        graph.remove_op(op)
        bmm_options = batch_matmul_options(graph, adj[0], adj[1])
        result.made(graph.add_op("BATCH_MATMUL", op.inputs, op.outputs, bmm_options, after=op))
    return result
