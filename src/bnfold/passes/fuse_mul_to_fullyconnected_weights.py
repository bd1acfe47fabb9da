"""fuse_mul_to_fullyconnected_weights: a MUL by a per-feature constant before FULLY_CONNECTED goes
into the layer's weights (ONE's pass of that name; the MUL before the layer, where
fuse_mul_with_fullyconnected takes the one after it).

    before:  x -> MUL(x, s) -> m -> FULLY_CONNECTED(m, W, b) -> y
    after:   x -> FULLY_CONNECTED(x, W', b) -> y,   W'[o, i] = W[o, i] · s[i]

Algebra: Σ_i W[o,i]·(s[i]·x[i]) = Σ_i (W[o,i]·s[i])·x[i]. Exact up to float rounding: each
W[o,i]·s[i] is computed in float64 and rounded once to float32 (what fold_mul would make of ONE's
MUL node, which bnfold does not leave behind); the products are then rounded where the MUL's were.
Guards (ONE's): the MUL is float32 with no fused activation, its constant has rank 1 (one value,
or one per input feature: x's last axis is the layer's input axis, so s[i] meets W[:, i]); the
layer's weights are a float32 constant in the default format. Also: x is not broadcast by s
(m has x's shape), the new weights are finite. A MUL whose output something else reads stays
for that reader (the layer reads x); the weights are written copy-on-write.
"""

from __future__ import annotations

import numpy as np

from ..engine.affine import finite, scale_along
from ..engine.match import const_operand, float_const, is_plain_float, no_activation
from ..engine.report import PassResult
from ..ir.graph import Graph, Op


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for fc in [op for op in graph.ops if op.kind == "FULLY_CONNECTED"]:
        mul = fc.inputs[0].producer if fc.inputs[0] is not None else None
        if mul is None or mul.kind != "MUL":
            continue
        reason = _refusal(fc, mul)
        if reason is not None:
            result.refuse_value(fc, reason)
            continue
        pair = const_operand(mul)
        assert pair is not None  # _refusal checked it
        s, x = pair
        weights = fc.operand(1)
        pending = weights.pending_data
        assert pending is not None  # _refusal checked the weights are a constant
        scaled = scale_along(pending, _per_input(s, weights.shape[1]), 1)
        if not finite(scaled):
            result.refuse_value(fc, "the scaled weights would not be finite")
            continue
        result.fold(fc, [mul], constant=s.name)
        graph.set_const_input(fc, 1, scaled, graph.unique_name(f"{weights.name};{s.name}"))
        graph.set_input(fc, 0, x)
    return result


def _refusal(fc: Op, mul: Op) -> str | None:
    pair = const_operand(mul)
    if pair is None or float_const(pair[0]) is None:
        return "the MUL before it is not by a float32 constant"
    s, x = pair
    weights = fc.input(1)
    if not no_activation(mul) or not is_plain_float(mul.outputs[0]) or not is_plain_float(x):
        return "the MUL before it has a fused activation or is not float32"
    if (
        weights is None
        or float_const(weights) is None
        or getattr(fc.options, "weightsFormat", 0) != 0
        or len(weights.shape) != 2
    ):
        return "its weights are not a float32 constant [O, I] in the default format"
    if len(s.shape) != 1 or s.shape[0] not in (1, weights.shape[1]):
        return f"the MUL's constant {list(s.shape)} is not one value or one per input feature ({weights.shape[1]})"
    if x.shape != mul.outputs[0].shape or not x.shape or x.shape[-1] != weights.shape[1]:
        return "the MUL broadcasts its input, or its last axis is not the layer's input features"
    return None


def _per_input(s, features: int) -> np.ndarray:
    return np.broadcast_to(s.const_data.astype(np.float64), (features,))
