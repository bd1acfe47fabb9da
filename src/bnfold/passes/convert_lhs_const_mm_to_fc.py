"""convert_lhs_const_mm_to_fc: for the onert target, a BATCH_MATMUL whose left operand is a constant
matrix becomes a FULLY_CONNECTED reading that constant as its input (TICO's option of that name,
CompileConfigV1: onert refuses a BATCH_MATMUL with a constant left operand, ONE #16064, TICO #339).

    before:  C (const [M, K]), x [K, N] -> BATCH_MATMUL(adj_x, adj_y) -> y [M, N]
    after:   C (or Cᵀ, const) -> FULLY_CONNECTED(input, weights = [TRANSPOSE ->] xᵀ [N, K]) -> y

Exact: with A = C (Cᵀ under adj_x) and B = x (xᵀ under adj_y), BATCH_MATMUL computes A·B, and
FULLY_CONNECTED(input A, weights W) computes A·Wᵀ row by row: W = Bᵀ gives A·B, the same sums
of the same products (the kernels' order of summation may differ: float rounding). Bᵀ is x itself
under adj_y, else one TRANSPOSE(1, 0) of x; Cᵀ under adj_x is a new constant (C's buffer is not
touched). A TRANSPOSE of x's own producer then cancels with the one made (the layout passes).

Where: only for the onert target (the runtime table: onert does not run BATCH_MATMUL with a
constant input 0; LiteRT does, and keeps it). Guards: both operands of rank 2 with static shapes,
float32 and unquantized; the target runs FULLY_CONNECTED and (when made) TRANSPOSE.
"""

from __future__ import annotations

from ..engine import targets
from ..engine.match import fully_connected_options, is_plain_float, transposed_matrix
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor

KINDS = frozenset({"BATCH_MATMUL"})


def run(graph: Graph) -> PassResult:
    result = PassResult()
    if targets.name_of(graph) != "onert":
        return result
    for op in [op for op in graph.ops if op.kind in KINDS]:
        c, x, y = op.input(0), op.input(1), op.outputs[0]
        if c is None or x is None or not c.is_const or x.is_const:
            continue  # no candidate: a constant left operand is what onert refuses
        reason = _why_not(graph, op, c, x, y)
        if reason is not None:
            result.refuse_value(op, reason)
            continue
        adj_x, adj_y = _adjoints(op)
        result.fold(op, [op], into=[], adj_x=adj_x, adj_y=adj_y)
        graph.remove_op(op)
        lhs = transposed_matrix(graph, result, c, op) if adj_x else c
        weights = x if adj_y else transposed_matrix(graph, result, x, op)
        result.made(graph.add_op("FULLY_CONNECTED", [lhs, weights, None], [y], fully_connected_options(), after=op))
    return result


def _adjoints(op: Op) -> tuple[bool, bool]:
    """BATCH_MATMUL's flags, by either format's names (TFLite adj_x / adj_y, Circle adjoint_lhs / adjoint_rhs)."""
    options = op.options
    adj_x = getattr(options, "adjX", None) or getattr(options, "adjointLhs", None)
    adj_y = getattr(options, "adjY", None) or getattr(options, "adjointRhs", None)
    return bool(adj_x), bool(adj_y)


def _why_not(graph: Graph, op: Op, c: Tensor, x: Tensor, y: Tensor) -> str | None:
    if len(c.shape) != 2 or len(x.signature) != 2 or min(x.signature) < 0:
        return "the operands are not two matrices of static shapes (FULLY_CONNECTED takes no batch axes)"
    if not all(is_plain_float(t) for t in (c, x, y)):
        return "not float32, or quantized"
    made = ["FULLY_CONNECTED", *([] if _adjoints(op)[1] else ["TRANSPOSE"])]
    return targets.first_refusal(graph, made)
