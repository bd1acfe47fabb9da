"""fuse_preactivation_batchnorm: a batch norm followed by ReLU *before* the layers (ResNetV2).

    before:  P -> x -> MUL(s) -> ADD(t, RELU) -> y -> CONV_2D(W) ...
    after:   P(b + t/s) -> x' -> RELU -> y' -> CONV_2D(W·s) ...     (shift moved back, RELU fused
                                                                      into P by fuse_activation_function)
       or:   P -> x -> ADD(t/s, RELU) -> y' -> CONV_2D(W·s) ...     (shift cannot move exactly)

Algebra, per channel c of the last axis (any affine chain ending in a fused RELU, see affine.py):

    relu(s·x + t) = s·relu(x + t/s)          for s > 0

* The scale s moves **forward** into every reader of y, along the input-channel axis:
  CONV_2D W[o,h,w,i]·s[i] (any padding: zero padding stays zero under scaling), DEPTHWISE_CONV_2D
  W[0,h,w,i·M+m]·s[i], FULLY_CONNECTED W[o,i]·s[i]. It may pass through ops that commute with a
  positive per-channel scale and keep the channel last: MEAN over non-channel axes, PAD/PADV2 with
  zero value and no channel padding, MAX_POOL_2D and AVERAGE_POOL_2D (with NONE or RELU). Every
  reader must be such a path; anything else (a non-positively-homogeneous op, a graph output on the
  way) leaves the batch norm alone.
* The shift d = t/s moves **backward** into the bias of the layer producing x when that is exact:
  the layer has no activation, x has no other reader, and nothing but a MAX_POOL_2D (which commutes
  with adding a per-channel constant: TFLite pools ignore padded positions) sits between; a zero PAD
  (or a pool fed by one) would turn the border into d, so it blocks.
  Residual case (ResNetV2): x = ADD(a, b) also feeds the skip path. Then d goes into the bias of a
  conv producing a or b, and every other reader of x gets −d back exactly: a residual ADD(x, c)
  (optionally behind a MAX_POOL_2D) folds −d into the bias of the conv producing c
  (act(x − d + c) = act(x + (c − d))). If some reader cannot take −d that way, the shift stays.
  A shift that cannot move stays as one ADD(d, RELU) and the report says why.
* Channels with s == 0 output the constant relu(t). Their weights become 0 and, when relu(t) > 0,
  the readers' biases absorb the constant Σ W·relu(t) — exact only when the constant reaches the
  layer unchanged (no zero PAD on the way) and the layer sees no padding (VALID, or SAME that pads
  nothing, e.g. 1×1; FULLY_CONNECTED; MEAN→FC). Otherwise the batch norm stays.
* Channels with s < 0 cannot cross the ReLU (relu(−x) ≠ −relu(x)): the batch norm stays, exact,
  and the report lists the negative, zero and positive channel groups.

Guards: float32 data and constants; every chain intermediate single-use; y (and anything on a
forward path) is not a graph output; x may be a graph output only if nothing is moved into its
producer; weights and biases shared with other ops are copied (set_const_input), never edited;
the folded values are computed in float64 and must be finite in float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.graph import ACTIVATIONS, Graph, Op, Options, Tensor
from .affine import AffineChain, as_float32, chains_from_starts, finite, scale_along
from .layers import (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, SPECS, LayerSpec, constant_input_response, float_const,
                     input_channel_vector, layer_refusal, padding_refusal, set_const_input)
from .manager import PassLog

FORWARD_LAYERS = {s.kind: s for s in (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED)}
PASS_THROUGH = frozenset({"MEAN", "PAD", "PADV2", "MAX_POOL_2D", "AVERAGE_POOL_2D"})
HOMOGENEOUS_ACTIVATIONS = ("NONE", "RELU")  # act(s·v) = s·act(v) for s > 0


@dataclass
class Sink:
    """A layer that absorbs the scale: reads `x` (shape `shape`) at input 0."""

    layer: Op
    spec: LayerSpec
    shape: tuple[int, ...]
    constant_ok: str | None  # None if a constant input channel maps exactly to a bias term, else why not


@dataclass
class BiasEdit:
    layer: Op
    spec: LayerSpec
    delta: np.ndarray  # float64, per output channel


def run(graph: Graph, log: PassLog) -> bool:
    changed = False
    for chain in chains_from_starts(graph):
        if not isinstance(chain, AffineChain) or chain.activation != "RELU":
            continue
        changed |= _fold(graph, log, chain)
    return changed


# ---- the fold -------------------------------------------------------------------------------

def _fold(graph: Graph, log: PassLog, chain: AffineChain) -> bool:
    s, t, y = chain.scale, chain.shift, chain.output
    anchor = chain.ops[0]
    groups = _channel_groups(s)
    if graph.is_observed(y):
        log.skip(anchor, "the batch norm's output is a graph output and must keep its value", **groups)
        return False
    if not finite(s, t):
        log.skip(anchor, "the scale or shift is not finite", **groups)
        return False
    if np.any(s < 0):
        log.skip(anchor, "channels with a negative scale cannot cross the ReLU (relu(-v) != -relu(v)); "
                         "the batch norm is left as it is", **groups)
        return False
    sinks = _forward_sinks(graph, y)
    if isinstance(sinks, str):
        log.skip(anchor, f"the scale cannot move forward: {sinks}", **groups)
        return False
    zero = s == 0
    constant = np.where(zero, np.maximum(t, 0.0), 0.0)  # what the s == 0 channels output
    if np.any(constant != 0):
        blocked = [f"{k.layer.kind} -> {k.layer.outputs[0].name}: {k.constant_ok}" for k in sinks if k.constant_ok]
        if blocked:
            log.skip(anchor, "channels with scale 0 output the constant relu(t) > 0, which a reader cannot absorb "
                             "exactly: " + "; ".join(blocked), **groups)
            return False
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(zero, 0.0, t / np.where(zero, 1.0, s))
    plan = [] if not np.any(d) else _backward_plan(graph, chain, d)
    if np.all(s == 1) and isinstance(plan, str):
        log.skip(anchor, f"the shift stays as ADD(RELU): {plan}", **groups)  # nothing left to move
        return False
    weights, constant_terms = _forward_updates(sinks, s, constant)
    updates = weights + _bias_updates(constant_terms + ([] if isinstance(plan, str) else plan))
    if not finite(*[u[2] for u in updates]) or not finite(as_float32(d)):
        log.skip(anchor, "the folded weights, biases or shift would not be finite in float32", **groups)
        return False
    log.fold(anchor, chain.ops, scale=s, shift=t, output=y.name,
             scale_into=[k.layer.outputs[0].name for k in sinks],
             shift_into=None if isinstance(plan, str) else [e.layer.outputs[0].name for e in plan],
             shift_kept=plan if isinstance(plan, str) else None,
             constant_channels=np.flatnonzero(constant).tolist(), **groups)
    for op, index, values, name in updates:
        set_const_input(graph, op, index, values, name)
    _replace_chain(graph, chain, None if not isinstance(plan, str) else d)
    return True


def _channel_groups(s: np.ndarray) -> dict:
    return {"channels": len(s), "negative_channels": np.flatnonzero(s < 0).tolist(),
            "zero_channels": np.flatnonzero(s == 0).tolist()}


def _replace_chain(graph: Graph, chain: AffineChain, kept_shift: np.ndarray | None) -> None:
    """x -> RELU -> y, or x -> ADD(d, RELU) -> y when the shift stays."""
    x, y, last = chain.input, chain.output, chain.ops[-1]
    if kept_shift is None:
        graph.add_op("RELU", [x], [y], None, after=last)
    else:
        shape = next((c.shape for c in chain.constants if c.data.size == len(kept_shift)), (len(kept_shift),))
        const = graph.add_const(f"{y.name}/shift", as_float32(kept_shift).reshape(shape))
        if last.kind == "ADD":
            graph.add_op(last.opcode, [x, const], [y], last.options.copy(), after=last)
        else:
            graph.add_op("ADD", [x, const], [y], Options("AddOptions", fusedActivationFunction=ACTIVATIONS.index("RELU")),
                         after=last)
    for op in chain.ops:
        graph.remove_op(op)


# ---- forward: the scale into the readers' weights -------------------------------------------

def _forward_sinks(graph: Graph, y: Tensor) -> list[Sink] | str:
    channels = y.shape[-1]
    sinks: list[Sink] = []
    frontier = [(y, False)]  # (tensor, zero-padded on the way)
    while frontier:
        v, padded = frontier.pop()
        users = graph.consumers(v)
        if not users:
            return f"{v.name!r} has no reader"
        for u in users:
            if sum(1 for i in u.inputs if i is v) != 1 or u.inputs[0] is not v:
                return f"{u.kind} -> {u.outputs[0].name} reads it other than as its data input"
            if u.kind in FORWARD_LAYERS:
                sink = _sink(u, v, channels, padded)
                if isinstance(sink, str):
                    return sink
                sinks.append(sink)
            elif u.kind in PASS_THROUGH:
                reason = _pass_through_refusal(graph, u, channels)
                if reason:
                    return reason
                frontier.append((u.outputs[0], padded or u.kind in ("PAD", "PADV2")))
            else:
                return f"{u.kind} -> {u.outputs[0].name} reads the activation and a scale cannot cross it"
    return sinks


def _sink(layer: Op, v: Tensor, channels: int, padded: bool) -> Sink | str:
    spec = FORWARD_LAYERS[layer.kind]
    where = f"{layer.kind} -> {layer.outputs[0].name}"
    w, b = layer.input(spec.weights), layer.input(spec.bias)
    if not float_const(w):
        return f"{where}: the weights are not a float32 constant"
    if b is not None and not float_const(b):
        return f"{where}: the bias is not a float32 constant"
    if layer.kind == "CONV_2D" and w.shape[3] != channels:
        return f"{where}: a grouped conv ({w.shape[3]} input channels per group, {channels} channels)"
    if layer.kind == "DEPTHWISE_CONV_2D" and w.shape[3] % channels:
        return f"{where}: {w.shape[3]} output channels is not a multiple of {channels}"
    if layer.kind == "FULLY_CONNECTED" and (w.shape[1] != channels or v.shape[-1] != channels):
        return f"{where}: the weights' input size {w.shape[1]} is not the channel count {channels}"
    constant_ok = "a zero PAD on the way turns the constant into 0 at the border" if padded else padding_refusal(layer, v)
    return Sink(layer, spec, v.shape, constant_ok)


def _pass_through_refusal(graph: Graph, op: Op, channels: int) -> str | None:
    where = f"{op.kind} -> {op.outputs[0].name}"
    out = op.outputs[0]
    if graph.is_observed(out):
        return f"{where}: its output is a graph output and would change"
    if len(out.shape) == 0 or out.shape[-1] != channels or len(op.outputs) != 1:
        return f"{where}: the channel axis does not stay last"
    if op.has_fused_activation_slot and op.fused_activation not in HOMOGENEOUS_ACTIVATIONS:
        return f"{where}: its fused {op.fused_activation} does not commute with a scale"
    if op.kind == "MEAN":
        axes = op.input(1)
        if axes is None or not axes.is_const:
            return f"{where}: the reduction axes are not constant"
        rank = len(op.inputs[0].shape)
        if any(int(a) % rank == rank - 1 for a in np.asarray(axes.data).reshape(-1)):
            return f"{where}: it reduces over the channel axis"
    if op.kind in ("PAD", "PADV2"):
        pads = op.input(1)
        if pads is None or not pads.is_const or np.any(np.asarray(pads.data)[-1] != 0):
            return f"{where}: the paddings are not constant or pad the channel axis"
        if op.kind == "PADV2":
            value = op.input(2)
            if value is not None and (not value.is_const or np.any(np.asarray(value.data) != 0)):
                return f"{where}: pads with a non-zero value, which a scale changes"
    return None


def _forward_updates(sinks: list[Sink], s: np.ndarray, constant: np.ndarray) -> tuple[list[tuple], list[BiasEdit]]:
    """(op, input index, new float32 values, name) for every sink's weights, and the bias terms
    Σ W·relu(t) the constant (s == 0) channels contribute."""
    updates, terms = [], []
    for k in sinks:
        per_weight_channel, axis = input_channel_vector(k.layer, k.spec, s)
        new_w = scale_along(k.layer.input(k.spec.weights).data, per_weight_channel, axis)
        updates.append((k.layer, k.spec.weights, new_w, f"{k.layer.outputs[0].name}/weights"))
        if np.any(constant):
            terms.append(BiasEdit(k.layer, k.spec, constant_input_response(k.layer, k.spec, constant)))
    return updates, terms


# ---- backward: the shift into the producer's bias -------------------------------------------

def _backward_plan(graph: Graph, chain: AffineChain, d: np.ndarray) -> list[BiasEdit] | str:
    x, reader = chain.input, chain.ops[0]
    channels = len(d)
    p = x.producer
    if p is None:
        return "the batch norm reads a graph input or constant: there is no layer before it"
    if graph.is_observed(x):
        return f"its input {x.name!r} is a graph output and must keep its value"
    others = [u for u in graph.consumers(x) if u is not reader]
    if p.kind in SPECS or p.kind == "MAX_POOL_2D":
        if others:
            return f"{p.kind} -> {x.name} has other readers, which must keep the unshifted value"
        edit = _through_pool(graph, p, x, reader, channels, d) if p.kind == "MAX_POOL_2D" else \
            _bias_target(graph, p, reader, channels, d)
        return edit if isinstance(edit, str) else [edit]
    if p.kind == "ADD" and _is_residual_add(p, x):
        return _residual_plan(graph, p, x, reader, others, channels, d)
    if p.kind in ("PAD", "PADV2", "MIRROR_PAD"):
        return f"a {p.kind} sits between: the padded border would become the shift instead of 0"
    return f"it is produced by {p.kind}, which cannot absorb a shift"


def _bias_target(graph: Graph, layer: Op, reader: Op, channels: int, delta: np.ndarray) -> BiasEdit | str:
    where = f"{layer.kind} -> {layer.outputs[0].name}"
    spec = SPECS.get(layer.kind)
    if spec is None:
        return f"{where} has no bias"
    reason = layer_refusal(graph, layer, spec)
    if reason:
        return f"{where}: {reason}"
    if layer.input(spec.weights).shape[spec.out_axis] != channels:
        return f"{where} has {layer.input(spec.weights).shape[spec.out_axis]} output channels, not {channels}"
    if not graph.has_single_use(layer.outputs[0], reader):
        return f"{where}: its output has other readers or is a graph output"
    return BiasEdit(layer, spec, delta)


def _through_pool(graph: Graph, pool: Op, x: Tensor, reader: Op, channels: int, d: np.ndarray) -> BiasEdit | str:
    """max(v) + d = max(v + d): a MAX_POOL_2D without activation passes a per-channel shift."""
    if pool.fused_activation != "NONE":
        return f"MAX_POOL_2D -> {x.name} has a fused {pool.fused_activation}"
    v = pool.inputs[0]
    q = v.producer
    if q is None:
        return f"MAX_POOL_2D -> {x.name} reads a graph input"
    if q.kind in ("PAD", "PADV2", "MIRROR_PAD"):
        return f"MAX_POOL_2D -> {x.name} pools after a {q.kind}: the padded border would become the shift instead of 0"
    if q.kind not in SPECS:
        return f"MAX_POOL_2D -> {x.name} pools the output of {q.kind}, which cannot absorb a shift"
    return _bias_target(graph, q, pool, channels, d)


def _is_residual_add(op: Op, x: Tensor) -> bool:
    a, b = op.input(0), op.input(1)
    return (a is not None and b is not None and a is not b and not a.is_const and not b.is_const
            and a.shape == b.shape == x.shape)


def _residual_plan(graph: Graph, add: Op, x: Tensor, reader: Op, others: list[Op], channels: int,
                   d: np.ndarray) -> list[BiasEdit] | str:
    """x = ADD(a, b): d into the conv producing b (or a); -d back for every other reader of x."""
    if add.fused_activation != "NONE":
        return f"the residual ADD -> {x.name} has a fused {add.fused_activation}"
    reasons = []
    target = None
    for operand in (add.inputs[1], add.inputs[0]):
        if operand.producer is None:
            reasons.append(f"{operand.name} is a graph input")
            continue
        found = _bias_target(graph, operand.producer, add, channels, d)
        if isinstance(found, BiasEdit):
            target = found
            break
        reasons.append(found)
    if target is None:
        return "no layer feeding the residual ADD can take the shift (" + "; ".join(reasons) + ")"
    plan = [target]
    for u in others:
        edit = _compensation(graph, u, x, channels, -d)
        if isinstance(edit, str):
            return f"the skip-path reader {u.kind} -> {u.outputs[0].name} cannot take back the shift exactly: {edit}"
        if edit.layer is target.layer:
            return "the skip path ends in the layer that takes the shift"
        plan.append(edit)
    return plan


def _compensation(graph: Graph, u: Op, v: Tensor, channels: int, delta: np.ndarray) -> BiasEdit | str:
    """u reads v + d instead of v: act(v + c) = act((v + d) + (c - d)) puts -d into c's layer."""
    if u.kind == "MAX_POOL_2D":
        out = u.outputs[0]
        users = graph.consumers(out)
        if u.fused_activation != "NONE":
            return f"it has a fused {u.fused_activation}"
        if len(users) != 1 or graph.is_observed(out):
            return "its output has several readers or is a graph output"
        return _compensation(graph, users[0], out, channels, delta)
    if u.kind != "ADD" or not _is_residual_add(u, v):
        return f"{u.kind} is not a residual ADD"
    other = u.inputs[1] if u.inputs[0] is v else u.inputs[0]
    if other.producer is None:
        return "the other operand of the ADD is a graph input"
    return _bias_target(graph, other.producer, u, channels, delta)


def _bias_updates(plan: list[BiasEdit]) -> list[tuple]:
    """Sum the edits per layer (one layer may take a constant term, a shift and a compensation,
    all additive on its original bias) into new biases."""
    total: dict[int, tuple[BiasEdit, np.ndarray]] = {}
    for e in plan:
        prev = total.get(id(e.layer))
        total[id(e.layer)] = (e, e.delta if prev is None else prev[1] + e.delta)
    updates = []
    for e, delta in total.values():
        b = e.layer.input(e.spec.bias)
        old = np.zeros(len(delta)) if b is None else np.asarray(b.data, dtype=np.float64).reshape(-1)
        updates.append((e.layer, e.spec.bias, as_float32(old + delta), f"{e.layer.outputs[0].name}/bias"))
    return updates
