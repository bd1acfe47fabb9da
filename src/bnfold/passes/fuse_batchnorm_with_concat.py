"""fuse_batchnorm_with_concat: a batch norm after a CONCATENATION of conv-like layers goes, slice by
slice, into the layers that made each part (NASNet/Inception cells, DenseNet, TICO's NCHW concats).

    before:  A -> a ─┐
                     CONCATENATION(axis = channels) -> MUL(s) -> ADD(t, act) -> y
             B -> b ─┘
    after:   A(W_A', b_A', act) -> a' ─┐
                                       CONCATENATION -> y
             B(W_B', b_B', act) -> b' ─┘

Per channel the batch norm sees exactly one part, so with the parts' channel ranges [o_k, o_k + C_k)
along the concatenation axis, each layer k takes its slice (backward.py's fold):

    W_k'[.., c, ..] = s[o_k + c]·W_k[.., c, ..]     b_k'[c] = s[o_k + c]·b_k[c] + t[o_k + c]

and act(concat(a, b)) = concat(act(a), act(b)) for any elementwise activation, so the chain's
activation moves into every layer. Parts may reach the concatenation through layout ops (TICO's
NCHW transposes: the channel is followed back to each layer's channel axis) and be any mix of
the layer kinds ir/ops.py knows.

Refused with a reason (the whole fold, never part of it): a part not made by a foldable layer
(or made by one whose weights, bias or activation rule it out, or whose output has other readers);
the same layer feeding two parts; a concatenation along another axis than the batch norm's
channel; a fused activation on the concatenation; its output read elsewhere or a graph output.
A weight or bias tensor shared with another op is copied (Graph.set_const_input), never edited.
"""

from __future__ import annotations

from ..engine import targets
from ..engine.affine import AffineChain, finite, freed_constants, match_chain, remove_chain
from ..engine.backward import fold_output_affine, layer_refusal
from ..engine.layout import concatenation_axis, follow, layout_source
from ..engine.report import PassResult, Refusal, float16_note
from ..ir.graph import Graph, Op, Tensor, float_source
from ..ir.ops import LAYERS, Layer, info


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for concat in [op for op in graph.ops if op.kind == "CONCATENATION"]:
        if not graph.contains(concat) or not concat.outputs:
            continue
        chain = _chain_after(graph, concat)
        if chain is None:
            continue
        if isinstance(chain, Refusal):
            result.refuse(chain, concat)
            continue
        parts = _parts(graph, concat, chain)
        if isinstance(parts, Refusal):
            result.skip(chain.ops[0], parts, concatenation=concat.outputs[0].name)
            continue
        _fold(graph, result, concat, chain, parts)
    return result


def _chain_after(graph: Graph, concat: Op) -> AffineChain | Refusal | None:
    """The chain per channel on the concatenation axis after its output (through layout ops)."""
    out = concat.outputs[0]
    path = follow(graph, out, concatenation_axis(concat))
    if isinstance(path, Refusal) or path.axis is None:  # (follow keeps the axis it was given)
        return None
    return match_chain(graph, path.tensor, path.axis)


def _parts(graph: Graph, concat: Op, chain: AffineChain) -> list[tuple[Op, Layer, slice]] | Refusal:
    """(layer, its facts, its channel range) for every input of the concatenation, or why not."""
    out = concat.outputs[0]
    if concat.has_fused_activation_slot and concat.fused_activation != "NONE":
        return Refusal(f"the concatenation has a fused {concat.fused_activation}")
    if graph.is_observed(out) or len(graph.consumers(out)) != 1:
        return Refusal("the concatenation's output is read elsewhere or is a graph output, and must keep its value")
    axis = concatenation_axis(concat)
    parts, offset, seen = [], 0, set()
    for x in concat.inputs:
        if x is None:
            return Refusal("the concatenation lacks an input")
        part = _part(graph, concat, x, axis, chain.activation)
        if isinstance(part, Refusal):
            return part.prefixed(f"part {x.name!r}: ")
        layer, spec = part
        if id(layer) in seen:
            return Refusal(f"{layer.kind} {layer.outputs[0].name!r} feeds two parts of the concatenation")
        seen.add(id(layer))
        parts.append((layer, spec, slice(offset, offset + x.shape[axis])))
        offset += x.shape[axis]
    if offset != len(chain.scale):
        return Refusal(f"the parts have {offset} channels, the batch norm {len(chain.scale)}")
    return parts


def _part(graph: Graph, concat: Op, x: Tensor, axis: int, activation: str) -> tuple[Op, Layer] | Refusal:
    if not graph.has_single_use(x, concat):
        return Refusal("it has other readers or is a graph output, and must keep the unscaled value")
    origin, origin_axis, via = layout_source(graph, x, axis)
    layer = origin.producer
    if layer is None or layer.kind not in LAYERS:
        return Refusal(f"made by {'a graph input' if layer is None else layer.kind}, not a conv-like layer")
    spec = LAYERS[layer.kind]
    if not info(layer.kind).fused_output:
        return Refusal(
            f"{layer.kind} is run without a fused activation by some runtimes, so it cannot take the batch norm's"
        )
    if origin_axis != len(origin.shape) - 1:
        return Refusal(f"the concatenation axis is axis {origin_axis} of {layer.kind}'s output, not its channels")
    if not graph.has_single_use(origin, via or concat):
        return Refusal(f"{layer.kind} {origin.name!r} has other readers, which must keep the unscaled value")
    refusal = layer_refusal(layer, spec)
    if refusal:
        return refusal
    if not layer.has_fused_activation_slot:
        return Refusal(f"{layer.kind} has no options table to carry the activation")
    unsupported = activation != layer.fused_activation and targets.refusal(graph, layer.kind, activation)
    if unsupported:
        return Refusal(unsupported)
    return layer, spec


def _fold(
    graph: Graph, result: PassResult, concat: Op, chain: AffineChain, parts: list[tuple[Op, Layer, slice]]
) -> None:
    updates = []
    for layer, spec, channels in parts:
        w, b = float_source(layer.input(spec.weights)), float_source(layer.input(spec.bias))
        weights = w.pending_data if w is not None else None
        assert weights is not None  # _part: layer_refusal passed (float constant weights)
        new_w, new_b = fold_output_affine(
            weights, None if b is None else b.data, chain.scale[channels], chain.shift[channels], spec.out_axis
        )
        if not finite(new_w, new_b):
            result.skip(chain.ops[0], f"the folded weights or bias of {layer.outputs[0].name!r} would not be finite")
            return
        updates.append((layer, spec, new_w, new_b))
    record = result.fold(
        concat,
        chain.ops,
        into=[concat, *(layer for layer, *_ in parts)],
        scale=chain.scale,
        shift=chain.shift,
        activation=chain.activation,
        output=chain.output.name,
        layers=[layer.outputs[0].name for layer, *_ in parts],
        buffers_freed=freed_constants(graph, chain),
    )
    written = []
    for layer, spec, new_w, new_b in updates:
        name = layer.outputs[0].name
        for index, values, what in ((spec.weights, new_w, "weights"), (spec.bias, new_b, "bias")):
            if graph.set_const_input(layer, index, values, f"{name}/{what}"):
                written.append(f"{name}/{what}")
        layer.fused_activation = chain.activation
    record.update(float16_note(written))
    remove_chain(graph, chain)
