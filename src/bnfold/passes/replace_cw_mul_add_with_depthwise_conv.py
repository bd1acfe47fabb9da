"""replace_cw_mul_add_with_depthwise_conv: a channel-wise batch norm that no layer can absorb
becomes one 1x1 DEPTHWISE_CONV_2D (ONE's flag).

    before:  x -> MUL(s) -> ADD(t, act) -> y          x: [N, H, W, C], any producer
    after:   x -> DEPTHWISE_CONV_2D(W, b, 1x1, stride 1, multiplier 1, act) -> y

    W[0, 0, 0, c] = s[c],   b[c] = t[c]

which is the backward fold (backward.py) applied to an identity depthwise conv (W = 1, b = 0):
W' = s·1, b' = s·0 + t. Any affine chain of two or more ops counts (MUL/ADD/SUB/DIV, affine.py),
so ONE's Mul -> Add is one case; a single op is left alone (replacing it gains nothing).

Refused with a reason: a chain a backward fold takes instead (it directly follows a conv-like
layer, also through layout ops, that can absorb it: fuse_batchnorm_with_* removes it outright);
data that is not 4-D (DEPTHWISE_CONV_2D's kernels need NHWC); an activation a depthwise conv
cannot carry; a non-finite scale or shift. Non-constant, non-float32 or non-channel-wise operands
are not matched as chains at all (affine.py).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.affine import AffineChain, chains_from_starts, finite
from ..engine.backward import fold_output_affine, foldable_chain
from ..engine.match import pointwise_depthwise_options
from ..engine.report import PassResult, Refusal
from ..ir.graph import Graph, Op
from ..ir.ops import LAYERS, LAYOUT_KINDS, RANGE_ACTIVATIONS

MIN_CHAIN = 2  # ops; one op replaced by one op gains nothing


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for chain in chains_from_starts(graph):
        if isinstance(chain, Refusal) or len(chain.ops) < MIN_CHAIN:
            continue  # not a channel-wise chain of two or more ops: not this pass' business
        refusal = _refusal(graph, chain)
        if refusal is not None:
            result.refuse(refusal, chain.ops[0], output=chain.output.name)
            continue
        _replace(graph, result, chain)
    return result


def _refusal(graph: Graph, chain: AffineChain) -> Refusal | None:
    if len(chain.input.shape) != 4:
        return Refusal(f"the data is {len(chain.input.shape)}-D; DEPTHWISE_CONV_2D needs 4-D NHWC", chain.ops[0])
    if chain.axis != 3:
        return Refusal(f"the constants vary along axis {chain.axis}, not the channels (axis 3)", chain.ops[0])
    if chain.activation not in ("NONE", *RANGE_ACTIVATIONS):
        return Refusal(f"a depthwise conv cannot carry the chain's {chain.activation}", chain.ops[-1])
    unsupported = targets.refusal(graph, "DEPTHWISE_CONV_2D", chain.activation)
    if unsupported:
        return Refusal(unsupported, chain.ops[0])
    layer = _layer_before(graph, chain.input)
    if layer is not None:
        taken = foldable_chain(graph, layer)
        if not isinstance(taken, Refusal) and taken is not None and taken.ops[0] is chain.ops[0]:
            return Refusal(
                f"it folds into the {layer.kind} before it (a fuse_batchnorm_with_* pass removes it)", chain.ops[0]
            )
    return None


def _layer_before(graph: Graph, x) -> Op | None:
    """The conv-like layer whose output reaches `x` directly or through single-reader layout ops."""
    producer = x.producer
    while producer is not None and producer.kind in LAYOUT_KINDS and producer.inputs:
        source = producer.input(0)
        if source is None or len(graph.consumers(source)) != 1:
            return None
        producer = source.producer
    return producer if producer is not None and producer.kind in LAYERS else None


def _replace(graph: Graph, result: PassResult, chain: AffineChain) -> None:
    channels = len(chain.scale)
    identity = np.ones((1, 1, 1, channels), dtype=np.float32)
    weights, bias = fold_output_affine(identity, None, chain.scale, chain.shift, out_axis=3)
    if not finite(weights, bias):
        result.skip(chain.ops[0], "the scale or shift is not finite", output=chain.output.name)
        return
    name = chain.output.name
    options = pointwise_depthwise_options(chain.activation)
    last = chain.ops[-1]
    conv = graph.add_op(
        "DEPTHWISE_CONV_2D",
        [chain.input, graph.add_const(f"{name}/dw_weights", weights), graph.add_const(f"{name}/dw_bias", bias)],
        [chain.output],
        options,
        after=last,
    )
    result.fold(conv, chain.ops, scale=chain.scale, shift=chain.shift, activation=chain.activation, output=name)
    for op in chain.ops:
        graph.remove_op(op)
