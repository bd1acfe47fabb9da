"""resolve_customop_matmul: TensorFlow's MatMul left as a CUSTOM op becomes the builtin
FULLY_CONNECTED (ONE's pass of that name).

    before:  a [M, K], b [K, U] -> CUSTOM(MatMul, transpose_a, transpose_b) -> y [M, U]
    after:   a -> [TRANSPOSE if transpose_a] -> FULLY_CONNECTED(weights W [U, K], no bias) -> y

Exact: FULLY_CONNECTED computes a · Wᵀ, so W is b transposed (b itself under transpose_b); a
constant b is transposed once here (a new constant; the original is left to its other readers),
a computed one by a TRANSPOSE op (ONE always adds the op). float32 sums either way (float
rounding).

Guards: a and b of rank 2 with static shapes (TFLite's MatMul is 2-D; a batched product is
BatchMatMul), float32 in and out, none quantized; readable custom options whose transpose_a and
transpose_b (absent: false) are booleans.
"""

from __future__ import annotations

from ..engine import targets
from ..engine.match import fully_connected_options, is_plain_float, transposed_matrix
from ..engine.report import PassResult
from ..ir.custom import custom_code, custom_options
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if custom_code(op) == "MatMul"]:
        options = custom_options(op)
        if options is None or len(op.inputs) != 2 or len(op.outputs) != 1:
            continue
        flags = [options.get(name, False) for name in ("transpose_a", "transpose_b")]
        if not all(isinstance(f, bool) for f in flags):
            result.refuse_value(
                op, f"transpose_a or transpose_b is no boolean ({flags}): TensorFlow's reading of it is kept"
            )
            continue
        a, b = op.inputs
        if a is None or b is None:
            continue
        if not all(is_plain_float(t) for t in (a, b, op.outputs[0])):
            result.refuse_value(op, "not float32 throughout (or quantized)")
            continue
        matrix = next((t for t in (a, b) if len(t.signature) != 2 or min(t.signature) < 0), None)
        if matrix is not None:
            result.refuse_value(op, f"{matrix.name!r} is no matrix of static shape (FULLY_CONNECTED's operands)")
            continue
        transposed = (flags[0] and not a.is_const) or (not flags[1] and not b.is_const)  # a TRANSPOSE is made
        made = ["FULLY_CONNECTED", *(["TRANSPOSE"] if transposed else [])]
        unsupported = targets.first_refusal(graph, made)
        if unsupported:
            result.not_for_target(op, unsupported)
            continue
        result.fold(op, [op], into=[], resolved="MatMul", transpose_a=flags[0], transpose_b=flags[1])
        graph.remove_op(op)
        if flags[0]:
            a = transposed_matrix(graph, result, a, op)
        weights = b if flags[1] else transposed_matrix(graph, result, b, op)
        result.made(
            graph.add_op("FULLY_CONNECTED", [a, weights, None], op.outputs, fully_connected_options(), after=op)
        )
    return result
