"""Backward folding: a per-channel scale and shift *after* a layer goes into its weights and bias.

Every `fuse_batchnorm_with_<layer>` pass is this fold for the layer kinds whose ir/ops.py entry
names it (the entry also says where the kind keeps its weights and bias and which weight axis is
the output channel):

    before:  x -> LAYER(W, b) [-> layout ops] -> MUL(s) -> ADD(t, act) -> y
    after:   x -> LAYER(W', b', act) [-> layout ops] -> y

    W'[.., o, ..] = s[o]·W[.., o, ..]   (along the output-channel axis)
    b'[o]         = s[o]·b[o] + t[o]    (b = 0 when the layer has no bias: one is created)

A chain whose scale and shift are one value for every channel commutes with every reshape and
transpose, so it is found across layout ops that merge or split the channel axis too.

exact for any padding, stride or dilation, because s and t act per output channel after the
layer's sum; computed in float64 from the float32 originals and rounded once. The chain's fused
activation moves onto the layer, whose own activation must be NONE. Layout ops between the layer
and the chain (TICO's NCHW transposes, a flatten to FC, an atrous conv's BATCH_TO_SPACE_ND) stay;
layout.py follows the channel through them. An activation inside the chain ends it there: the
ops up to it fold, the rest is a chain of its own (affine.match_chain).

Refused with a reason: an activation on the layer; the layer output, a tensor
on the way or a chain intermediate read elsewhere or being a graph output; non-constant or
non-float32 weights, bias or constants; constants that vary along a non-channel axis; a channel
count that differs from the layer's; a non-finite result. A weight or bias tensor shared with
another op is copied (Graph.set_const_input), never edited.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..ir.const import Scaled
from ..ir.graph import Graph, Op, Tensor, float_source
from ..ir.ops import ACTIVATION_KINDS, AFFINE_KINDS, LAYERS, LAYOUT_KINDS, Layer
from . import targets
from .affine import AffineChain, as_float32, finite, freed_constants, match_chain, remove_chain, scale_along
from .candidates import candidate, chains, dtype_refusal
from .layout import follow
from .report import PassResult, Refusal, float16_note

# ---- the math -------------------------------------------------------------------------------


def fold_output_affine(
    weights: np.ndarray | Scaled, bias: np.ndarray | None, scale: np.ndarray, shift: np.ndarray, out_axis: int
) -> tuple[Scaled, np.ndarray]:
    """(W', b') for y = s·layer(x) + t: W scaled along `out_axis` (pending: affine.scale_along),
    b' = s·b + t, each rounded once to its own dtype (float32, or float16 weights stay float16; a
    created bias is float32)."""
    new_w = scale_along(weights, scale, out_axis)
    old_b = np.zeros(len(scale)) if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1)
    return new_w, as_float32(old_b * scale + shift, like=bias)


# ---- the IR: where it applies ---------------------------------------------------------------


def weights_refusal(layer: Op, spec: Layer) -> Refusal | None:
    """Why the layer's weights or bias are not float constants a fold may rewrite (float32, or
    float16 behind a DEQUANTIZE); None if they are."""
    w = layer.input(spec.weights)
    if float_source(w) is None:
        if w is not None and w.producer is not None and w.producer.kind == "DEQUANTIZE":
            stored = w.producer.input(0)
            kind = stored.dtype if stored is not None else "nothing"
            return Refusal(f"the weights are {kind} behind a DEQUANTIZE (integer-quantized)")
        if w is None or not w.is_const:
            return Refusal("the weights are not constant")
        return Refusal(f"the weights are {w.dtype}{' (quantized)' if w.is_quantized else ''}, not float32")
    b = layer.input(spec.bias)
    if b is not None and float_source(b) is None:
        return Refusal("the bias is not a float32 (or float16) constant")
    return None


def layer_refusal(layer: Op, spec: Layer) -> Refusal | None:
    """Why the layer's own weights, bias, activation or output rule out changing them (None if nothing)."""
    refusal = weights_refusal(layer, spec)
    if refusal:
        return refusal
    if layer.fused_activation != "NONE":
        return Refusal(f"the layer has a fused {layer.fused_activation}, which sits between it and the chain")
    out = layer.outputs[0]
    if out.dtype != "FLOAT32" or out.is_quantized:
        return Refusal(f"the layer's output is {out.dtype}, not float32")
    return None


def out_channels(layer: Op, spec: Layer) -> int:
    w = layer.input(spec.weights)
    assert w is not None  # asked of a layer weights_refusal passed
    return w.shape[spec.out_axis]


def fold_backward(
    graph: Graph,
    pass_name: str,
    *,
    finish: Callable[[Graph, Op], dict] | None = None,
    chain_kinds: frozenset[str] = AFFINE_KINDS,
) -> PassResult:
    """Fold every affine chain that follows a layer of a kind `pass_name` folds (ir/ops.py) into
    that layer; every refused candidate reported.

    `finish(graph, layer)`, if given, runs after each fold (e.g. to raise an op version) and returns
    details for the fold's report entry. `chain_kinds` restricts the chain to those ops (ONE's
    fuse_mul_with_* / fuse_add_with_* passes fold only a MUL, or only an ADD).
    """
    kinds = {kind: spec for kind, spec in LAYERS.items() if spec.backward_pass == pass_name}
    result = PassResult()
    in_chains: set[int] | None = None  # ops of chains holding a candidate, once a refusal asks (once a run)
    for layer in [op for op in graph.ops if op.kind in kinds]:
        spec = kinds[layer.kind]
        if not graph.contains(layer) or not layer.outputs:
            continue
        out = layer.outputs[0]
        chain = foldable_chain(graph, layer, chain_kinds)
        if chain is None:
            _report_unmatched(graph, result, out, chain_kinds)
            continue
        if isinstance(chain, Refusal):
            result.refuse(chain, layer, layer=out.name)
            at = chain.at
            if at is not None and candidate(at) is None:
                # an op in no chain with a candidate (an ADD of a [H, W] constant) has no skip
                # entry: the report's not_folded says why instead
                if in_chains is None:
                    in_chains = {id(op) for found in chains(graph) for op in found}
                if id(at) not in in_chains:
                    result.refuse_value(at, chain.reason)
            continue
        record = apply_backward(graph, result, layer, spec, chain)
        if record is not None and finish is not None:
            record.update(finish(graph, layer))
    return result


def foldable_chain(graph: Graph, layer: Op, chain_kinds: frozenset[str] = AFFINE_KINDS) -> AffineChain | Refusal | None:
    """The chain a backward fold takes after `layer`, a Refusal (at the chain) saying why it
    cannot, or None when no chain follows the layer."""
    chain = chain_after(graph, layer, chain_kinds)
    if chain is None or isinstance(chain, Refusal):
        return chain
    spec = LAYERS[layer.kind]
    refusal = layer_refusal(layer, spec) or _output_refusal(graph, layer, chain)
    if refusal is None and out_channels(layer, spec) != len(chain.scale):
        refusal = Refusal(f"the chain has {len(chain.scale)} channels, the layer {out_channels(layer, spec)}")
    return Refusal(refusal.reason, chain.ops[0]) if refusal else chain


def chain_after(graph: Graph, layer: Op, chain_kinds: frozenset[str] = AFFINE_KINDS) -> AffineChain | Refusal | None:
    """The chain after the layer's output, directly or through layout ops (see layout.py).

    The layer's channel is the last axis of its output; layout ops carry it to the axis the chain
    must be per-channel on. A layout op the channel cannot be followed through is a Refusal when a
    chain follows it (else there is nothing to say).
    """
    out = layer.outputs[0]
    path = follow(graph, out, len(out.shape) - 1)
    if isinstance(path, Refusal):
        uniform = _uniform_chain_after(graph, out, chain_kinds)
        if uniform is not None:
            return uniform
        readers = [u for u in graph.consumers(path.at.outputs[0]) if u.kind in chain_kinds] if path.at else []
        return Refusal(path.reason, readers[0]) if readers else None  # about the chain, not the layout op
    assert path.axis is not None  # followed from the output's channel axis
    chain = match_chain(graph, path.tensor, path.axis, kinds=chain_kinds)
    if isinstance(chain, Refusal) and path.ops:
        chain.reason += f" (after {path.describe()} the layer's channel is on axis {path.axis})"
    return chain


def _uniform_chain_after(graph: Graph, out: Tensor, chain_kinds: frozenset[str]) -> AffineChain | None:
    """A chain with one scale and one shift for every channel commutes with any reshape or
    transpose (ONE's Conv -> Reshape -> Mul/Add scalar), so it is found across layout ops that
    merge or split the channel axis; None if there is no such chain."""
    path = follow(graph, out, None)
    if isinstance(path, Refusal) or not path.ops or not path.tensor.shape or not out.shape:
        return None
    chain = match_chain(graph, path.tensor, len(path.tensor.shape) - 1, kinds=chain_kinds)
    if not isinstance(chain, AffineChain) or np.ptp(chain.scale) != 0 or np.ptp(chain.shift) != 0:
        return None
    channels = out.shape[-1]
    chain.scale, chain.shift = np.full(channels, chain.scale[0]), np.full(channels, chain.shift[0])
    return chain


def _report_unmatched(graph: Graph, result: PassResult, out: Tensor, chain_kinds: frozenset[str]) -> None:
    """Say why an elementwise op after the layer (directly or after layout ops) is not a chain
    the matcher follows: a tensor on the way has other readers or is a graph output, or the op's
    other operand is not a constant."""
    way = [out]
    while not any(op.kind in chain_kinds for op in graph.consumers(way[-1])):
        layout = [op for op in graph.consumers(way[-1]) if op.kind in LAYOUT_KINDS and op.input(0) is way[-1]]
        # a path of distinct tensors is never longer than the tensor list (graph.ops would re-sort
        # the whole graph after every fold)
        if len(layout) != 1 or len(way) > len(graph.tensors):
            return
        way.append(layout[0].outputs[0])
    # the reader the skip is about: a batch-norm candidate if there is one (a conv's output read by
    # a swish MUL and a scalar ADD: the ADD)
    affine = min(
        (op for op in graph.consumers(way[-1]) if op.kind in chain_kinds), key=lambda op: candidate(op) is None
    )
    for t in way:
        if graph.is_observed(t) or len(graph.consumers(t)) > 1:
            what = "is a graph output (or named by a signature)" if graph.is_observed(t) else "has other readers"
            result.skip(
                affine, f"{t.name!r} on the way to the chain {what}, which must keep the unscaled value", layer=out.name
            )
            return
    problem = (c := candidate(affine)) and dtype_refusal(c)
    if problem:  # e.g. int8 weights behind a DEQUANTIZE (hybrid), a quantized chain
        result.skip(affine, problem, layer=out.name)
        return
    # a per-channel-sized operand computed at runtime (not a full feature map, like a residual)
    others = [t for t in affine.inputs if t is not None and t is not way[-1]]
    if len(others) == 1 and not others[0].is_const and math.prod(others[0].shape) < math.prod(way[-1].shape):
        result.skip(affine, f"operand {others[0].name!r} is not a constant", layer=out.name)


def _output_refusal(graph: Graph, layer: Op, chain: AffineChain) -> Refusal | None:
    out = layer.outputs[0]
    if graph.is_observed(out):
        return Refusal("the layer's output is a graph output (or named by a signature), and must keep its value")
    if len(graph.consumers(out)) != 1:
        return Refusal("the layer's output has other readers, which must keep the unscaled value")
    if graph.is_observed(chain.input):
        return Refusal(
            f"{chain.input.name!r} between the layer and the chain is a graph output, and must keep its value"
        )
    return None


# ---- the IR: the rewrite ----------------------------------------------------------------------


def apply_backward(graph: Graph, result: PassResult, layer: Op, spec: Layer, chain: AffineChain) -> dict | None:
    """Rewrite one matched fold; its report entry, or None (and a skip) when the result is unusable."""
    w, b = float_source(layer.input(spec.weights)), float_source(layer.input(spec.bias))
    weights = w.pending_data if w is not None else None
    assert weights is not None  # weights_refusal passed: float constant weights
    new_w, new_b = fold_output_affine(weights, None if b is None else b.data, chain.scale, chain.shift, spec.out_axis)
    if not finite(new_w, new_b):
        result.skip(chain.ops[0], "the folded weights or bias would not be finite", layer=layer.outputs[0].name)
        return None
    unsupported = chain.activation != layer.fused_activation and _activation_refusal(
        graph, layer, spec, chain.activation
    )
    if unsupported:  # the layer, or an op after it, would take the chain's activation
        result.not_for_target(chain.ops[0], unsupported)
        return None
    if not layer.has_fused_activation_slot:  # no options table (LiteRT runs it with defaults)
        result.skip(
            chain.ops[0], "the layer has no options table to carry the chain's activation", layer=layer.outputs[0].name
        )
        return None
    record = result.fold(
        layer,
        chain.ops,
        scale=chain.scale,
        shift=chain.shift,
        activation=chain.activation,
        output=chain.output.name,
        **_buffer_changes(graph, layer, spec, freed_constants(graph, chain)),
    )
    written = [
        f"{chain.output.name}/{what}"
        for index, values, what in ((spec.weights, new_w, "weights"), (spec.bias, new_b, "bias"))
        if graph.set_const_input(layer, index, values, f"{chain.output.name}/{what}")
    ]
    record.update(float16_note(written))
    layer.fused_activation = chain.activation
    remove_chain(graph, chain)
    return record


def splits_activation(graph: Graph, spec: Layer, activation: str) -> bool:
    """Whether a fold that gives the layer `activation` writes it as an op of its own after the layer:
    in Circle, whose runtimes run this layer kind without one (ir/ops.py: standalone_activation_in_circle;
    the pass's `finish` makes the op)."""
    circle = targets.writes_circle(graph)
    return circle and spec.standalone_activation_in_circle and activation in ACTIVATION_KINDS


def _activation_refusal(graph: Graph, layer: Op, spec: Layer, activation: str) -> str | None:
    """Why the target cannot run the chain's activation where the fold puts it: fused on the layer,
    or as a standalone op after it (`splits_activation`)."""
    if splits_activation(graph, spec, activation):
        return targets.refusal(graph, activation)
    return targets.refusal(graph, layer.kind, activation)


def _buffer_changes(graph: Graph, layer: Op, spec: Layer, freed: list[str]) -> dict:
    """Which constants the fold replaces or frees, before it happens (for the report)."""
    created, replaced = [], []
    for index, what in ((spec.weights, "weights"), (spec.bias, "bias")):
        t = layer.input(index)
        if t is None:
            created.append(f"new {what}")
        elif graph.has_single_use(t, layer):
            replaced.append(t.name)
        else:
            created.append(f"copy of {t.name} (shared, left untouched)")
    return {"buffers_created": created, "buffers_replaced": replaced, "buffers_freed": freed}
