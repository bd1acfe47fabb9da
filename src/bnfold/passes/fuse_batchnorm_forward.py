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
* A chain with one scale and one shift for every channel (a scalar batch norm, keras' Rescaling,
  a hard-swish's /6) reaches the layers across any layout op, the channel axis no matter.
* Shift, into the bias — only where no implicit zero padding reaches it (the padded zeros would
  otherwise have become t): VALID padding, a SAME conv whose geometry pads nothing (a 1×1 kernel
  always), or FC:
      b'[o] = b[o] + Σ_{h,w,i} W[o,h,w,i]·t[i]   (dw: Σ_{h,w} W[0,h,w,k]·t[k div M]; FC: W·tile(t))
  A reader whose padding would see the shift keeps it as one ADD in front of it, divided by the
  scale that went into the weights: W'·(x + t/s) = W·(s·x + t). Every such reader shares that ADD;
  readers that can take the shift read x directly. A channel with s = 0 and t ≠ 0 cannot do this
  (its weights become 0): skipped.

The scale and the bias term are forward.py's (shared with fuse_preactivation_batchnorm); this
module decides where the shift goes. Guards (skipped with a reason): a kept shift's ADD the target
must run (engine/targets.py); a fused activation on the chain (act(s·x+t) is not affine; the BN ->
ReLU -> layer case is fuse_preactivation_batchnorm's), or a standalone activation or any other op
reading y; y a graph output; a RESHAPE on the way to an FC that has other readers or is a graph
output; y read as anything but the layer's data input; non-constant or non-float32 weights or bias;
a grouped conv (filter input channels ≠ data channels); an FC row length not a multiple of the
channel count; a non-finite result. x keeps its value, so its other readers are unaffected; chain
intermediates must be single-use (match_chain). Weights and biases shared with other ops are copied
(Graph.set_const_input), never edited; values are computed in float64 and cast back once.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.affine import AffineChain, as_float32, chains_from_starts, finite, freed_constants, kept_constant
from ..engine.forward import UNIFORM, Crossing, Sink, constant_input_response, find_sinks, fold_input_scale
from ..engine.report import PassResult, Refusal, float16_note
from ..ir.const import Scaled
from ..ir.graph import Graph, Op, Options, Tensor, float_source
from ..ir.ops import LAYERS


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for chain in chains_from_starts(graph):
        if isinstance(chain, AffineChain) and _reaches_layer(graph, chain.output):
            _fold(graph, result, chain)
    return result


def _fold(graph: Graph, result: PassResult, chain: AffineChain) -> None:
    y = chain.output
    plan = _plan(graph, chain)
    if isinstance(plan, Refusal):
        result.skip(chain.ops[0], plan, output=y.name)
        return
    sinks, updates, kept_shift = plan
    unsupported = None if kept_shift is None else targets.refusal(graph, "ADD")  # the kept shift (_rewire)
    if unsupported:
        result.not_for_target(chain.ops[0], unsupported)
        return
    kept_for = [k for k in sinks if _keeps_shift(k, sinks, kept_shift)]
    record = result.fold(
        sinks[0].layer,
        chain.ops,
        into=[k.layer for k in sinks],
        direction="forward",
        layers=[k.name for k in sinks],
        scale=chain.scale,
        shift=chain.shift,
        shift_kept=kept_shift is not None,
        shift_kept_for=[k.name for k in kept_for],
        reasons_shift_kept=[r.reason for k in kept_for if (r := _root_padding(k.root, sinks)) is not None],
        buffers_freed=freed_constants(graph, chain),
    )
    written = []
    for k, new_w, new_b in updates:
        if graph.set_const_input(k.layer, k.spec.weights, new_w, f"{k.name}/weights"):
            written.append(f"{k.name}/weights")
        if new_b is not None and graph.set_const_input(k.layer, k.spec.bias, new_b, f"{k.name}/bias"):
            written.append(f"{k.name}/bias")
    record.update(float16_note(written))
    result.made(_rewire(graph, chain, sinks, kept_shift))


def _root_padding(root, sinks: list[Sink]) -> Refusal | None:
    """Why zero padding would see a shift on some path through `root` (the op reading the batch
    norm's result that these sinks are reached through): the shift is kept or folded per root."""
    return next((k.padding for k in sinks if k.root is root and k.padding), None)


def _keeps_shift(sink: Sink, sinks: list[Sink], kept_shift) -> bool:
    return kept_shift is not None and _root_padding(sink.root, sinks) is not None


def _plan(graph: Graph, chain: AffineChain):
    """(sinks, [(sink, W', b' or None)], shift kept as an ADD or None), or a Refusal."""
    y, s, t = chain.output, chain.scale, chain.shift
    if chain.activation != "NONE":
        return Refusal(
            f"activation {chain.activation} on the chain's last op sits between the batch norm and the "
            f"layers (a batch norm -> ReLU -> layer is fuse_preactivation_batchnorm's)"
        )
    if graph.is_observed(y):
        return Refusal(f"the batch norm's result {y.name!r} is a graph output (or named by a signature)")
    uniform = np.ptp(s) == 0 and np.ptp(t) == 0  # one scale and shift for all: any layout carries it
    sinks = find_sinks(
        graph, y, UNIFORM if uniform else chain.axis, Crossing(frozenset({"NONE"}), nonnegative=bool(np.all(s >= 0)))
    )
    if isinstance(sinks, Refusal):
        return sinks
    kept_shift = None
    blocked = next((k.padding for k in sinks if k.padding), None)
    if np.any(t != 0) and blocked:
        if np.all(s == 1):
            return Refusal(f"the chain is only a shift, and {blocked}: it stays")
        if np.any((s == 0) & (t != 0)):
            return Refusal("a channel with zero scale and non-zero shift, and padding would see the shift")
        with np.errstate(divide="ignore", invalid="ignore"):
            kept_shift = as_float32(np.where(t == 0, 0.0, t / np.where(s == 0, 1.0, s)))
        if not finite(kept_shift):
            return Refusal("the shift divided by the scale is not finite in float32")
    updates = []
    for k in sinks:
        takes_shift = (_root_padding(k.root, sinks) is None or kept_shift is None) and np.any(t != 0)
        new_w, new_b = _layer_update(k, s, t if takes_shift else None)
        if not finite(new_w) or (new_b is not None and not finite(new_b)):
            return Refusal(f"the folded weights or bias of {k.name!r} would not be finite")
        updates.append((k, new_w, new_b))
    return sinks, updates, kept_shift


def _reaches_layer(graph: Graph, y: Tensor) -> bool:
    """Whether a conv-like layer reads y or what one op makes of y (only then is a skip worth a line)."""
    for u in graph.consumers(y):
        if u.kind in LAYERS or any(v.kind in LAYERS for o in u.outputs for v in graph.consumers(o)):
            return True
    return False


def _layer_update(sink: Sink, s: np.ndarray, t: np.ndarray | None) -> tuple[Scaled, np.ndarray | None]:
    source = float_source(sink.layer.input(sink.spec.weights))
    w = source.pending_data if source is not None else None
    assert w is not None  # a sink's weights passed weights_refusal: float constants
    new_w = fold_input_scale(w, sink.spec, sink.per_channel(s), sink.inner)
    if t is None:
        return new_w, None
    b = float_source(sink.layer.input(sink.spec.bias))
    old_b = 0.0 if b is None else np.asarray(b.data, dtype=np.float64).reshape(-1)
    term = constant_input_response(w, sink.spec, sink.per_channel(t), sink.inner)
    return new_w, as_float32(old_b + term, like=None if b is None else b.data)


def _rewire(graph: Graph, chain: AffineChain, sinks: list[Sink], kept_shift: np.ndarray | None) -> Op | None:
    """Paths that took the shift read x; the others read one new ADD(x, t/s) (returned); the chain goes."""
    x, y = chain.input, chain.output
    shifted = add = None
    if kept_shift is not None:
        shifted = graph.add_tensor(f"{y.name}/shifted", "FLOAT32", x.shape, shape_signature=x.shape_signature)
        d = graph.add_const(f"{y.name}/shift", kept_constant(kept_shift, chain))
        add = graph.add_op(
            "ADD", [x, d], [shifted], Options("AddOptions", fusedActivationFunction=0), after=chain.ops[-1]
        )
    for k in sinks:
        graph.replace_uses(
            y, shifted if shifted is not None and _keeps_shift(k, sinks, kept_shift) else x, only=[k.root]
        )
    for op in chain.ops:
        graph.remove_op(op)
    return add
