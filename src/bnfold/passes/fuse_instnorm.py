"""fuse_instnorm: instance normalization written out with MEANs becomes Circle's INSTANCE_NORM
(ONE's pass of that name, its patterns Version_1, _2 and _5).

    y = (x - m) / √(v + ε) · γ + β,   m = mean(x), v = mean((x - m)²) over the spatial axes of each
                                      (batch, channel): axes 1 .. rank-2, keep_dims

    Version_1:  r = rsqrt(v + ε); g = r · γ; y = x·g + (β - m·g)        (TF's instance norm)
    Version_5:  the same without γ (g = r)
    Version_2:  y = (x - m) / (v + ε)^0.5 · γ + β                       (POW 0.5)
    after:      x -> INSTANCE_NORM(γ, β, epsilon = ε) -> y

The squared deviation is SQUARED_DIFFERENCE(x, m). Exact up to float rounding: the same
mean, variance and scaling, summed in another order by the kernel. ONE's Version_3/_4 put ε after
the square root (√v + ε), which INSTANCE_NORM does not compute: they are not taken here.

Guards: float32 throughout, none quantized; x of rank 3 or 4 with static shape; both MEANs over
exactly axes 1 .. rank-2 with keep_dims; ε a one-element constant; γ and β constants of C values
(shape [C] or [1, .., C]; β may be a one-element constant, broadcast), C the last axis; every
intermediate read only inside the pattern and no graph output; the terminal ADD's fused
activation carried over. INSTANCE_NORM exists only in Circle (the model's format must have it),
and the target must run it with that activation (engine/targets.py): onert 0.1.0's cpu backend
fails to prepare it ("KernelGenerator: NYI for operation 'InstanceNorm'"; the written-out form
runs) and LiteRT has no such operator, so only `--target any` on a model that already holds
INSTANCE_NORM, or a runtime added to the table that runs it (ONE's NPU backends), gets one; the
report's `target.refused` says why it was not made.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import const_operand, float_const, format_lacks, is_plain_float, only_reader, scalar
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import FUSED_ACTIVATIONS, INDEX_DTYPES


def run(graph: Graph) -> PassResult:
    result = PassResult()
    # a model written as TFLite cannot hold one: its instance norms are matched only to say so
    no_kind = format_lacks(graph, "INSTANCE_NORM")
    for mean in [op for op in graph.ops if op.kind == "MEAN"]:
        if not graph.contains(mean) or not _spatial_mean(mean):
            continue
        matches = (_version_1_or_5(graph, mean), _version_2(graph, mean))
        match = next((m for m in matches if isinstance(m, tuple)), None)
        if match is None:
            why = next((m for m in matches if isinstance(m, str)), None)
            if why:
                result.refuse_value(mean, why)
            continue
        ops, eps, gamma, beta, terminal = match
        x, y = mean.operand(0), terminal.outputs[0]
        if not all(is_plain_float(op.outputs[0]) for op in ops) or y.shape != x.shape:
            result.refuse_value(terminal, f"not float32 throughout, or {y.name!r} is not {x.name!r}'s shape")
            continue
        c = x.shape[-1]
        gamma_c = np.ones(c, np.float32) if gamma is None else _per_channel(gamma, c)
        beta_c = _per_channel(beta, c)
        if gamma_c is None or beta_c is None:
            result.refuse_value(terminal, f"γ or β is no float32 constant of {c} channels (or one value)")
            continue
        if no_kind:
            result.refuse_value(terminal, no_kind)
            continue
        unsupported = targets.refusal(graph, "INSTANCE_NORM", terminal.fused_activation)
        if unsupported:
            result.not_for_target(terminal, unsupported)
            continue
        _fuse(graph, result, ops, x, eps, gamma_c, beta_c, terminal)
    return result


def _fuse(
    graph: Graph,
    result: PassResult,
    ops: list[Op],
    x: Tensor,
    eps: float,
    gamma: np.ndarray,
    beta: np.ndarray,
    terminal: Op,
) -> None:
    y = terminal.outputs[0]
    g = graph.add_const(graph.unique_name(f"{y.name}/gamma"), gamma)
    b = graph.add_const(graph.unique_name(f"{y.name}/beta"), beta)
    act = FUSED_ACTIVATIONS.index(terminal.fused_activation)
    result.fold(terminal, ops, into=[], epsilon=eps)
    for op in ops:
        graph.remove_op(op)
    options = Options("InstanceNormOptions", epsilon=eps, fusedActivationFunction=act)
    result.made(graph.add_op("INSTANCE_NORM", [x, g, b], [y], options, after=terminal))


def _spatial_mean(mean: Op) -> bool:
    """MEAN with keep_dims over exactly axes 1 .. rank-2 of a static float32 rank-3/4 input."""
    x, axes = mean.input(0), mean.input(1)
    if x is None or not is_plain_float(x) or len(x.shape) not in (3, 4) or min(x.signature) < 0:
        return False
    if (
        axes is None
        or not axes.is_const
        or axes.dtype not in INDEX_DTYPES
        or not getattr(mean.options, "keepDims", False)
    ):
        return False
    rank = len(x.shape)
    return sorted({int(a) % rank for a in axes.const_data.reshape(-1)}) == list(range(1, rank - 1))


def _reader(graph: Graph, t: Tensor, kind: str) -> Op | None:
    op = only_reader(graph, t)
    return op if op is not None and op.kind == kind else None


def _variance_plus_eps(graph: Graph, x: Tensor, m: Tensor, sqd: Op) -> tuple[list[Op], float] | None:
    """SQUARED_DIFFERENCE(x, m) -> MEAN -> ADD(ε): the ops and ε."""
    if sqd.kind != "SQUARED_DIFFERENCE" or set(sqd.inputs[:2]) != {x, m} or sqd.inputs[0] is sqd.inputs[1]:
        return None
    var = _reader(graph, sqd.outputs[0], "MEAN")
    add = None if var is None else _reader(graph, var.outputs[0], "ADD")
    if var is None or not _spatial_mean(var) or add is None or add.fused_activation != "NONE":
        return None
    pair = const_operand(add)
    eps = None if pair is None or pair[1] is not var.outputs[0] else scalar(pair[0])
    return None if eps is None or eps < 0 else ([sqd, var, add], eps)


Match = tuple[list[Op], float, Tensor | None, Tensor, Op]  # ops, ε, γ (None: ones), β, the terminal ADD


def _mean_read_elsewhere(m: Tensor) -> str:
    return f"the mean {m.name!r} is read by more than the instance norm's ops (or is a model output)"


def _version_1_or_5(graph: Graph, mean: Op) -> Match | str | None:
    """The pattern's ops and values; None when they are not the pattern, or why they cannot go."""
    x, m = mean.operand(0), mean.outputs[0]
    readers = graph.consumers(m)
    sqd = next((op for op in readers if op.kind == "SQUARED_DIFFERENCE"), None)
    if len(readers) < 2 or sqd is None:
        return None
    if len(readers) != 2 or graph.is_observed(m):
        return _mean_read_elsewhere(m)
    variance = _variance_plus_eps(graph, x, m, sqd)
    rsqrt = None if variance is None else _reader(graph, variance[0][-1].outputs[0], "RSQRT")
    if variance is None or rsqrt is None:
        return None
    ops, eps = [mean, *variance[0], rsqrt], variance[1]
    g, gamma = rsqrt.outputs[0], None
    gamma_mul = only_reader(graph, g)
    gamma_pair = None if gamma_mul is None or gamma_mul.kind != "MUL" else const_operand(gamma_mul)
    if gamma_mul is not None and gamma_pair is not None:  # Version_1
        gamma = gamma_pair[0]
        ops.append(gamma_mul)
        g = gamma_mul.outputs[0]
    g_readers = graph.consumers(g)
    if (
        len(g_readers) != 2
        or graph.is_observed(g)
        or not all(op.kind == "MUL" and g in op.inputs[:2] for op in g_readers)
    ):
        return None
    scaled_x = next((op for op in g_readers if set(op.inputs[:2]) == {x, g}), None)
    scaled_m = next((op for op in g_readers if set(op.inputs[:2]) == {m, g}), None)
    if scaled_x is None or scaled_m is None or scaled_m not in readers:
        return None
    sub = _reader(graph, scaled_m.outputs[0], "SUB")
    beta = None if sub is None else sub.input(0)
    if sub is None or beta is None or sub.input(1) is not scaled_m.outputs[0] or float_const(beta) is None:
        return None
    terminal = _reader(graph, sub.outputs[0], "ADD")
    if terminal is None or set(terminal.inputs[:2]) != {scaled_x.outputs[0], sub.outputs[0]}:
        return None
    if only_reader(graph, scaled_x.outputs[0]) is not terminal:
        return None
    ops += [scaled_x, scaled_m, sub, terminal]
    return ops, eps, gamma, beta, terminal


def _version_2(graph: Graph, mean: Op) -> Match | str | None:
    """The pattern's ops and values; None when they are not the pattern, or why they cannot go."""
    x, m = mean.operand(0), mean.outputs[0]
    readers = graph.consumers(m)
    sqd = next((op for op in readers if op.kind == "SQUARED_DIFFERENCE"), None)
    sub = next((op for op in readers if op.kind == "SUB" and op.inputs[:2] == (x, m)), None)
    if len(readers) < 2 or sqd is None or sub is None:
        return None
    if len(readers) != 2 or graph.is_observed(m):
        return _mean_read_elsewhere(m)
    variance = _variance_plus_eps(graph, x, m, sqd)
    power = None if variance is None else _reader(graph, variance[0][-1].outputs[0], "POW")
    if (
        variance is None
        or power is None
        or power.input(0) is not variance[0][-1].outputs[0]
        or scalar(power.input(1)) != 0.5
    ):
        return None
    div = _reader(graph, sub.outputs[0], "DIV")
    if (
        div is None
        or div.inputs[:2] != (sub.outputs[0], power.outputs[0])
        or only_reader(graph, power.outputs[0]) is not div
    ):
        return None
    gamma_mul = _reader(graph, div.outputs[0], "MUL")
    terminal = None if gamma_mul is None else _reader(graph, gamma_mul.outputs[0], "ADD")
    gamma_pair = None if gamma_mul is None else const_operand(gamma_mul)
    beta_pair = None if terminal is None else const_operand(terminal)
    if gamma_mul is None or terminal is None or gamma_pair is None or beta_pair is None:
        return None
    if gamma_pair[1] is not div.outputs[0] or beta_pair[1] is not gamma_mul.outputs[0]:
        return None
    ops = [mean, sub, *variance[0], power, div, gamma_mul, terminal]
    if any(op.fused_activation != "NONE" for op in ops[:-1] if op.has_fused_activation_slot):
        return None
    return ops, variance[1], gamma_pair[0], beta_pair[0], terminal


def _per_channel(t: Tensor, c: int) -> np.ndarray | None:
    """The C values of a per-channel constant ([C] or [1, .., C]), or a one-element one repeated."""
    data = float_const(t)
    if data is None:
        return None
    if data.size == 1:
        return np.full(c, data.reshape(-1)[0], np.float32)
    if data.shape[-1] != c or data.size != c:
        return None
    return data.reshape(c).astype(np.float32)
