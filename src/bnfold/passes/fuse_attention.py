"""fuse_attention: the attention of a decoder or encoder layer, softmax(Q·Kᵀ·s + mask)·V written out,
found and refused with the reason (not ONE's option: ONE has no such pass; bnfold's name, refused as
fuse_bcq is). It makes nothing, and changes nothing.

    scores = BATCH_MATMUL(Q, Kᵀ)   then any of MUL / DIV by the scale, ADD of a mask, RESHAPE
    probs  = SOFTMAX(scores)                               (then any RESHAPE)
    out    = BATCH_MATMUL(probs, V)                        (probs read by this op alone)

Why no rewrite can be written: Circle's ATTENTION (code -9) is the whole attention of a decoder layer
as onert's newer source defines it (ONE #16227): its inputs are the layer's input, the q / k / v / o
weights, the RoPE tables, the mask, the key and value caches and the position. The written-out core
above is a part of that, and the exports bnfold sees (TICO's and litert-torch's, use_cache off) carry
no cache. And no runtime bnfold targets runs it: the runtime table probes ATTENTION
(schemas/derive_runtimes.py), and onert 0.1.0 fails to load it ("Unsupported operation"); LiteRT
and TFLite have no ATTENTION. Each candidate is reported: the target's refusal where the target
cannot run ATTENTION (the report's `target.refused`), else why bnfold writes none (`not_folded`).
"""

from __future__ import annotations

from ..engine import targets
from ..engine.match import format_lacks, only_reader
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Tensor

# what may stand between the scores' BATCH_MATMUL and the SOFTMAX: the scale, the mask, a reshape
BETWEEN = ("MUL", "DIV", "ADD", "RESHAPE")
NO_WRITER = (
    "the attention stays: bnfold writes no ATTENTION (Circle's takes the whole layer: the q / k / v / o "
    "weights, RoPE tables, mask, key and value caches and position)"
)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for softmax in [op for op in graph.ops if op.kind == "SOFTMAX"]:
        out = _product_of(graph, softmax.outputs[0], depth=2)
        if out is None or not _from_scores(softmax.input(0), depth=4):
            continue
        lacks = format_lacks(graph, "ATTENTION")
        if lacks:
            result.refuse_value(out, f"the attention stays: {lacks}")
            continue
        unsupported = targets.refusal(graph, "ATTENTION")
        if unsupported:
            result.not_for_target(out, f"the attention stays: {unsupported}")
        else:
            result.refuse_value(out, NO_WRITER)
    return result


def _product_of(graph: Graph, probs: Tensor, depth: int) -> Op | None:
    """The BATCH_MATMUL that alone reads `probs` as its left operand, directly or through up to
    `depth` RESHAPEs (TICO's and litert-torch's attention merges heads into the batch axis)."""
    reader = only_reader(graph, probs)
    if reader is not None and reader.kind == "RESHAPE" and depth > 0:
        return _product_of(graph, reader.outputs[0], depth - 1)
    return reader if reader is not None and reader.kind == "BATCH_MATMUL" and reader.input(0) is probs else None


def _from_scores(t: Tensor | None, depth: int) -> bool:
    """Whether `t` is a BATCH_MATMUL's output, directly or through up to `depth` scale, mask and
    reshape ops."""
    op: Op | None = None if t is None else t.producer
    if op is None:
        return False
    if op.kind == "BATCH_MATMUL":
        return True
    if op.kind not in BETWEEN or depth == 0:
        return False
    return any(_from_scores(x, depth - 1) for x in op.inputs if x is not None and not x.is_const)
