"""fuse_preactivation_batchnorm: a batch norm followed by ReLU *before* the layers (ResNetV2).

    before:  P -> x -> MUL(s) -> ADD(t, RELU) -> y -> CONV_2D(W) ...
    after:   P(b + t/s) -> x' -> RELU -> y' -> CONV_2D(W·s) ...     (shift moved back, RELU fused
                                                                      into P by fuse_activation_function)
       or:   P -> x -> ADD(t/s, RELU) -> y' -> CONV_2D(W·s) ...     (shift cannot move exactly)

Algebra, per channel c of the last axis (any affine chain ending in a fused RELU, see affine.py):

    relu(s·x + t) = s·relu(x + t/s)          for s > 0

* The scale s moves **forward** into every reader of y, along the input-channel axis (forward.py):
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
  After a CONCATENATION along the channel axis (DenseNet), each part's slice of d goes into the
  bias of the layer making that part, on the same conditions.
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

Guards: the target runs what replaces the chain (RELU, or ADD(RELU): engine/targets.py); float32
data and constants; every chain intermediate single-use; y (and anything on a forward path) is not a
graph output; x may be a graph output only if nothing is moved into its producer; weights and biases
shared with other ops are copied (Graph.set_const_input), never edited; the folded values are
computed in float64 and must be finite in float32.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine import targets
from ..engine.affine import AffineChain, as_float32, chains_from_starts, finite, kept_constant
from ..engine.backward import layer_refusal
from ..engine.forward import Crossing, Sink, constant_input_response, find_sinks, fold_input_scale
from ..engine.layout import concatenation_axis, layout_source
from ..engine.report import PassResult, Refusal, float16_note
from ..ir.graph import Graph, Op, Options, Tensor, float_source
from ..ir.ops import FUSED_ACTIVATIONS, HOMOGENEOUS_ACTIVATIONS, LAYERS, Layer

# a scale alone (s ≥ 0 once negative channels are refused) crosses ops fused with NONE or RELU
SCALE_CROSSING = Crossing(HOMOGENEOUS_ACTIVATIONS, nonnegative=True)


class BiasEdit(NamedTuple):
    layer: Op
    spec: Layer
    delta: np.ndarray  # float64, per output channel


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for chain in chains_from_starts(graph):
        if isinstance(chain, AffineChain) and chain.activation == "RELU":
            _fold(graph, result, chain)
    return result


# ---- the fold -------------------------------------------------------------------------------


def _fold(graph: Graph, result: PassResult, chain: AffineChain) -> None:
    s, t, y = chain.scale, chain.shift, chain.output
    anchor = chain.ops[0]
    groups = _channel_groups(s)
    if graph.is_observed(y):
        result.skip(anchor, "the batch norm's output is a graph output and must keep its value", **groups)
        return
    if not finite(s, t):
        result.skip(anchor, "the scale or shift is not finite", **groups)
        return
    if np.any(s < 0):
        result.skip(
            anchor,
            "channels with a negative scale cannot cross the ReLU (relu(-v) != -relu(v)); "
            "the batch norm is left as it is",
            **groups,
        )
        return
    sinks = find_sinks(graph, y, chain.axis, SCALE_CROSSING)
    if isinstance(sinks, Refusal):
        result.skip(anchor, f"the scale cannot move forward: {sinks}", **groups)
        return
    zero = s == 0
    constant = np.where(zero, np.maximum(t, 0.0), 0.0)  # what the s == 0 channels output
    if np.any(constant != 0):
        blocked = [f"{k.layer.kind} -> {k.name}: {k.padding}" for k in sinks if k.padding]
        if blocked:
            result.skip(
                anchor,
                "channels with scale 0 output the constant relu(t) > 0, which a reader cannot absorb "
                "exactly: " + "; ".join(blocked),
                **groups,
            )
            return
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(zero, 0.0, t / np.where(zero, 1.0, s))
    plan = [] if not np.any(d) else _backward_plan(graph, chain, d)
    if np.all(s == 1) and isinstance(plan, Refusal):
        result.skip(anchor, f"the shift stays as ADD(RELU): {plan}", **groups)  # nothing left to move
        return
    weights, constant_terms = _forward_updates(sinks, s, constant)
    updates = weights + _bias_updates(constant_terms + ([] if isinstance(plan, Refusal) else plan))
    if not finite(*[u[2] for u in updates]) or not finite(as_float32(d)):
        result.skip(anchor, "the folded weights, biases or shift would not be finite in float32", **groups)
        return
    # what replaces the chain: a standalone RELU, or ADD(RELU) when the shift stays (_replace_chain)
    made = ("ADD", "RELU") if isinstance(plan, Refusal) else ("RELU", "NONE")
    unsupported = targets.refusal(graph, *made)
    if unsupported:
        result.not_for_target(anchor, unsupported)
        return
    into = [k.layer for k in sinks] + ([] if isinstance(plan, Refusal) else [e.layer for e in plan])
    record = result.fold(
        anchor,
        chain.ops,
        into=into,
        scale=s,
        shift=t,
        output=y.name,
        scale_into=[k.name for k in sinks],
        shift_into=None if isinstance(plan, Refusal) else [e.layer.outputs[0].name for e in plan],
        shift_kept=plan.reason if isinstance(plan, Refusal) else None,
        constant_channels=np.flatnonzero(constant).tolist(),
        **groups,
    )
    written = [name for op, index, values, name in updates if graph.set_const_input(op, index, values, name)]
    record.update(float16_note(written))
    result.made(_replace_chain(graph, chain, None if not isinstance(plan, Refusal) else d))


def _channel_groups(s: np.ndarray) -> dict:
    return {
        "channels": len(s),
        "negative_channels": np.flatnonzero(s < 0).tolist(),
        "zero_channels": np.flatnonzero(s == 0).tolist(),
    }


def _replace_chain(graph: Graph, chain: AffineChain, kept_shift: np.ndarray | None) -> Op:
    """x -> RELU -> y, or x -> ADD(d, RELU) -> y when the shift stays (the op returned)."""
    x, y, last = chain.input, chain.output, chain.ops[-1]
    if kept_shift is None:
        op = graph.add_op("RELU", [x], [y], None, after=last)
    else:
        const = graph.add_const(f"{y.name}/shift", kept_constant(as_float32(kept_shift), chain))
        if last.kind == "ADD":
            assert last.options is not None  # the chain's RELU is fused in its options
            op = graph.add_op(last.opcode, [x, const], [y], last.options.copy(), after=last)
        else:
            op = graph.add_op(
                "ADD",
                [x, const],
                [y],
                Options("AddOptions", fusedActivationFunction=FUSED_ACTIVATIONS.index("RELU")),
                after=last,
            )
    for old in chain.ops:
        graph.remove_op(old)
    return op


# ---- forward: the scale into the readers' weights -------------------------------------------


def _forward_updates(sinks: list[Sink], s: np.ndarray, constant: np.ndarray) -> tuple[list[tuple], list[BiasEdit]]:
    """(op, input index, new float32 values, name) for every sink's weights, and the bias terms
    Σ W·relu(t) the constant (s == 0) channels contribute."""
    updates, terms = [], []
    for k in sinks:
        source = float_source(k.layer.input(k.spec.weights))
        w = source.pending_data if source is not None else None
        assert w is not None  # a sink's weights passed weights_refusal: float constants
        updates.append((k.layer, k.spec.weights, fold_input_scale(w, k.spec, s, k.inner), f"{k.name}/weights"))
        if np.any(constant):
            terms.append(BiasEdit(k.layer, k.spec, constant_input_response(w, k.spec, constant, k.inner)))
    return updates, terms


# ---- backward: the shift into the producer's bias -------------------------------------------


def _backward_plan(graph: Graph, chain: AffineChain, d: np.ndarray) -> list[BiasEdit] | Refusal:
    x, reader = chain.input, chain.ops[0]
    channels = len(d)
    p = x.producer
    if p is None:
        return Refusal("the batch norm reads a graph input or constant: there is no layer before it")
    if graph.is_observed(x):
        return Refusal(f"its input {x.name!r} is a graph output and must keep its value")
    others = [u for u in graph.consumers(x) if u is not reader]
    origin, _, via = layout_source(graph, x, chain.axis)
    p = origin.producer or p
    if p.kind in LAYERS or p.kind == "MAX_POOL_2D":
        if others:
            return Refusal(f"{p.kind} -> {x.name} has other readers, which must keep the unshifted value")
        edit = (
            _through_pool(graph, p, x, reader, channels, d)
            if p.kind == "MAX_POOL_2D" and via is None
            else _layer_behind(graph, x, chain.axis, reader, channels, d)
        )
        return edit if isinstance(edit, Refusal) else [edit]
    if p.kind == "ADD" and via is None and _is_residual_add(p, x):
        return _residual_plan(graph, p, x, reader, others, channels, d, chain.axis)
    if p.kind == "CONCATENATION" and via is None:
        if others:
            return Refusal(f"CONCATENATION -> {x.name} has other readers, which must keep the unshifted value")
        return _concat_plan(graph, p, chain.axis, d)
    if p.kind in ("PAD", "PADV2", "MIRROR_PAD"):
        return Refusal(f"a {p.kind} sits between: the padded border would become the shift instead of 0")
    return Refusal(f"it is produced by {p.kind}, which cannot absorb a shift")


def _layer_behind(
    graph: Graph, t: Tensor, axis: int, reader: Op, channels: int, delta: np.ndarray
) -> BiasEdit | Refusal:
    """The layer producing `t` — directly, or through layout ops (TICO's NCHW transposes) whose
    outputs only lead to `t` — takes `delta` along `axis` of t into its bias. `reader` must be
    t's only reader."""
    if not graph.has_single_use(t, reader):
        return Refusal(f"{t.name} has other readers or is a graph output, which must keep the unshifted value")
    origin, origin_axis, via = layout_source(graph, t, axis)
    p = origin.producer
    if p is None:
        return Refusal(f"{t.name} is a graph input")
    if p.kind not in LAYERS:
        return Refusal(f"it is produced by {p.kind}, which cannot absorb a shift")
    if origin_axis != len(origin.shape) - 1:
        return Refusal(f"{p.kind} -> {origin.name}: the channel maps to axis {origin_axis}, not its channel axis")
    return _bias_target(graph, p, via or reader, channels, delta)


def _concat_plan(graph: Graph, concat: Op, axis: int, d: np.ndarray) -> list[BiasEdit] | Refusal:
    """x = CONCATENATION(parts) along the channel axis: each part's slice of d into the layer making it."""
    concat_axis = concatenation_axis(concat)
    if concat_axis != axis:
        return Refusal(f"the CONCATENATION joins axis {concat_axis}, not the channel axis {axis}")
    if concat.has_fused_activation_slot and concat.fused_activation != "NONE":
        return Refusal(f"the CONCATENATION has a fused {concat.fused_activation}")
    plan, offset = [], 0
    for part in concat.inputs:
        if part is None:
            return Refusal("the CONCATENATION lacks an input")
        width = part.shape[axis]
        edit = _layer_behind(graph, part, axis, concat, width, d[offset : offset + width])
        if isinstance(edit, Refusal):
            return edit.prefixed(f"the CONCATENATION part {part.name!r}: ")
        plan.append(edit)
        offset += width
    if len({id(e.layer) for e in plan}) != len(plan):
        return Refusal("one layer feeds two parts of the CONCATENATION")
    return plan


def _bias_target(graph: Graph, layer: Op, reader: Op, channels: int, delta: np.ndarray) -> BiasEdit | Refusal:
    where = f"{layer.kind} -> {layer.outputs[0].name}"
    spec = LAYERS.get(layer.kind)
    if spec is None:
        return Refusal(f"{where} has no bias")
    refusal = layer_refusal(layer, spec)
    if refusal:
        return refusal.prefixed(f"{where}: ")
    w = layer.input(spec.weights)
    assert w is not None  # layer_refusal passed: constant weights
    if w.shape[spec.out_axis] != channels:
        return Refusal(f"{where} has {w.shape[spec.out_axis]} output channels, not {channels}")
    if not graph.has_single_use(layer.outputs[0], reader):
        return Refusal(f"{where}: its output has other readers or is a graph output")
    return BiasEdit(layer, spec, delta)


def _through_pool(graph: Graph, pool: Op, x: Tensor, reader: Op, channels: int, d: np.ndarray) -> BiasEdit | Refusal:
    """max(v) + d = max(v + d): a MAX_POOL_2D without activation passes a per-channel shift."""
    if pool.fused_activation != "NONE":
        return Refusal(f"MAX_POOL_2D -> {x.name} has a fused {pool.fused_activation}")
    v = pool.input(0)
    q = v.producer if v is not None else None
    if v is None or q is None:
        return Refusal(f"MAX_POOL_2D -> {x.name} reads a graph input")
    if q.kind in ("PAD", "PADV2", "MIRROR_PAD"):
        return Refusal(
            f"MAX_POOL_2D -> {x.name} pools after a {q.kind}: the padded border would become the shift instead of 0"
        )
    if q.kind not in LAYERS:
        return Refusal(f"MAX_POOL_2D -> {x.name} pools the output of {q.kind}, which cannot absorb a shift")
    return _layer_behind(graph, v, len(v.shape) - 1, pool, channels, d)


def _is_residual_add(op: Op, x: Tensor) -> bool:
    a, b = op.input(0), op.input(1)
    return (
        a is not None
        and b is not None
        and a is not b
        and not a.is_const
        and not b.is_const
        and a.shape == b.shape == x.shape
    )


def _residual_plan(
    graph: Graph, add: Op, x: Tensor, reader: Op, others: list[Op], channels: int, d: np.ndarray, axis: int
) -> list[BiasEdit] | Refusal:
    """x = ADD(a, b): d into the conv producing b (or a); -d back for every other reader of x."""
    if add.fused_activation != "NONE":
        return Refusal(f"the residual ADD -> {x.name} has a fused {add.fused_activation}")
    reasons = []
    target = None
    for operand in (t for t in (add.inputs[1], add.inputs[0]) if t is not None):
        found = _layer_behind(graph, operand, axis, add, channels, d)
        if isinstance(found, BiasEdit):
            target = found
            break
        reasons.append(found.reason)
    if target is None:
        return Refusal("no layer feeding the residual ADD can take the shift (" + "; ".join(reasons) + ")")
    plan = [target]
    for u in others:
        edit = _compensation(graph, u, x, channels, -d, axis)
        if isinstance(edit, Refusal):
            return edit.prefixed(
                f"the skip-path reader {u.kind} -> {u.outputs[0].name} cannot take back the shift exactly: "
            )
        if edit.layer is target.layer:
            return Refusal("the skip path ends in the layer that takes the shift")
        plan.append(edit)
    return plan


def _compensation(graph: Graph, u: Op, v: Tensor, channels: int, delta: np.ndarray, axis: int) -> BiasEdit | Refusal:
    """u reads v + d instead of v: act(v + c) = act((v + d) + (c - d)) puts -d into c's layer."""
    if u.kind == "MAX_POOL_2D":
        out = u.outputs[0]
        users = graph.consumers(out)
        if u.fused_activation != "NONE":
            return Refusal(f"it has a fused {u.fused_activation}")
        if len(users) != 1 or graph.is_observed(out):
            return Refusal("its output has several readers or is a graph output")
        return _compensation(graph, users[0], out, channels, delta, axis)
    if u.kind != "ADD" or not _is_residual_add(u, v):
        return Refusal(f"{u.kind} is not a residual ADD")
    other = u.inputs[1] if u.inputs[0] is v else u.inputs[0]
    if other is None or other.producer is None:
        return Refusal("the other operand of the ADD is a graph input")
    return _layer_behind(graph, other, axis, u, channels, delta)


def _bias_updates(plan: list[BiasEdit]) -> list[tuple]:
    """Sum the edits per layer (one layer may take a constant term, a shift and a compensation,
    all additive on its original bias) into new biases."""
    total: dict[int, tuple[BiasEdit, np.ndarray]] = {}
    for e in plan:
        prev = total.get(id(e.layer))
        total[id(e.layer)] = (e, e.delta if prev is None else prev[1] + e.delta)
    updates = []
    for e, delta in total.values():
        b = float_source(e.layer.input(e.spec.bias))
        old = np.zeros(len(delta)) if b is None else np.asarray(b.data, dtype=np.float64).reshape(-1)
        updates.append(
            (
                e.layer,
                e.spec.bias,
                as_float32(old + delta, like=None if b is None else b.data),
                f"{e.layer.outputs[0].name}/bias",
            )
        )
    return updates
