"""fuse_add_to_fullyconnected_bias: an ADD of a per-feature constant before FULLY_CONNECTED goes
into the layer's bias (ONE's pass of that name).

    before:  x -> ADD(x, s) -> a -> FULLY_CONNECTED(a, W, b) -> y
    after:   x -> FULLY_CONNECTED(x, W, b') -> y,   b'[o] = b[o] + Σ_i W[o,i]·s[i]

Algebra: W(x + s) + b = Wx + (Ws + b). Exact up to float rounding: Ws + b is computed once in
float64 and rounded to float32 (ONE leaves a constant FULLY_CONNECTED for fold_fully_connected to
compute in float32); the sums are then rounded in another order, so where x is close to -s the
result differs by the rounding of the larger terms, as any bias fold.
Guards (ONE's): the ADD is float32 with no fused activation, its constant has rank 1 (one value
or one per input feature, x's last axis being the layer's input axis); the weights are a float32
constant in the default format; the bias a float32 constant or absent (made then). Also: x is not
broadcast by s, the new bias is finite. An ADD whose output something else reads stays for it.
"""

from __future__ import annotations

import numpy as np

from ..engine.match import const_operand, float_const, is_plain_float, no_activation
from ..engine.report import PassResult
from ..ir.graph import Graph, Op


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for fc in [op for op in graph.ops if op.kind == "FULLY_CONNECTED"]:
        add = fc.inputs[0].producer if fc.inputs[0] is not None else None
        if add is None or add.kind != "ADD":
            continue
        reason = _refusal(fc, add)
        if reason is not None:
            result.refuse_value(fc, reason)
            continue
        pair = const_operand(add)
        assert pair is not None  # _refusal checked it
        s, x = pair
        weights, bias = fc.operand(1).const_data.astype(np.float64), fc.input(2)
        shift = weights @ np.broadcast_to(s.const_data.astype(np.float64), (weights.shape[1],))
        old = np.zeros(weights.shape[0]) if bias is None else bias.const_data.astype(np.float64)
        new_bias = (old + shift).astype(np.float32)
        if not np.all(np.isfinite(new_bias)):
            result.refuse_value(fc, "the new bias would not be finite")
            continue
        result.fold(fc, [add], constant=s.name)
        name = graph.unique_name(f"{fc.outputs[0].name}/bias" if bias is None else f"{bias.name};{s.name}")
        graph.set_const_input(fc, 2, new_bias, name)
        graph.set_input(fc, 0, x)
    return result


def _refusal(fc: Op, add: Op) -> str | None:
    pair = const_operand(add)
    if pair is None or float_const(pair[0]) is None:
        return "the ADD before it is not of a float32 constant"
    s, x = pair
    weights, bias = fc.input(1), fc.input(2)
    if not no_activation(add) or not is_plain_float(add.outputs[0]) or not is_plain_float(x):
        return "the ADD before it has a fused activation or is not float32"
    if (
        weights is None
        or float_const(weights) is None
        or getattr(fc.options, "weightsFormat", 0) != 0
        or len(weights.shape) != 2
    ):
        return "its weights are not a float32 constant [O, I] in the default format"
    if bias is not None and float_const(bias) is None:
        return "its bias is not a float32 constant"
    if len(s.shape) != 1 or s.shape[0] not in (1, weights.shape[1]):
        return f"the ADD's constant {list(s.shape)} is not one value or one per input feature ({weights.shape[1]})"
    if x.shape != add.outputs[0].shape or not x.shape or x.shape[-1] != weights.shape[1]:
        return "the ADD broadcasts its input, or its last axis is not the layer's input features"
    return None
