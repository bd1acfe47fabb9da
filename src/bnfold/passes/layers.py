"""Conv-like layers: where their weights and bias are, which weight axis is the output channel,
and the backward fold (a chain after the layer absorbed into its weights and bias).

    kind               weights  layout         out axis  in axis  bias
    CONV_2D            1        O H W I        0         3        2
    DEPTHWISE_CONV_2D  1        1 H W (I·M)    3         -        2
    TRANSPOSE_CONV     1        O H W I        0         3        3 (optional 4th input)
    FULLY_CONNECTED    1        O I            0         1        2
    CONV_3D            1        D H W I O      4         3        2

Backward fold of y = act(s·layer(x) + t), exact for any padding, stride or dilation because the
scale and shift act per output channel after the layer's sum:

    W'[.., o, ..] = s[o]·W[.., o, ..]   (along the out axis)
    b'[o]         = s[o]·b[o] + t[o]    (b = 0 when the layer has no bias)
    act(layer) = act  (the layer's own activation must be NONE)

Computed in float64 from the float32 originals and cast back once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.graph import PADDINGS, Graph, Op, Tensor
from .affine import (AFFINE_KINDS, AffineChain, Refusal, as_float32, finite, freed_constants, match_chain, remove_chain,
                     scale_along)
from .manager import PassLog
from .layout import LAYOUT_KINDS, LayoutBlock
from .layout import follow as follow_layout


@dataclass(frozen=True)
class LayerSpec:
    kind: str
    weights: int
    out_axis: int
    bias: int
    in_axis: int | None = None


CONV_2D = LayerSpec("CONV_2D", 1, 0, 2, in_axis=3)
DEPTHWISE_CONV_2D = LayerSpec("DEPTHWISE_CONV_2D", 1, 3, 2)
TRANSPOSE_CONV = LayerSpec("TRANSPOSE_CONV", 1, 0, 3, in_axis=3)
FULLY_CONNECTED = LayerSpec("FULLY_CONNECTED", 1, 0, 2, in_axis=1)
CONV_3D = LayerSpec("CONV_3D", 1, 4, 2, in_axis=3)
SPECS = {s.kind: s for s in (CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED, CONV_3D)}


def float_const(t: Tensor | None) -> bool:
    return t is not None and t.is_const and t.dtype == "FLOAT32" and not t.is_quantized


def layer_refusal(graph: Graph, layer: Op, spec: LayerSpec) -> str | None:
    """Why the layer's own weights, bias or activation rule out a fold (None if they don't)."""
    w = layer.input(spec.weights)
    if w is None or not w.is_const:
        return "the weights are not constant"
    if w.dtype != "FLOAT32" or w.is_quantized:
        return f"the weights are {w.dtype}{' (quantized)' if w.is_quantized else ''}, not float32"
    b = layer.input(spec.bias)
    if b is not None and not float_const(b):
        return "the bias is not a float32 constant"
    if layer.fused_activation != "NONE":
        return f"the layer has a fused {layer.fused_activation}, which sits between it and the chain"
    out = layer.outputs[0]
    if out.dtype != "FLOAT32" or out.is_quantized:
        return f"the layer's output is {out.dtype}, not float32"
    return None


def input_channel_vector(layer: Op, spec: LayerSpec, per_channel: np.ndarray) -> tuple[np.ndarray, int]:
    """A per-input-channel vector laid along the weights' input axis: (vector, axis).

    DEPTHWISE_CONV_2D: input channel i feeds outputs i·M .. i·M+M−1, so each entry repeats M
    times on axis 3. Otherwise the vector is tiled to the axis' length, which is the NHWC flatten
    order when a FULLY_CONNECTED reads a flattened feature map (a factor of 1 everywhere else).
    """
    w = layer.input(spec.weights)
    if layer.kind == "DEPTHWISE_CONV_2D":
        return np.repeat(per_channel, w.shape[3] // len(per_channel)), 3
    return np.tile(per_channel, w.shape[spec.in_axis] // len(per_channel)), spec.in_axis


def constant_input_response(layer: Op, spec: LayerSpec, per_channel: np.ndarray) -> np.ndarray:
    """What a constant per-channel input adds to each output channel (float64): Σ W·c over the
    kernel taps and input channels. Exact only where no padding reaches the layer's input."""
    w = np.asarray(layer.input(spec.weights).data, dtype=np.float64)
    v, axis = input_channel_vector(layer, spec, per_channel)
    shape = [1] * w.ndim
    shape[axis] = len(v)
    return (w * v.reshape(shape)).sum(axis=tuple(i for i in range(w.ndim) if i != spec.out_axis))


def padding_refusal(layer: Op, x: Tensor) -> str | None:
    """None when no implicit zero padding reaches `layer`'s input `x`, else why it does.

    VALID padding and FULLY_CONNECTED never pad; SAME pads only when the kernel's reach
    (out−1)·stride + (k−1)·dilation + 1 exceeds the input size (so 1×1 kernels never do).
    """
    if layer.kind == "FULLY_CONNECTED":
        return None
    options = layer.options
    if getattr(options, "padding", None) == PADDINGS.index("VALID"):
        return None
    w = layer.input(1)
    out = layer.outputs[0]
    sig_in, sig_out = x.shape_signature or x.shape, out.shape_signature or out.shape
    if len(x.shape) != 4 or len(out.shape) != 4 or len(sig_in) != 4 or len(sig_out) != 4 or len(w.shape) != 4:
        return f"{layer.kind} is not a 4-D NHWC layer with a 4-D filter"
    if min(sig_in[1:3]) < 0 or min(sig_out[1:3]) < 0:
        return f"{layer.kind} has SAME padding and a dynamic spatial size"
    strides = (getattr(options, "strideH", 1) or 1, getattr(options, "strideW", 1) or 1)
    dilations = (getattr(options, "dilationHFactor", 1) or 1, getattr(options, "dilationWFactor", 1) or 1)
    for d in range(2):
        size, out_size, k = x.shape[1 + d], out.shape[1 + d], w.shape[1 + d]
        if (out_size - 1) * strides[d] + (k - 1) * dilations[d] + 1 > size:
            return f"{layer.kind} {out.name!r} has SAME padding that pads its {w.shape[1]}x{w.shape[2]} kernel's input"
    return None


def out_channels(layer: Op, spec: LayerSpec) -> int:
    return layer.input(spec.weights).shape[spec.out_axis]


def set_const_input(graph: Graph, op: Op, index: int, values: np.ndarray, name: str) -> None:
    """Give `op` new constant data at input `index` without touching what anyone else sees.

    A missing (optional) input gets a new tensor. An existing one keeps its shape when `values`
    has as many elements, and is updated only if `op` is its sole reader and nothing outside
    names it; otherwise a new tensor is made. Either way the data goes into a new buffer, so a
    buffer shared with any other tensor is never modified.
    """
    old = op.input(index)
    if old is not None and values.size == int(np.prod(old.shape)):
        values = values.reshape(old.shape)
    if old is not None and graph.has_single_use(old, op) and old.dtype == "FLOAT32":
        old.data = values
        return
    graph.set_input(op, index, graph.add_const(name, values))


def fold_backward(graph: Graph, log: PassLog, spec: LayerSpec, *, after=None) -> bool:
    """Fold every affine chain that follows a `spec.kind` layer into it; record every skip.

    `after(graph, log, layer)`, if given, runs after each fold (e.g. to fix up an op version).
    """
    changed = False
    for layer in [op for op in graph.ops if op.kind == spec.kind]:
        if layer not in graph.ops or not layer.outputs:
            continue
        out = layer.outputs[0]
        chain = find_chain_after(graph, log, layer)
        if chain is None:
            _skip_unmatched(graph, log, out)
            continue
        if isinstance(chain, Refusal):
            log.skip(chain.anchor, chain.reason, layer=out.name)
            continue
        reason = layer_refusal(graph, layer, spec) or _output_refusal(graph, layer, chain)
        if reason is None and out_channels(layer, spec) != len(chain.scale):
            reason = f"the chain has {len(chain.scale)} channels, the layer {out_channels(layer, spec)}"
        if reason:
            log.skip(chain.ops[0], reason, layer=out.name)
            continue
        if apply_backward(graph, log, layer, spec, chain):
            changed = True
            if after is not None:
                after(graph, log, layer)
    return changed


def _skip_unmatched(graph: Graph, log: PassLog, out: Tensor) -> None:
    """Say why an elementwise op after the layer (directly or after layout ops) is not a chain
    the matcher follows: a tensor on the way has other readers or is a graph output, or the op's
    other operand is not a constant."""
    way = [out]
    while not any(op.kind in AFFINE_KINDS for op in graph.consumers(way[-1])):
        layout = [op for op in graph.consumers(way[-1]) if op.kind in LAYOUT_KINDS and op.input(0) is way[-1]]
        if len(layout) != 1 or len(way) > len(graph.ops):
            return
        way.append(layout[0].outputs[0])
    affine = next(op for op in graph.consumers(way[-1]) if op.kind in AFFINE_KINDS)
    for t in way:
        if graph.is_observed(t) or len(graph.consumers(t)) > 1:
            what = "is a graph output (or named by a signature)" if graph.is_observed(t) else "has other readers"
            log.skip(affine, f"{t.name!r} on the way to the chain {what}, which must keep the unscaled value",
                     layer=out.name)
            return
    # a per-channel-sized operand computed at runtime (not a full feature map, like a residual)
    others = [t for t in affine.inputs if t is not None and t is not way[-1]]
    if len(others) == 1 and not others[0].is_const and np.prod(others[0].shape) < np.prod(way[-1].shape):
        log.skip(affine, f"operand {others[0].name!r} is not a constant", layer=out.name)


def find_chain_after(graph: Graph, log: PassLog, layer: Op) -> AffineChain | Refusal | None:
    """The chain after the layer's output, directly or through layout ops (see layout.py).

    The layer's channel is the last axis of its output; layout ops carry it to the axis the chain
    must be per-channel on. A layout op the channel cannot be followed through is logged as a
    skip when a chain follows it.
    """
    out = layer.outputs[0]
    path = follow_layout(graph, out, len(out.shape) - 1)
    if isinstance(path, LayoutBlock):
        if path.feeds_chain:
            log.skip(path.op, path.reason, layer=out.name)
        return None
    chain = match_chain(graph, path.tensor, path.axis)
    if isinstance(chain, Refusal) and path.ops:
        chain.reason += f" (after {path.describe()} the layer's channel is on axis {path.axis})"
    return chain


def _output_refusal(graph: Graph, layer: Op, chain: AffineChain) -> str | None:
    out = layer.outputs[0]
    if graph.is_observed(out):
        return "the layer's output is a graph output (or named by a signature), and must keep its value"
    if len(graph.consumers(out)) != 1:
        return "the layer's output has other readers, which must keep the unscaled value"
    if graph.is_observed(chain.input):
        return f"{chain.input.name!r} between the layer and the chain is a graph output, and must keep its value"
    return None


def apply_backward(graph: Graph, log: PassLog, layer: Op, spec: LayerSpec, chain: AffineChain) -> bool:
    w = layer.input(spec.weights)
    b = layer.input(spec.bias)
    s, t = chain.scale, chain.shift
    new_w = scale_along(w.data, s, spec.out_axis)
    old_b = np.zeros(len(s)) if b is None else np.asarray(b.data, dtype=np.float64).reshape(-1)
    new_b = as_float32(old_b * s + t)
    if not finite(new_w, new_b):
        log.skip(chain.ops[0], "the folded weights or bias would not be finite", layer=layer.outputs[0].name)
        return False
    if not layer.has_fused_activation_slot:  # no options table (LiteRT runs it with defaults)
        log.skip(chain.ops[0], "the layer has no options table to carry the chain's activation", layer=layer.outputs[0].name)
        return False
    freed = freed_constants(graph, chain)
    log.fold(layer, chain.ops, scale=s, shift=t, activation=chain.activation, output=chain.output.name,
             **_buffer_changes(graph, layer, spec, freed))
    set_const_input(graph, layer, spec.weights, new_w, f"{chain.output.name}/weights")
    set_const_input(graph, layer, spec.bias, new_b, f"{chain.output.name}/bias")
    layer.fused_activation = chain.activation
    remove_chain(graph, chain)
    return True


def _buffer_changes(graph: Graph, layer: Op, spec: LayerSpec, freed: list[str]) -> dict:
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
