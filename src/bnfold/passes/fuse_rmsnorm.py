"""fuse_rmsnorm: an RMS norm written out becomes one Circle RMS_NORM (ONE's pass of that name).

    y = x · γ / √(mean(x²) + ε)           mean over the last axis, keep_dims

    square:  s = MUL(x, x) | POW(x, 2) | SQUARE(x)
    then:    m = MEAN(s, axis -1, keep_dims);  a = ADD(m, ε)
    root:    n = MUL(x, RSQRT(a)) | MUL(x, POW(a, -0.5)) | DIV(x, SQRT(a)) | DIV(x, POW(a, 0.5))
    gamma:   y = MUL(n, γ) (either side; γ of C values or one), or y = n (γ = 1)
    after:   x -> RMS_NORM(γ, epsilon = ε) -> y

ONE matches the first square and root (MUL, RSQRT; gamma left to fuse_mul_with_rmsnorm); the
others are how PyTorch exporters write the same function (TICO's Llama: x · rsqrt(mean(x·x) + ε),
then weight · it; x.pow(2); x / sqrt(·)), and the γ MUL right after is taken here too. The Circle
kernel (onert's) computes the same function: the sum of squares in float64, √, a division and γ,
rounded once; the written-out form rounds each op in float32. They differ by float rounding only
(measured on onert: scaled error ~1e-7), except where x² overflows float32 (|x| > 1.8e19): the
written-out form gives 0 there, the kernel the finite true value.

A LayerNorm written out (GPT-2's and BERT's as TICO exports them: c = x - mean(x), then
c · rsqrt(mean(c²) + ε) · γ, + β) holds the RMS norm of c: that part becomes RMS_NORM(c), the centring
and β stay — the same function of c.

Guards: the MEAN reduces exactly the last axis with keep_dims; ε is a finite one-element float32
constant; the square and the normalizing op read the same x; every intermediate is read only inside
the pattern and is no graph output; no fused activation on any op taken (a γ MUL with one is left
after the RMS_NORM); float32 throughout, none quantized; x of rank 2 to 4 with its last axis known;
γ a constant of C values ([C] or [1, .., C]) or one value. RMS_NORM exists only in Circle: a TFLite
model keeps the written-out form (the report's `not_folded` says so), and the target must run it
(engine/targets.py; onert 0.1.0 runs rank 3 and 4, not rank 2 — the table's "RMS_NORM:rank_2";
LiteRT has none): otherwise the report's `target.refused` says why.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine import targets
from ..engine.match import collapse, const_operand, float_const, format_lacks, is_plain_float, only_reader, scalar
from ..engine.report import PassResult
from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import INDEX_DTYPES


class Match(NamedTuple):
    x: Tensor
    ops: list[Op]  # square, MEAN, ADD, root, normalizing op (and the γ MUL), in execution order
    eps: float
    gamma: np.ndarray  # C values or one
    form: str  # "MUL·RSQRT", "DIV·SQRT", ... (the report's)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for mean in [op for op in graph.ops if op.kind == "MEAN"]:
        if not graph.contains(mean):
            continue
        core = _core(graph, mean)
        if core is None:
            continue
        match = _complete(graph, *core)
        if isinstance(match, str):
            result.refuse_value(core[1][-1], f"the RMS norm stays: {match}")
            continue
        refusal = _not_here(graph, match)
        if refusal:
            result.refuse_value(match.ops[-1], f"the RMS norm stays: {refusal}")
            continue
        variant = "rank_2" if len(match.x.shape) == 2 else ""
        unsupported = targets.refusal(graph, "RMS_NORM", form=variant or None)
        if unsupported:
            result.not_for_target(match.ops[-1], unsupported)
            continue
        _fuse(graph, result, match)
    return result


def _core(graph: Graph, mean: Op) -> tuple[Tensor, list[Op], float, str] | None:
    """square -> MEAN(last axis) -> ADD(ε) -> root -> normalizing op, as matched from the MEAN: x, the
    ops, ε and the form; None when this MEAN is not such a norm's."""
    s = mean.input(0)
    square = None if s is None else s.producer
    x = None if square is None else _squared(square)
    if s is None or square is None or x is None or not _last_axis_mean(mean) or only_reader(graph, s) is not mean:
        return None
    add = only_reader(graph, mean.outputs[0])
    pair = None if add is None or add.kind != "ADD" else const_operand(add)
    eps = None if pair is None or pair[1] is not mean.outputs[0] else scalar(pair[0])
    if add is None or eps is None or not np.isfinite(eps):
        return None
    root = only_reader(graph, add.outputs[0])
    if root is None:
        return None
    kind = _root_kind(root, add.outputs[0])
    norm = None if kind is None else only_reader(graph, root.outputs[0])
    if kind is None or norm is None:
        return None
    r = root.outputs[0]
    if kind == "reciprocal" and not (norm.kind == "MUL" and set(norm.inputs[:2]) == {x, r} and x is not r):
        return None
    if kind == "root" and not (norm.kind == "DIV" and norm.inputs[:2] == (x, r)):
        return None
    form = f"{norm.kind}·{root.kind}" + (f"({scalar(root.input(1))})" if root.kind == "POW" else "")
    return x, [square, mean, add, root, norm], eps, form


def _squared(op: Op) -> Tensor | None:
    """x for MUL(x, x), POW(x, 2), SQUARE(x)."""
    if op.kind == "MUL" and len(op.inputs) == 2 and op.inputs[0] is op.inputs[1]:
        return op.inputs[0]
    x = op.input(0)
    if op.kind == "POW" and scalar(op.input(1)) == 2.0 and x is not None and not x.is_const:
        return x
    if op.kind == "SQUARE":
        return op.input(0)
    return None


def _root_kind(op: Op, a: Tensor) -> str | None:
    """ "reciprocal" for RSQRT(a), POW(a, -0.5); "root" for SQRT(a), POW(a, 0.5)."""
    if op.kind in ("RSQRT", "SQRT"):
        return "reciprocal" if op.kind == "RSQRT" else "root"
    if op.kind == "POW" and op.input(0) is a:
        return {-0.5: "reciprocal", 0.5: "root"}.get(scalar(op.input(1)))  # type: ignore[arg-type]
    return None


def _last_axis_mean(mean: Op) -> bool:
    x, axes = mean.input(0), mean.input(1)
    if x is None or axes is None or not axes.is_const or axes.dtype not in INDEX_DTYPES or not x.shape:
        return False
    if not getattr(mean.options, "keepDims", False):
        return False
    rank = len(x.shape)
    return {int(a) % rank for a in axes.const_data.reshape(-1)} == {rank - 1}


def _complete(graph: Graph, x: Tensor, ops: list[Op], eps: float, form: str) -> Match | str:
    """The match with its γ (the MUL after, when it takes one), or why it cannot be one RMS_NORM."""
    norm = ops[-1]
    if any(op.has_fused_activation_slot and op.fused_activation != "NONE" for op in ops):
        return "an op of it carries a fused activation"
    c = x.shape[-1] if x.shape else 0
    gamma_mul = only_reader(graph, norm.outputs[0])
    pair = None if gamma_mul is None or gamma_mul.kind != "MUL" else const_operand(gamma_mul)
    gamma = None if pair is None or pair[1] is not norm.outputs[0] else _per_channel(pair[0], c)
    if gamma_mul is not None and gamma is not None and gamma_mul.fused_activation == "NONE":
        return Match(x, [*ops, gamma_mul], eps, gamma, f"{form}·γ")
    return Match(x, ops, eps, np.ones(1, np.float32), form)


def _not_here(graph: Graph, match: Match) -> str | None:
    x, y = match.x, match.ops[-1].outputs[0]
    lacks = format_lacks(graph, "RMS_NORM")
    if lacks:
        return lacks
    if not all(is_plain_float(op.outputs[0]) for op in match.ops) or not is_plain_float(x):
        return "not float32 throughout"
    if len(x.shape) not in (2, 3, 4):
        return f"x has rank {len(x.shape)}, not 2 to 4"
    if x.signature[-1] < 1 or y.signature != x.signature:
        return "the last axis is not known, or the output's shape is not x's"
    return None


def _per_channel(t: Tensor, c: int) -> np.ndarray | None:
    """γ as C values (a [C] or [1, .., C] constant) or one value, float32; None for anything else."""
    data = float_const(t)
    if data is None or c < 1:
        return None
    if data.size == 1:
        return data.reshape(1).astype(np.float32)
    if data.size == c and data.shape[-1] == c:
        return data.reshape(c).astype(np.float32)
    return None


def _fuse(graph: Graph, result: PassResult, match: Match) -> None:
    y = match.ops[-1].outputs[0]
    gamma = graph.add_const(graph.unique_name(f"{y.name}/gamma"), match.gamma)
    options = Options("RmsNormOptions", epsilon=match.eps)
    collapse(graph, result, match.ops, [match.x, gamma], "RMS_NORM", options, epsilon=match.eps, form=match.form)
