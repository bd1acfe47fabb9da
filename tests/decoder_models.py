"""Small decoder-block nets for the transformer passes' tests (fuse_rmsnorm, fuse_rope, ...), and the
check they share: the original in its runtime (onert for Circle, LiteRT for TFLite) against the
optimized model in the same runtime, scaled error <= 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, build_copy, inputs_for
from bnfold import api
from bnfold.io.formats import CIRCLE, TFLITE
from bnfold.recipe.chef import build
from bnfold.values import litert, onert

SCALED = 1e-5
BY_CONSTANT_SHAPE = [3, 4, 6]  # max |a - b| / max |a|: the bar for "equal"


def rms_net(
    shape=(1, 5, 24),
    *,
    square: str = "MUL",
    root: str = "RSQRT",
    gamma: str | None = "after",
    axis: int = -1,
    keep_dims: bool = True,
    norm_act: str = "NONE",
    gamma_shape=None,
    extra_output: str | None = None,
) -> Net:
    """x -> EXP-free RMS norm written out -> y: square MUL(x, x) | POW(x, 2) | SQUARE(x); root RSQRT |
    SQRT (then DIV) | POW-0.5 | POW0.5 (then DIV); gamma "after" (MUL(n, γ)), "before" (MUL(γ, n)) or None."""
    n = Net(seed=7)
    x = n.input("x", shape)
    rank = len(shape)
    c = shape[-1]
    reduced = (
        [1 if i == axis % rank else d for i, d in enumerate(shape)]
        if keep_dims
        else [d for i, d in enumerate(shape) if i != axis % rank]
    )
    if square == "MUL":
        s = n.op("MUL", [x, x], "square", shape)
    elif square == "POW":
        s = n.op("POW", [x, n.const("two", [], values=[2.0])], "square", shape)
    else:
        s = n.op("SQUARE", [x], "square", shape)
    m = n.op(
        "MEAN",
        [s, n.tensor("axis", [1], "INT32", {"kind": "explicit", "values": [axis]})],
        "mean",
        reduced,
        keep_dims=keep_dims,
    )
    a = n.op("ADD", [m, n.const("eps", [], values=[1e-6])], "plus_eps", reduced)
    if root == "RSQRT":
        r = n.op("RSQRT", [a], "root", reduced)
    elif root == "SQRT":
        r = n.op("SQRT", [a], "root", reduced)
    else:
        r = n.op("POW", [a, n.const("half", [], values=[float(root[3:])])], "root", reduced)
    if root in ("SQRT", "POW0.5"):
        y = n.op("DIV", [x, r], "normed", shape, fused_activation_function=norm_act)
    else:
        y = n.op("MUL", [x, r], "normed", shape, fused_activation_function=norm_act)
    if gamma is not None:
        g = n.const("gamma", gamma_shape or [c], low=0.5, high=1.5)
        y = n.op("MUL", [y, g] if gamma == "after" else [g, y], "y", shape)
    n.outputs = [y] + ([extra_output] if extra_output else [])
    return n


def rope_net(
    shape=(1, 2, 3, 8),
    *,
    table_shape=None,
    mode: str = "half",
    slicer: str = "STRIDED_SLICE",
    swap_halves: bool = False,
    extra_output: str | None = None,
    scale: float | None = None,
    scale_act: str = "NONE",
    scale_vector: list[float] | None = None,
    negation: str = "NEG",
    equal_rows: bool = False,
) -> Net:
    """y = x·cos + rotate(x)·sin, rotate the half rotation (Llama) or the interleaved one (GPT-J); the
    tables one row ([1, 1, 1, D]) unless `table_shape` says otherwise (`equal_rows`: its rows all one)."""
    n = Net(seed=11)
    x = n.input("x", shape)
    d, half = shape[-1], shape[-1] // 2
    table = list(table_shape or [1, 1, 1, d])
    rng = np.random.default_rng(5)
    angles = np.broadcast_to(rng.uniform(0, 6.28, table[-1]), table) if equal_rows else rng.uniform(0, 6.28, table)
    cos = n.const("cos", table, values=np.cos(angles).astype(np.float32).ravel().tolist())
    sin = n.const("sin", table, values=np.sin(angles).astype(np.float32).ravel().tolist())
    xc = n.op("MUL", [x, cos], "x_cos", shape)
    part = [*shape[:-1], half]
    if mode == "half":
        lo_hi = ((0, half), (half, d)) if not swap_halves else ((half, d), (0, half))
        parts = []
        for name, (b, e) in zip(("lower", "upper"), lo_hi):
            begin = [0] * (len(shape) - 1) + [b]
            if slicer == "STRIDED_SLICE":
                end = [*shape[:-1], e]
                parts.append(
                    n.op(
                        "STRIDED_SLICE",
                        [
                            x,
                            n.ints(f"{name}_b", begin),
                            n.ints(f"{name}_e", end),
                            n.ints(f"{name}_s", [1] * len(shape)),
                        ],
                        name,
                        part,
                    )
                )
            else:
                parts.append(n.op("SLICE", [x, n.ints(f"{name}_b", begin), n.ints(f"{name}_z", part)], name, part))
        if negation == "NEG":
            neg = n.op("NEG", [parts[1]], "neg_upper", part)
        else:  # litert-torch's negation
            neg = n.op("MUL", [parts[1], n.const("minus_one", [], values=[-1.0])], "neg_upper", part)
        rot = n.op("CONCATENATION", [neg, parts[0]], "rotated", shape, axis=-1)
    else:
        strides = [1] * (len(shape) - 1) + [2]
        even = n.op(
            "STRIDED_SLICE",
            [x, n.ints("even_b", [0] * len(shape)), n.ints("even_e", list(shape)), n.ints("even_s", strides)],
            "even",
            part,
        )
        odd = n.op(
            "STRIDED_SLICE",
            [x, n.ints("odd_b", [0] * (len(shape) - 1) + [1]), n.ints("odd_e", list(shape)), n.ints("odd_s", strides)],
            "odd",
            part,
        )
        neg = n.op("NEG", [odd], "neg_odd", part)
        packed = n.op("PACK", [neg, even], "packed", [*part, 2], axis=len(shape), values_count=2)
        rot = n.op("RESHAPE", [packed, n.ints("d_shape", list(shape))], "rotated", shape, new_shape=list(shape))
    rs = n.op("MUL", [sin, rot], "rot_sin", shape)
    y = n.op("ADD", [xc, rs], "roped" if scale is not None else "y", shape)
    if scale is not None:  # the attention's d^-1/4 right after the RoPE (PyTorch's SDPA export)
        c = n.const("scale", [1] if scale_vector is None else [d], values=scale_vector or [scale])
        y = n.op("MUL", [y, c], "y", shape, fused_activation_function=scale_act)
    n.outputs = [y] + ([extra_output] if extra_output else [])
    return n


def by_constant_net(kind, ones_shape=(6,), *, value=1.0, ones_first=False, act="NONE") -> Net:
    n = Net(seed=19)
    n.input("x", BY_CONSTANT_SHAPE)
    h = n.op("EXP", ["x"], "h", BY_CONSTANT_SHAPE)
    ones = n.const("ones", list(ones_shape), values=[value] * int(np.prod(ones_shape)))
    out = list(np.broadcast_shapes(tuple(BY_CONSTANT_SHAPE), tuple(ones_shape)))
    inputs = [ones, h] if ones_first else [h, ones]
    a = n.op(kind, inputs, "a", out, fused_activation_function=act)
    n.outputs = [n.op("TANH", [a], "y", out)]
    return n


def run_in(model, xs):
    """The model's outputs in the runtime of its format (Circle: onert, TFLite: LiteRT)."""
    if model.format is CIRCLE:
        return onert.Session(build_copy(model))(xs)
    return litert.run(build_copy(model), xs)


def scaled_error(want, have) -> float:
    worst = max(float(np.max(np.abs(w.astype(np.float64) - h))) for w, h in zip(want, have))
    scale = max(float(np.max(np.abs(w))) for w in want)
    return worst / scale if scale else worst


def optimized(net: Net, passes, *, fmt=CIRCLE, target: str | None = None):
    """(original, optimized model, report dict) with `passes` made for `target` (None: the format's)."""
    original, model = build(net.recipe(), fmt), build(net.recipe(), fmt)
    report = api.apply_passes(model, list(passes), target=target).to_dict()
    return original, model, report


def assert_equal_in_runtime(original, model) -> float:
    """The optimized model computes the original's function in the format's runtime."""
    if model.format is CIRCLE and onert.missing():
        pytest.skip(f"onert: {onert.missing()}")
    xs = inputs_for(original)
    error = scaled_error(run_in(original, xs), run_in(model, xs))
    assert error <= SCALED, error
    return error


def reasons(report: dict) -> list[str]:
    """What the report says about candidates left: not_folded and target.refused reasons."""
    return [e["reason"] for e in report.get("not_folded", [])] + [e["reason"] for e in report["target"]["refused"]]


__all__ = ["CIRCLE", "TFLITE"]  # the formats the tests build in, re-exported
