"""fuse_batchnorm_forward: a batch norm *before* conv/depthwise/FC layers goes into their weights.

    before:  x -> MUL(s) -> ADD(t) -> y -> CONV_2D(W, b) ...        (every reader of y a layer)
    after:   x -> CONV_2D(W', b') ...                                 (shift invisible to padding)
       or:   x -> ADD(t/s) -> CONV_2D(W') ...                         (padding would see the shift)

Algebra, per channel i of the last axis (y = s·x + t, any affine chain form, see affine.py):

* Scale, into the input-channel axis of every reader's weights — exact for any padding, because
  the padded zeros stay zero under scaling:
      CONV_2D            W'[o,h,w,i]   = W[o,h,w,i]·s[i]            (filter O H W I)
      DEPTHWISE_CONV_2D  W'[0,h,w,iM+m] = W[0,h,w,iM+m]·s[i]         (filter 1 H W I·M: input
                                                                      channel i feeds i·M..i·M+M−1)
      FULLY_CONNECTED    W'[o,k]       = W[o,k]·s[k mod C]          (rows of I = C·n values in NHWC
                                                                      order: the vector tiled n times;
                                                                      also through a RESHAPE/flatten)
* Shift, into the bias — only where no implicit zero padding reaches it (the padded zeros would
  otherwise have become t): VALID padding, a SAME conv whose geometry pads nothing (a 1×1 kernel
  always), or FC:
      b'[o] = b[o] + Σ_{h,w,i} W[o,h,w,i]·t[i]   (dw: Σ_{h,w} W[0,h,w,k]·t[k div M]; FC: W·tile(t))
  A reader whose padding would see the shift keeps it as one ADD in front of it, divided by the
  scale that went into the weights: W'·(x + t/s) = W·(s·x + t). Every such reader shares that ADD;
  readers that can take the shift read x directly. A channel with s = 0 and t ≠ 0 cannot do this
  (its weights become 0): skipped.

Guards (skipped with a reason): a fused activation on the chain (act(s·x+t) is not affine; the
BN -> ReLU -> layer case is fuse_preactivation_batchnorm's), or a standalone activation or any
other op reading y; y a graph output; a RESHAPE on the way to an FC that has other readers or is a
graph output; y read as anything but the layer's data input; non-constant or non-float32 weights
or bias; a grouped conv (filter input channels ≠ data channels); an FC row length not a multiple of
the channel count; a non-finite result. x keeps its value, so its other readers are unaffected;
chain intermediates must be single-use (match_chain). Weights and biases shared with other ops are
copied (set_const_input), never edited; values are computed in float64 and cast back once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.graph import Graph, Op, Options, Tensor
from .affine import AffineChain, Refusal, as_float32, chains_from_starts, finite, freed_constants, scale_along
from .layers import (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, SPECS, LayerSpec, constant_input_response, float_const,
                     input_channel_vector, padding_refusal, set_const_input)
from .manager import PassLog

FORWARD = {s.kind: s for s in (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED)}
ACTIVATION_KINDS = frozenset({"RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LEAKY_RELU", "PRELU", "TANH",
                              "LOGISTIC", "HARD_SWISH", "GELU", "ELU"})


@dataclass
class Sink:
    """A layer reading y (directly, or through the RESHAPE `via` for FC) that absorbs the scale."""

    layer: Op
    spec: LayerSpec
    via: Op | None
    shift_refusal: str | None  # why padding would see a shift (None: the shift goes into the bias)


def run(graph: Graph, log: PassLog) -> bool:
    changed = False
    for chain in chains_from_starts(graph):
        if isinstance(chain, Refusal):
            continue
        changed |= _fold(graph, log, chain)
    return changed


def _fold(graph: Graph, log: PassLog, chain: AffineChain) -> bool:
    y = chain.output
    if not _reaches_layer(graph, y):
        return False
    plan = _plan(graph, chain)
    if isinstance(plan, str):
        log.skip(chain.ops[0], plan, output=y.name)
        return False
    sinks, updates, kept_shift = plan
    freed = freed_constants(graph, chain)
    log.fold(sinks[0].layer, chain.ops, direction="forward", layers=[k.layer.outputs[0].name for k in sinks],
             scale=chain.scale, shift=chain.shift, shift_kept=kept_shift is not None,
             shift_kept_for=[k.layer.outputs[0].name for k in sinks if _keeps_shift(k, kept_shift)],
             reasons_shift_kept=[k.shift_refusal for k in sinks if _keeps_shift(k, kept_shift)],
             buffers_freed=freed)
    for layer, spec, new_w, new_b in updates:
        set_const_input(graph, layer, spec.weights, new_w, f"{layer.outputs[0].name}/weights")
        if new_b is not None:
            set_const_input(graph, layer, spec.bias, new_b, f"{layer.outputs[0].name}/bias")
    _rewire(graph, chain, sinks, kept_shift)
    return True


def _keeps_shift(sink: Sink, kept_shift) -> bool:
    return kept_shift is not None and sink.shift_refusal is not None


def _plan(graph: Graph, chain: AffineChain):
    """(sinks, [(layer, spec, W', b' or None)], shift kept as an ADD or None), or why not."""
    y, s, t = chain.output, chain.scale, chain.shift
    if chain.activation != "NONE":
        return (f"activation {chain.activation} on the chain's last op sits between the batch norm and the "
                f"layers (a batch norm -> ReLU -> layer is fuse_preactivation_batchnorm's)")
    if graph.is_observed(y):
        return f"the batch norm's result {y.name!r} is a graph output (or named by a signature)"
    sinks = _sinks(graph, y, len(s))
    if isinstance(sinks, str):
        return sinks
    kept_shift = None
    if np.any(t != 0) and any(k.shift_refusal for k in sinks):
        if np.all(s == 1):
            return f"the chain is only a shift, and {next(k.shift_refusal for k in sinks if k.shift_refusal)}: it stays"
        if np.any((s == 0) & (t != 0)):
            return "a channel with zero scale and non-zero shift, and padding would see the shift"
        with np.errstate(divide="ignore", invalid="ignore"):
            kept_shift = as_float32(np.where(t == 0, 0.0, t / np.where(s == 0, 1.0, s)))
        if not finite(kept_shift):
            return "the shift divided by the scale is not finite in float32"
    updates = []
    for k in sinks:
        fold_shift = k.shift_refusal is None or kept_shift is None
        new_w, new_b = _layer_update(k, s, t if fold_shift and np.any(t != 0) else None)
        if not finite(new_w) or (new_b is not None and not finite(new_b)):
            return f"the folded weights or bias of {k.layer.outputs[0].name!r} would not be finite"
        updates.append((k.layer, k.spec, new_w, new_b))
    return sinks, updates, kept_shift


def _reaches_layer(graph: Graph, y: Tensor) -> bool:
    """Whether a conv-like layer reads y or what one op makes of y (only then is a skip worth a line)."""
    for u in graph.consumers(y):
        if u.kind in SPECS or any(v.kind in SPECS for o in u.outputs for v in graph.consumers(o)):
            return True
    return False


# ---- who reads y ------------------------------------------------------------------------------

def _sinks(graph: Graph, y: Tensor, channels: int) -> list[Sink] | str:
    sinks = []
    for u in graph.consumers(y):
        sink = _sink(graph, u, y, channels)
        if isinstance(sink, str):
            return sink
        sinks.append(sink)
    return sinks


def _sink(graph: Graph, u: Op, y: Tensor, channels: int) -> Sink | str:
    if u.kind in ACTIVATION_KINDS:
        return f"an activation ({u.kind}) sits between the batch norm and the layer"
    via = None
    if u.kind == "RESHAPE":
        via, r = u, u.outputs[0]
        readers = graph.consumers(r)
        if u.input(0) is not y or any(t is y for t in u.inputs[1:]):
            return f"{y.name!r} is the shape operand of a RESHAPE"
        if graph.is_observed(r) or len(readers) != 1 or readers[0].kind != "FULLY_CONNECTED":
            return "a RESHAPE of the batch norm's result feeds something other than a single FULLY_CONNECTED"
        u, y = readers[0], r
    spec = FORWARD.get(u.kind)
    if spec is None:
        return f"{y.name!r} is also read by {u.kind}, which cannot absorb the batch norm"
    if u.input(0) is not y or any(t is y for t in u.inputs[1:]):
        return f"{y.name!r} is read by {u.kind} as something other than its data input"
    reason = _weights_refusal(u, spec, channels)
    if reason:
        return f"{u.kind} {u.outputs[0].name!r}: {reason}"
    return Sink(u, spec, via, padding_refusal(u, y))


def _weights_refusal(layer: Op, spec: LayerSpec, channels: int) -> str | None:
    w, b = layer.input(spec.weights), layer.input(spec.bias)
    if not float_const(w):
        return "the weights are not a float32 constant"
    if b is not None and not float_const(b):
        return "the bias is not a float32 constant"
    if layer.kind == "CONV_2D" and w.shape[3] != channels:
        return f"grouped convolution (the filter has {w.shape[3]} input channels, the data {channels})"
    if layer.kind == "DEPTHWISE_CONV_2D" and w.shape[3] % channels:
        return f"the filter's {w.shape[3]} channels are not a multiple of the data's {channels}"
    if layer.kind == "FULLY_CONNECTED":
        if getattr(layer.options, "weightsFormat", 0):
            return "the weights are in a shuffled format"
        if w.shape[1] % channels:
            return f"its rows of {w.shape[1]} values do not start on a channel boundary ({channels} channels)"
    return None


# ---- the new weights and bias -------------------------------------------------------------------

def _layer_update(sink: Sink, s: np.ndarray, t: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    layer, spec = sink.layer, sink.spec
    vs, axis = input_channel_vector(layer, spec, s)
    new_w = scale_along(layer.input(spec.weights).data, vs, axis)
    if t is None:
        return new_w, None
    b = layer.input(spec.bias)
    old_b = 0.0 if b is None else np.asarray(b.data, dtype=np.float64).reshape(-1)
    return new_w, as_float32(old_b + constant_input_response(layer, spec, t))


# ---- rewiring ---------------------------------------------------------------------------------------

def _rewire(graph: Graph, chain: AffineChain, sinks: list[Sink], kept_shift: np.ndarray | None) -> None:
    """Readers that took the shift read x; the others read one new ADD(x, t/s); the chain goes."""
    x, y = chain.input, chain.output
    shifted = None
    if kept_shift is not None:
        shifted = graph.add_tensor(f"{y.name}/shifted", "FLOAT32", x.shape, shape_signature=x.shape_signature)
        d = graph.add_const(f"{y.name}/shift", kept_shift)
        graph.add_op("ADD", [x, d], [shifted], Options("AddOptions", fusedActivationFunction=0), after=chain.ops[-1])
    for k in sinks:
        reader = k.via or k.layer
        graph.replace_uses(y, shifted if _keeps_shift(k, kept_shift) else x, only=[reader])
    for op in chain.ops:
        graph.remove_op(op)
