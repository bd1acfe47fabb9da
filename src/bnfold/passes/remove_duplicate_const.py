"""remove_duplicate_const: constants that hold the same bytes, type, shape and quantization become
one; their readers all read the first (ONE's pass of that name: exporters repeat shape vectors,
zero biases and shared weights, and each copy is a buffer in the file).

    before:  c1 = [1, 2, 3] -> op1,  c2 = [1, 2, 3] -> op2
    after:   c1 -> op1, op2          (c2 and its buffer go)

Exact: every reader reads the very same values. bnfold compares the bytes, which is stricter than
ONE's element comparison: 0.0 and -0.0 (which 1/x tells apart) are not merged, and NaNs with
equal bits are. Guards: a constant the outside sees (graph output, signature) is neither merged
away nor kept for others; a sparse or variable one is left alone; quantization must be equal
(scales, zero points, axis). Linear: each constant is hashed once.
"""

from __future__ import annotations

import hashlib

from ..engine.report import PassResult
from ..ir.graph import Graph, Tensor


def run(graph: Graph) -> PassResult:
    result = PassResult()
    first: dict[tuple, Tensor] = {}
    for t in list(graph.tensors):
        if not t.is_const or not t._uses or graph.is_observed(t) or _special(t):
            continue
        data = t.const_data
        key = (t.dtype, t.shape, t.signature, _quantization(t), hashlib.blake2b(data.tobytes()).digest())
        kept = first.setdefault(key, t)
        if kept is t or kept.const_data.tobytes() != data.tobytes():
            continue
        readers = graph.consumers(t)
        result.fold(readers[0], [], into=readers, constant=kept.name, duplicate=t.name)
        graph.replace_uses(t, kept)
    return result


def _special(t: Tensor) -> bool:
    """Sparse or variable: its bytes are not all a reader reads (or may change)."""
    return getattr(t.record, "sparsity", None) is not None or bool(getattr(t.record, "isVariable", False))


def _quantization(t: Tensor) -> str | None:
    """What a reader reads of a tensor's quantization, comparable (None: none)."""
    q = t.quantization
    if q is None:
        return None
    fields = [getattr(q, f, None) for f in ("scale", "zeroPoint", "quantizedDimension", "min", "max")]
    return repr([None if v is None else v if isinstance(v, int) else list(v) for v in fields])
