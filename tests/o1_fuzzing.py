"""Differential fuzzing of bnfold's -O1 passes (ONE's O1 and bnfold's decoder additions, one.py),
shared by tests/test_o1_fuzz.py (a short seeded run) and scripts/o1_fuzz.py (the long run, coverage
and shrinking).

For every O1 pass a generator plants its exact pattern, or one near miss per condition the pass
checks (the pass's guards and ONE's: a fused activation where none may be, a constant that varies
where it may not, a computed operand where a constant is needed, a wrong magic number, an
intermediate read elsewhere or seen as a graph output, ...), into a random graph: inputs of rank
0-5 with unit dimensions, int and float dtypes, ops before and after the pattern, constants of
every rank that broadcast, fused activations, negative axes, several patterns in one graph.

bnfold runs as a command (a subprocess: what a user runs, exit codes included) under three kinds
of configuration: `-O1`, `-O1 --target onert` (the output written as Circle) and each planted
pass alone (`--passes NAME`). The oracle is LiteRT on the original graph, never bnfold's own
interpreter; a TensorFlow op kept as CUSTOM (AddV2, BatchMatMulV2, MatMul, SplitV, BroadcastTo,
MaxPoolWithArgmax, Erf), which LiteRT cannot run, is replaced in the reference graph by the
builtin computing the same (its "twin", ops nothing needs then dropped); a graph whose reference
keeps a CUSTOM op has no oracle (only exit codes and loading are judged). The Circle output runs
in onert too (in a child process: onert can crash) when the original converted to Circle runs
there; one that does not is no case for onert. A graph holding an operator only Circle has
(fuse_mul_with_rmsnorm's RMS_NORM) is given to bnfold as Circle and its outputs, under every
configuration, are judged in onert; its reference spells the operator out in builtins, and
LiteRT's run of that checks onert's run of the original first.

Outcomes: "exact", "refused" (exit 1 or 2 with one line), "internal" (exit 3 or anything else),
"load_fail" / "run_fail" (the output does not load or run where the original does),
"values" (a value or shape differs), "unjudged" (no oracle: bnfold succeeded). Coverage: per pass,
how many graphs held its exact pattern and how many of those the pass changed (the report's
folds), and per near miss how often the pass fired on it.
"""

from __future__ import annotations

import copy
import json
import math
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from bn_models import Net
from layout_fuzzing import Builder, _by_ones, _close, _interpreter, _invoke, _rms_norm, _rope, _sqrt_div

BNFOLD = str(Path(sys.executable).with_name("bnfold"))
ACTS = ("NONE", "NONE", "RELU", "RELU6", "RELU_N1_TO_1")
FLOATS = ("FLOAT32",)
INTS = ("INT32", "INT64")

# ---- the graph under construction ------------------------------------------------------------


@dataclass
class G:
    """A random graph: the recipe Net, the tensors later ops may read (name -> (shape, dtype)),
    the patterns planted (pass, near miss or None), and the reference twins of CUSTOM ops."""

    rng: random.Random
    net: Net
    live: dict[str, tuple[list[int], str]] = field(default_factory=dict)
    planted: list[tuple[str, str | None]] = field(default_factory=list)
    twins: dict[str, list[dict] | None] = field(default_factory=dict)  # op's first output -> ops
    count: int = 0
    circle: bool = False  # holds an operator only Circle has: written as Circle, judged in onert

    def name(self, kind: str) -> str:
        self.count += 1
        return f"{kind.lower()}_{self.count}"

    def dims(self, rank: int, low: int = 1) -> list[int]:
        return [max(low, self.rng.choice((1, 1, 2, 3, 4, 5))) for _ in range(rank)]

    def input(self, shape, dtype="FLOAT32") -> str:
        name = self.net.tensor(self.name("in"), list(shape), dtype)
        self.net.inputs.append(name)
        self.live[name] = (list(shape), dtype)
        return name

    def src(self, rank: int | None = None, dtype="FLOAT32", low: int = 1, pred=None) -> str:
        """A live tensor of that rank and dtype (its dims at least `low`), or a new input."""
        names = [
            n
            for n, (s, d) in self.live.items()
            if d == dtype
            and (rank is None or len(s) == rank)
            and all(v >= low for v in s)
            and (pred is None or pred(s))
        ]
        if names and self.rng.random() < 0.5:
            return self.rng.choice(names)
        for _ in range(20):
            shape = self.dims(self.rng.randint(0, 5) if rank is None else rank, low)
            if pred is None or pred(shape):
                return self.input(shape, dtype)
        return self.input(self.dims(0 if rank is None else rank, low), dtype)

    def shape(self, t: str) -> list[int]:
        return list(self.live[t][0]) if t in self.live else list(self.net.shapes[t])

    def dtype(self, t: str) -> str:
        return self.live[t][1] if t in self.live else _operand(self.net, t)["dtype"]

    def op(self, kind: str, inputs, shape, dtype="FLOAT32", version: int = 1, **options) -> str:
        out = self.net.tensor(self.name(kind), list(shape), dtype)
        self.net.operations.append(
            {"type": kind, "inputs": list(inputs), "outputs": [out], "options": options, "version": version}
        )
        self.live[out] = (list(shape), dtype)
        return out

    def custom(self, code: str, inputs, outs, options=None, twin: list[dict] | None = None) -> list[str]:
        """A CUSTOM op; outs = [(shape, dtype)]; `twin` the builtin ops computing its outputs."""
        names = [self.net.tensor(self.name(code), list(s), d) for s, d in outs]
        op = {"type": "CUSTOM", "custom_code": code, "inputs": list(inputs), "outputs": names}
        if options is not None:
            op["custom_options"] = options
        self.net.operations.append(op)
        for n, (s, d) in zip(names, outs):
            self.live[n] = (list(s), d)
        self.twins[names[0]] = twin
        return names

    def const(self, shape, dtype="FLOAT32", values=None, low=-2.0, high=2.0, quant=None) -> str:
        if values is None and dtype != "FLOAT32":
            values = self.values(shape, dtype)
        name = self.net.const(self.name("k"), list(shape), values=values, low=low, high=high, dtype=dtype)
        if values is not None:
            _operand(self.net, name)["filler"]["values"] = [_plain(v) for v in np.ravel(values)]
        if quant is not None:
            _operand(self.net, name)["quant"] = quant
        return name

    def values(self, shape, dtype, low=-5, high=5) -> list:
        n = int(np.prod(shape)) if shape else 1
        if dtype in ("FLOAT32", "FLOAT16"):
            return [round(self.rng.uniform(low, high), 3) for _ in range(n)]
        if dtype == "BOOL":
            return [int(self.rng.random() < 0.5) for _ in range(n)]
        lo = 0 if dtype.startswith("UINT") else low
        return [self.rng.randint(lo, high) for _ in range(n)]

    def ints(self, values) -> str:
        return self.net.ints(self.name("c"), [int(v) for v in values])

    def scalar(self, value, dtype="FLOAT32", rank: int | None = None, limit: int = 4) -> str:
        """A one-element constant of rank 0..limit (rank None: random)."""
        r = self.rng.choice([r for r in (0, 0, 1, 1, 2, 4) if r <= limit]) if rank is None else rank
        return self.const([1] * r, dtype, values=[value])

    def act(self) -> str:
        return self.rng.choice(ACTS)


def _operand(net: Net, name: str) -> dict:
    return next(o for o in net.operands if o["name"] == name)


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _bcast_shape(rng, shape: list[int]) -> list[int]:
    """A constant shape that broadcasts to `shape` without growing it: any suffix, dims kept or 1."""
    k = rng.randint(0, len(shape))
    return [d if rng.random() < 0.5 else 1 for d in shape[len(shape) - k :]]


def _channel_shape(rng, c: int, rank: int = 4) -> list[int]:
    """A per-channel constant shape: [], [1], [C], [1,C], ... [1,..,1,C] up to `rank`."""
    return rng.choice(([], [1], [c], [c], [1, c], [1, 1, c], [1] * (rank - 1) + [c]))


# ---- context: ops before and after patterns --------------------------------------------------


def pre(g: G, t: str) -> str:
    """Sometimes an op in front of a pattern's input (same shape and dtype)."""
    shape, dtype = g.live[t]
    r = g.rng.random()
    if dtype != "FLOAT32" or r < 0.5:
        return t
    if r < 0.7:
        return g.op(g.rng.choice(("RELU", "TANH", "ABS", "NEG", "LOGISTIC")), [t], shape)
    k = g.const(_bcast_shape(g.rng, shape))
    kind = g.rng.choice(("ADD", "MUL", "SUB"))
    inputs = [k, t] if g.rng.random() < 0.3 else [t, k]
    return g.op(kind, inputs, shape, fused_activation_function=g.act())


def consume(g: G, t: str) -> str:
    """A computed reader of a (folded) constant: ADD of an input of its shape and dtype."""
    shape, dtype = g.live[t]
    if dtype not in ("FLOAT32", "INT32", "INT64"):
        t = g.op("CAST", [t], shape, "FLOAT32")
        dtype = "FLOAT32"
    x = g.input(shape, dtype)
    return g.op("ADD", [x, t] if g.rng.random() < 0.5 else [t, x], shape, dtype)


def _conv(g: G, x: str, act="NONE", *, bias=True) -> str:
    n, h, w, c = g.shape(x)
    u, k = g.rng.randint(1, 4), g.rng.choice((1, 2, 3))
    pad = g.rng.choice(("SAME", "VALID"))
    s = g.rng.choice((1, 1, 2))
    if pad == "VALID" and (h < k or w < k):
        pad = "SAME"
    oh, ow = _out_hw(h, w, k, k, s, pad)
    inputs = [x, g.const([u, k, k, c]), g.const([u]) if bias else ""]
    options = dict(padding=pad, stride_w=s, stride_h=s, fused_activation_function=act)
    return g.op("CONV_2D", inputs, [n, oh, ow, u], **options)


def _dwconv(g: G, x: str, act="NONE", *, bias=True) -> str:
    n, h, w, c = g.shape(x)
    m, k = g.rng.choice((1, 1, 2)), g.rng.choice((1, 2, 3))
    pad = "SAME" if (h < k or w < k) else g.rng.choice(("SAME", "VALID"))
    oh, ow = _out_hw(h, w, k, k, 1, pad)
    inputs = [x, g.const([1, k, k, c * m]), g.const([c * m]) if bias else ""]
    options = dict(padding=pad, stride_w=1, stride_h=1, depth_multiplier=m, fused_activation_function=act)
    return g.op("DEPTHWISE_CONV_2D", inputs, [n, oh, ow, c * m], **options)


def _tconv(g: G, x: str, act="NONE", *, bias=None) -> str:
    n, h, w, c = g.shape(x)
    u, k, s = g.rng.randint(1, 4), g.rng.choice((1, 2, 3)), g.rng.choice((1, 2))
    pad = g.rng.choice(("SAME", "VALID"))
    oh, ow = (h * s, w * s) if pad == "SAME" else ((h - 1) * s + k, (w - 1) * s + k)
    bias = g.rng.random() < 0.5 if bias is None else bias
    inputs = [g.ints([n, oh, ow, u]), g.const([u, k, k, c]), x] + ([g.const([u])] if bias else [])
    options = dict(padding=pad, stride_w=s, stride_h=s)
    version = 3 if bias else 1
    if act != "NONE":
        options["fused_activation_function"], version = act, 4
    return g.op("TRANSPOSE_CONV", inputs, [n, oh, ow, u], version=version, **options)


def _fc(g: G, x: str, act="NONE", *, weights=None, bias=True, keep=None, units=None) -> str:
    shape = g.shape(x)
    u = units or g.rng.randint(1, 5)
    keep = (g.rng.random() < 0.5 and len(shape) >= 2) if keep is None else keep
    w = weights or g.const([u, shape[-1]])
    inputs = [x, w, g.const([u]) if bias else ""]
    out = shape[:-1] + [u] if keep else [int(np.prod(shape[:-1])), u]
    return g.op("FULLY_CONNECTED", inputs, out, fused_activation_function=act, keep_num_dims=keep)


def _out_hw(h, w, kh, kw, s, pad, dh=1, dw=1):
    if pad == "SAME":
        return -(-h // s), -(-w // s)
    return (h - (kh - 1) * dh - 1) // s + 1, (w - (kw - 1) * dw - 1) // s + 1


def src4(g: G, low=1) -> str:
    return pre(g, g.src(4, low=low))


# ---- the patterns: gen(g, miss) plants the exact pattern (miss None) or one near miss ----------
# Each returns the pattern's output and its intermediates (for the generic near misses: one read
# elsewhere, one a graph output), or None when the graph offers no place for it.


def p_fold_add_v2(g: G, miss):
    dtype = "FLOAT32" if miss == "float" else g.rng.choice(INTS)
    shape = g.dims(g.rng.randint(0, 3))
    a = g.const(shape, dtype)
    b = g.input(shape, dtype) if miss == "computed" else g.const(_bcast_shape(g.rng, shape), dtype)
    (y,) = g.custom("AddV2", [a, b], [(shape, dtype)], {"T": 3}, twin=[_twin("ADD", [a, b])])
    return consume(g, y), [y]


def p_fold_cast(g: G, miss):
    src_t = g.rng.choice(("FLOAT32", "INT32", "INT64", "UINT8", "INT8", "INT16", "BOOL"))
    dst = g.rng.choice(("FLOAT32", "INT32", "INT64"))
    shape = g.dims(g.rng.randint(0, 3))
    x = g.src(len(shape), src_t) if miss == "computed" else g.const(shape, src_t, g.values(shape, src_t, -100, 100))
    y = g.op("CAST", [x], g.shape(x), dst)
    return consume(g, y), [y]


def p_fold_densify(g: G, miss):
    rows, cols = g.rng.randint(1, 4), g.rng.randint(1, 6)
    segments, indices = [0], []
    for _ in range(rows):
        indices += sorted(g.rng.sample(range(cols), g.rng.randint(0, cols)))
        segments.append(len(indices))
    if not indices:
        indices, segments = [0], [0, 1] + [1] * (rows - 1)
    w = g.const([rows, cols], "FLOAT32", g.values([len(indices)], "FLOAT32"))
    _operand(g.net, w)["sparsity"] = {
        "traversal_order": [0, 1],
        "dim_metadata": [
            {"format": "DENSE", "dense_size": rows},
            {"format": "SPARSE_CSR", "array_segments": segments, "array_indices": indices},
        ],
    }
    y = g.op("DENSIFY", [w], [rows, cols])
    return consume(g, y), [y]


def p_fold_dequantize(g: G, miss):
    shape = g.dims(g.rng.randint(0, 4))
    if g.rng.random() < 0.4:
        x = g.const(shape, "FLOAT16", g.values(shape, "FLOAT16"))
    else:
        axis = g.rng.randrange(len(shape)) if shape and g.rng.random() < 0.5 else None
        n = shape[axis] if axis is not None else 1
        quant = {"scale": [round(g.rng.uniform(0.01, 0.5), 4) for _ in range(n)], "zero_point": [0] * n}
        if axis is not None:
            quant["quantized_dimension"] = axis
        else:
            quant["zero_point"] = [g.rng.randint(-3, 3)]
        x = g.const(shape, "INT8", g.values(shape, "INT8", -100, 100), quant=quant)
    if miss == "computed":
        x = g.input(shape, "FLOAT32")
        x = g.op("QUANTIZE", [x], shape, "INT8")
        _operand(g.net, x)["quant"] = {"scale": [0.05], "zero_point": [0]}
    y = g.op("DEQUANTIZE", [x], shape)
    return consume(g, y), [y]


def p_fold_dwconv(g: G, miss):
    shape = [1] + g.dims(3)
    x = g.input(shape) if miss == "computed" else g.const(shape)
    y = _dwconv(g, x, g.act())
    if miss == "computed_filter":
        op = g.net.operations[-1]
        op["inputs"][1] = g.input(g.shape(op["inputs"][1]))
    return consume(g, y), [y]


def p_fold_fully_connected(g: G, miss):
    shape = g.dims(g.rng.randint(1, 3))
    x = g.input(shape) if miss == "computed" else g.const(shape)
    w = g.input([3, shape[-1]]) if miss == "computed_weights" else None
    y = _fc(g, x, g.act(), weights=w, bias=g.rng.random() < 0.6, units=3)
    return consume(g, y), [y]


def p_fold_gather(g: G, miss):
    dtype = g.rng.choice(("FLOAT32", "INT32"))
    shape = g.dims(g.rng.randint(1, 4))
    p = g.const(shape, dtype)
    axis = g.rng.randrange(len(shape))
    ishape = g.dims(g.rng.randint(0, 2))
    if miss == "computed":
        ix = g.op("CAST", [g.input(ishape)], ishape, "INT32")
        ix = g.op("MINIMUM", [g.op("ABS", [ix], ishape, "INT32"), g.ints([shape[axis] - 1])], ishape, "INT32")
    else:
        ix = g.const(ishape, "INT32", [g.rng.randrange(shape[axis]) for _ in range(int(np.prod(ishape)))])
    out = shape[:axis] + ishape + shape[axis + 1 :]
    given = axis - len(shape) if g.rng.random() < 0.3 else axis
    y = g.op("GATHER", [p, ix], out, dtype, axis=given)
    return consume(g, y), [y]


def p_fold_sparse_to_dense(g: G, miss):
    shape = g.dims(g.rng.randint(1, 3))
    cells = sorted(g.rng.sample(range(int(np.prod(shape))), g.rng.randint(1, min(4, int(np.prod(shape))))))
    idx = [list(np.unravel_index(c, shape)) for c in cells]
    n = len(idx)
    indices = g.const([n, len(shape)], "INT32", [int(v) for r in idx for v in r])
    if miss == "computed":
        values = g.input([n])
    else:
        vshape = [n] if g.rng.random() < 0.7 else []
        values = g.const(vshape, "FLOAT32", g.values(vshape, "FLOAT32"))
    y = g.op("SPARSE_TO_DENSE", [indices, g.ints(shape), values, g.const([], values=[0.25])], shape)
    return consume(g, y), [y]


def _chain_const(g: G, c: int, miss, spatial=None) -> str:
    if miss == "computed":
        return g.src(1, pred=lambda s: s == [c]) if c > 1 else g.input([c])
    if miss == "spatial" and spatial is not None:
        return g.const(spatial)
    return g.const(_channel_shape(g.rng, c))


def _layer(g: G, kind: str, act: str):
    x = src4(g, low=1)
    return {"conv": _conv, "dw": _dwconv, "tconv": _tconv}[kind](g, x, act)


def _bn_after(kind):
    def gen(g: G, miss):
        t = _layer(g, kind, "RELU" if miss == "layer_act" else "NONE")
        shape = g.shape(t)
        spatial = [1, shape[1], shape[2], shape[3]] if shape[1] * shape[2] > 1 else None
        if miss == "spatial" and spatial is None:
            return None
        m = g.op("MUL", [t, _chain_const(g, shape[3], miss, spatial)], shape)
        y = g.op("ADD", [m, g.const(_channel_shape(g.rng, shape[3]))], shape, fused_activation_function=g.act())
        return y, [t, m]

    return gen


def _single_after(kind, op):
    def gen(g: G, miss):
        t = _layer(g, kind, "RELU" if miss == "layer_act" else "NONE")
        shape = g.shape(t)
        spatial = [1, shape[1], shape[2], 1] if shape[1] * shape[2] > 1 else None
        if miss == "spatial" and spatial is None:
            return None
        k = _chain_const(g, shape[3], miss, spatial)
        y = g.op(op, [t, k] if g.rng.random() < 0.7 else [k, t], shape, fused_activation_function=g.act())
        return y, [t]

    return gen


def _fc_then(op):
    def gen(g: G, miss):
        x = pre(g, g.src(g.rng.randint(1, 3), low=1))
        t = _fc(g, x, "RELU" if miss == "layer_act" else "NONE", bias=g.rng.random() < 0.6)
        shape = g.shape(t)
        u = shape[-1]
        if miss == "varying":
            if shape[0] == 1 and len(shape) == 2:
                return None
            k = g.const(shape[:-1] + [1])
        else:
            k = _chain_const(g, u, miss)
        y = g.op(op, [t, k] if g.rng.random() < 0.7 else [k, t], shape, fused_activation_function=g.act())
        return y, [t]

    return gen


def p_fuse_activation_function(g: G, miss):
    x = src4(g)
    shape = g.shape(x)
    first = "RELU" if miss == "incompatible" else g.rng.choice(("NONE", "NONE", "RELU", "RELU6"))
    producer = "CONCATENATION" if miss == "concat" else g.rng.choice(("ADD", "MUL", "SUB", "CONV_2D", "FC", "DIV"))
    if producer == "CONV_2D":
        p = _conv(g, x, first)
    elif producer == "FC":
        p = _fc(g, x, first)
    elif producer == "CONCATENATION":
        p = g.op("CONCATENATION", [x, x], shape[:-1] + [2 * shape[-1]], axis=-1)
    else:
        k = g.const(_bcast_shape(g.rng, shape), low=0.5) if producer == "DIV" else g.const(_bcast_shape(g.rng, shape))
        p = g.op(producer, [x, k], shape, fused_activation_function=first)
    kind = {"tanh": "TANH", "incompatible": "RELU_N1_TO_1"}.get(miss, g.rng.choice(("RELU", "RELU6", "RELU_N1_TO_1")))
    return g.op(kind, [p], g.shape(p)), [p]


def p_fuse_mul_with_div(g: G, miss):
    x = pre(g, g.src(None))
    shape = g.shape(x)
    m_val = 0.0 if miss == "zero_divisor" else round(g.rng.uniform(0.5, 3), 3) * g.rng.choice((1, -1))
    if miss == "not_scalar":
        if not shape or shape[-1] == 1:
            return None
        m = g.const([shape[-1]], low=0.5)
    elif miss == "grows":
        m = g.const([1] * (len(shape) + 1), values=[m_val])
    else:
        m = g.scalar(m_val, rank=g.rng.choice([r for r in (0, 1, 2) if r <= max(len(shape), 0)] or [0]))
    pshape = [1] * (len(shape) + 1) if miss == "grows" else shape
    p = g.op(
        "MUL",
        [x, m] if g.rng.random() < 0.6 else [m, x],
        pshape,
        fused_activation_function=("RELU" if miss == "mul_act" else "NONE"),
    )
    d = g.scalar(round(g.rng.uniform(0.5, 3), 3), rank=0)
    if miss == "grows":
        pshape = [1] * (len(shape) + 1)
        if shape:
            pshape = [1] + shape
        g.live[p] = (pshape, "FLOAT32")
        _operand(g.net, p)["shape"] = pshape
        g.net.shapes[p] = pshape
    inputs = [d, p] if g.rng.random() < 0.5 else [p, d]
    y = g.op("DIV", inputs, pshape, fused_activation_function="RELU" if miss == "div_act" else "NONE")
    return y, [p]


def p_fuse_instnorm(g: G, miss):
    x = src4(g)
    shape = g.shape(x)
    c = shape[-1]
    axes = g.ints([1, 2])
    m = g.op("MEAN", [x, axes], [shape[0], 1, 1, c], keep_dims=True)
    sq = g.op("SQUARED_DIFFERENCE", [x, m], shape)
    v = g.op(
        "MEAN",
        [sq, g.ints([1, 2] if miss != "axes" else [1])],
        [shape[0], 1, 1 if miss != "axes" else shape[2], c],
        keep_dims=True,
    )
    ve = g.op("ADD", [v, g.scalar(1e-3)], g.shape(v))
    r = g.op("RSQRT", [ve], g.shape(v))
    gm = g.op("MUL", [r, g.const([c])], g.shape(v))
    xg = g.op("MUL", [x, gm], shape)
    mg = g.op("MUL", [m, gm], g.shape(v))
    bm = g.op("SUB", [g.const([c]), mg], g.shape(v))
    y = g.op("ADD", [xg, bm], shape, fused_activation_function=g.act())
    return y, [m, sq, v, r, gm, xg]


def p_fuse_prelu(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 4)))
    shape = g.shape(x)
    c = shape[-1]
    r = g.op("RELU", [x], shape)
    a = g.op("ABS", [x], shape)
    s = g.op("SUB", [x, a], shape)
    alpha = g.const([1] + shape if miss == "alpha_grows" else g.rng.choice(([c], [1] * (len(shape) - 1) + [c], [])))
    half = g.scalar(0.49 if miss == "not_half" else 0.5, limit=len(shape))
    oshape = [1] + shape if miss == "alpha_grows" else shape
    if g.rng.random() < 0.5:
        m1 = g.op("MUL", [s, alpha], oshape)
        m2 = g.op("MUL", [m1, half], oshape)
    else:
        m1 = g.op("MUL", [s, half], shape)
        m2 = g.op("MUL", [alpha, m1], oshape)
    y = g.op("ADD", [r, m2], oshape, fused_activation_function="RELU6" if miss == "add_act" else "NONE")
    return y, [r, a, s, m1, m2]


def p_fuse_gelu(g: G, miss):
    x = pre(g, g.src(None))
    shape = g.shape(x)
    inv = float(np.float32(1 / math.sqrt(2)))
    if miss == "not_sqrt2":
        inv = float(np.float32(0.7071))
    t = g.op("MUL", [x, g.scalar(inv, limit=len(shape))], shape)
    (e,) = g.custom("Erf", [t], [(shape, "FLOAT32")], twin=None)
    a = g.op("ADD", [e, g.scalar(1.0, limit=len(shape))], shape)
    xa = g.op("MUL", [x, a], shape)
    y = g.op(
        "MUL",
        [xa, g.scalar(0.5, limit=len(shape))],
        shape,
        fused_activation_function="RELU" if miss == "act" else "NONE",
    )
    if miss is None:
        g.twins[y] = [_twin("GELU", [x], approximate=False)]
    return y, [t, e, a, xa]


def p_fuse_mean_with_mean(g: G, miss):
    dtype = "INT32" if miss == "int" else "FLOAT32"
    x = g.src(g.rng.randint(2, 5), dtype)
    shape = g.shape(x)
    keep1 = g.rng.random() < 0.6
    keep2 = (not keep1) if miss == "keep_differs" else keep1
    a1 = sorted(g.rng.sample(range(len(shape)), g.rng.randint(1, len(shape) - 1)))
    m_shape = (
        [1 if i in a1 else d for i, d in enumerate(shape)] if keep1 else [d for i, d in enumerate(shape) if i not in a1]
    )
    rest = [i for i in range(len(m_shape)) if not (keep1 and i in a1)]
    if not rest:
        return None
    a2 = sorted(g.rng.sample(rest, g.rng.randint(1, len(rest))))
    if not keep2 and len(a2) == len(m_shape):
        return None
    y_shape = (
        [1 if i in a2 else d for i, d in enumerate(m_shape)]
        if keep2
        else [d for i, d in enumerate(m_shape) if i not in a2]
    )
    neg = lambda axes, r: [a - r if g.rng.random() < 0.3 else a for a in axes]  # noqa: E731
    m = g.op("MEAN", [x, g.ints(neg(a1, len(shape)))], m_shape, dtype, keep_dims=keep1)
    y = g.op("MEAN", [m, g.ints(neg(a2, len(m_shape)))], y_shape, dtype, keep_dims=keep2)
    return y, [m]


def p_fuse_transpose_with_mean(g: G, miss):
    """ONE's pattern: TRANSPOSE then MEAN without keep_dims, the axes kept in their order."""
    x = pre(g, g.src(g.rng.randint(3 if miss == "unsorted" else 2, 5)))
    shape = g.shape(x)
    r = len(shape)
    perm = _perm(g, r)
    kept = sorted(g.rng.sample(range(r), g.rng.randint(2 if miss == "unsorted" else 0, r - 1)))
    where = sorted(i for i, a in enumerate(perm) if a in kept)
    order = kept[::-1] if miss == "unsorted" else kept
    for i, a in zip(where, order):
        perm[i] = a
    t = g.op("TRANSPOSE", [x, g.ints(perm)], [shape[p] for p in perm])
    axes = [i for i, a in enumerate(perm) if a not in kept]
    given = [a - r if g.rng.random() < 0.3 else a for a in axes]
    keep = miss == "keep_dims"
    tshape = g.shape(t)
    out = (
        [1 if i in axes else d for i, d in enumerate(tshape)]
        if keep
        else [d for i, d in enumerate(tshape) if i not in axes]
    )
    kind = g.rng.choice(("MEAN", "MEAN", "MEAN", "SUM", "REDUCE_MAX"))
    y = g.op(kind, [t, g.ints(given)], out, keep_dims=keep)
    return y, [t]


def p_fuse_slice_with_tconv(g: G, miss):
    """ONE's pattern: a VALID TRANSPOSE_CONV cropped to what SAME padding gives (and a channel
    range); near misses crop elsewhere or slice the batch."""
    x = src4(g)
    n, h, w, c = g.shape(x)
    u, s = g.rng.randint(1, 4), g.rng.choice((1, 2))
    k = g.rng.randint(s, 3)
    oh, ow = (h - 1) * s + k, (w - 1) * s + k
    bias = [g.const([u])] if g.rng.random() < 0.5 else []
    inputs = [g.ints([n, oh, ow, u]), g.const([u, k, k, c]), x] + bias
    t = g.op(
        "TRANSPOSE_CONV", inputs, [n, oh, ow, u], version=3 if bias else 1, padding="VALID", stride_w=s, stride_h=s
    )
    c0 = g.rng.randrange(u)
    begin = [0, (k - s) // 2, (k - s) // 2, c0]
    size = [n, h * s, w * s, g.rng.randint(1, u - c0)]
    if miss == "batch":
        if n == 1:
            return None
        begin[0], size[0] = 1, n - 1
    if miss == "odd_crop":
        begin[1:3] = [g.rng.randrange(oh), g.rng.randrange(ow)]
        size[1:3] = [g.rng.randint(1, oh - begin[1]), g.rng.randint(1, ow - begin[2])]
    given = [v if g.rng.random() < 0.8 else -1 for v in size]
    out = [v if gv != -1 else d - b for v, gv, d, b in zip(size, given, (n, oh, ow, u), begin)]
    y = g.op("SLICE", [t, g.ints(begin), g.ints(given)], out)
    return y, [t]


def p_fuse_horizontal_fc_layers(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 3)))
    u = g.rng.randint(1, 4)
    keep = g.rng.random() < 0.5 and len(g.shape(x)) >= 2
    p = _fc(g, x, "RELU" if miss == "fc_act" else "NONE", bias=g.rng.random() < 0.7, keep=keep, units=u)
    w2 = g.input([u, g.shape(x)[-1]]) if miss == "computed_weights" else None
    keep2 = (not keep) if miss == "options_differ" and len(g.shape(x)) >= 3 else keep
    q = _fc(g, x, "NONE", weights=w2, bias=g.rng.random() < 0.7, keep=keep2, units=u)
    if g.shape(p) != g.shape(q):
        return None
    y = g.op("ADD", [p, q], g.shape(p), fused_activation_function=g.act())
    return y, [p, q]


def p_transform_min_max_to_relu6(g: G, miss):
    dtype = "INT32" if miss == "int" else "FLOAT32"
    x = pre(g, g.src(None, dtype))
    shape = g.shape(x)
    six, zero = (5.999 if miss == "not_six" else 6), (0.001 if miss == "not_zero" else 0)
    rank = (len(shape) + 1) if miss == "grows" else None
    k6, k0 = g.scalar(six, dtype, rank, len(shape)), g.scalar(zero, dtype, rank, len(shape))
    oshape = [1] + shape if miss == "grows" else shape
    order = [("MINIMUM", k6), ("MAXIMUM", k0)]
    if g.rng.random() < 0.5:
        order.reverse()
    (k1, c1), (k2, c2) = order
    m = g.op(k1, [x, c1] if g.rng.random() < 0.5 else [c1, x], oshape, dtype)
    y = g.op(k2, [m, c2] if g.rng.random() < 0.5 else [c2, m], oshape, dtype)
    return y, [m]


def p_transform_min_relu_to_relu6(g: G, miss):
    x = pre(g, g.src(None))
    shape = g.shape(x)
    rank = (len(shape) + 1) if miss == "grows" else None
    k6 = g.scalar(6.5 if miss == "not_six" else 6.0, rank=rank, limit=len(shape))
    oshape = [1] + shape if miss == "grows" else shape
    m = g.op("MINIMUM", [x, k6] if g.rng.random() < 0.5 else [k6, x], oshape)
    return g.op("RELU", [m], oshape), [m]


def _reshape_to(g: G, t: str, new: list[int]) -> str:
    given = list(new)
    if given and g.rng.random() < 0.3:
        given[g.rng.randrange(len(given))] = -1
    if g.rng.random() < 0.2 and given == new:
        return g.op("RESHAPE", [t], new, new_shape=given)
    return g.op("RESHAPE", [t, g.ints(given)], new)


def _regroup(g: G, shape: list[int]) -> list[int]:
    """Another shape of the same size: unit axes added or dropped, two axes merged."""
    new = list(shape)
    for _ in range(g.rng.randint(1, 2)):
        r = g.rng.random()
        if r < 0.4 and len(new) < 5:
            new.insert(g.rng.randint(0, len(new)), 1)
        elif r < 0.7 and 1 in new:
            new.remove(1)
        elif len(new) > 1:
            a = g.rng.randrange(len(new) - 1)
            new[a : a + 2] = [new[a] * new[a + 1]]
    return new


def p_remove_redundant_reshape(g: G, miss):
    dtype = g.rng.choice(("FLOAT32", "FLOAT32", "INT32"))
    x = g.src(None, dtype)
    t = _reshape_to(g, x, _regroup(g, g.shape(x)))
    g.live[t] = (g.shape(t), dtype)
    _operand(g.net, t)["dtype"] = dtype
    y = _reshape_to(g, t, _regroup(g, g.shape(t)))
    _operand(g.net, y)["dtype"] = dtype
    g.live[y] = (g.shape(y), dtype)
    return y, [t]


def _perm(g: G, rank: int) -> list[int]:
    p = list(range(rank))
    g.rng.shuffle(p)
    return p


def p_remove_redundant_transpose(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 5)))
    shape = g.shape(x)
    p = _perm(g, len(shape))
    t = g.op("TRANSPOSE", [x, g.ints(p)], [shape[i] for i in p])
    mid = t
    if g.rng.random() < 0.5:
        mid = g.op(g.rng.choice(("RELU", "ABS", "NEG")), [t], g.shape(t))
    q = [int(v) for v in np.argsort(p)] if miss != "not_inverse" else _perm(g, len(shape))
    y = g.op("TRANSPOSE", [mid, g.ints(q)], [g.shape(mid)[i] for i in q])
    return y, [t] + ([mid] if mid != t else [])


def p_forward_transpose_op(g: G, miss):
    x = pre(g, g.src(g.rng.randint(2, 5)))
    shape = g.shape(x)
    p = _perm(g, len(shape))
    t = g.op("TRANSPOSE", [x, g.ints(p)], [shape[i] for i in p])
    a = g.op(g.rng.choice(("ABS", "LOGISTIC", "NEG")), [t], g.shape(t))
    k = g.const(_bcast_shape(g.rng, g.shape(t)))
    m = g.op(g.rng.choice(("ADD", "MUL")), [a, k], g.shape(t), fused_activation_function=g.act())
    q = [int(v) for v in np.argsort(p)]
    y = g.op("TRANSPOSE", [m, g.ints(q)], shape)
    return y, [t, a, m]


def p_remove_unnecessary_add(g: G, miss):
    dtype = "INT32" if g.rng.random() < 0.3 else "FLOAT32"
    x = pre(g, g.src(None, dtype))
    shape = g.shape(x)
    kshape = [1] * (len(shape) + 1) if miss == "grows" else _bcast_shape(g.rng, shape)
    n = int(np.prod(kshape)) if kshape else 1
    vals = [0] * n
    if miss == "not_zero":
        vals[g.rng.randrange(n)] = 1
    k = g.const(kshape, dtype, vals)
    oshape = [1] + shape if miss == "grows" else shape
    act = "RELU" if miss == "act" and dtype == "FLOAT32" else "NONE"
    y = g.op("ADD", [x, k] if g.rng.random() < 0.5 else [k, x], oshape, dtype, fused_activation_function=act)
    return y, []


def p_remove_unnecessary_reshape(g: G, miss):
    x = pre(g, g.src(None))
    shape = g.shape(x)
    if miss == "flatten_fc" or (miss is None and g.rng.random() < 0.3 and len(shape) >= 2):
        if len(shape) < 2:
            return None
        flat = [shape[0], int(np.prod(shape[1:]))]
        r = _reshape_to(g, x, flat)
        return _fc(g, r, g.act(), keep=g.rng.random() < 0.5), [r]
    new = _regroup(g, shape) if miss == "changes_shape" else shape
    if new == shape and miss == "changes_shape":
        return None
    return _reshape_to(g, x, new), []


def p_remove_unnecessary_slice(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 5), g.rng.choice(("FLOAT32", "INT32"))))
    shape, dtype = g.live[x]
    begin = [0] * len(shape)
    size = [d if g.rng.random() < 0.6 else -1 for d in shape]
    out = list(shape)
    if miss == "not_whole":
        axes = [i for i, d in enumerate(shape) if d > 1]
        if not axes:
            return None
        a = g.rng.choice(axes)
        begin[a], size[a], out[a] = 1, shape[a] - 1, shape[a] - 1
    return g.op("SLICE", [x, g.ints(begin), g.ints(size)], out, dtype), []


def p_remove_unnecessary_strided_slice(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 5)))
    shape = g.shape(x)
    r = len(shape)
    begin = [g.rng.choice((0, -d)) for d in shape]
    end = [g.rng.choice((d, d + 3, 2**30)) for d in shape]
    bmask = g.rng.randrange(1 << r) if g.rng.random() < 0.4 else 0
    emask = g.rng.randrange(1 << r) if g.rng.random() < 0.4 else 0
    strides = [1] * r
    out = list(shape)
    if miss in ("stride2", "not_whole"):
        axes = [i for i, d in enumerate(shape) if d > 1]
        if not axes:
            return None
        a = g.rng.choice(axes)
        if miss == "stride2":
            strides[a], out[a] = 2, (shape[a] + 1) // 2
        else:
            begin[a], bmask, out[a] = 1, bmask & ~(1 << a), shape[a] - 1
    inputs = [x, g.ints(begin), g.ints(end), g.ints(strides)]
    return g.op("STRIDED_SLICE", inputs, out, begin_mask=bmask, end_mask=emask), []


def p_remove_unnecessary_split(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 4)))
    shape = g.shape(x)
    a = g.rng.randrange(len(shape))
    if miss == "two_parts":
        if shape[a] % 2:
            return None
        half = list(shape)
        half[a] //= 2
        outs = [g.net.tensor(g.name("split"), half) for _ in range(2)]
        g.net.operations.append(
            {"type": "SPLIT", "inputs": [g.ints([a]), x], "outputs": outs, "options": {"num_splits": 2}, "version": 1}
        )
        for o in outs:
            g.live[o] = (half, "FLOAT32")
        return outs[0], []
    if g.rng.random() < 0.5:
        y = g.net.tensor(g.name("split"), shape)
        g.net.operations.append(
            {"type": "SPLIT", "inputs": [g.ints([a - len(shape)]), x], "outputs": [y], "options": {"num_splits": 1}}
        )
    else:
        y = g.net.tensor(g.name("splitv"), shape)
        g.net.operations.append(
            {
                "type": "SPLIT_V",
                "inputs": [x, g.ints([shape[a]]), g.ints([a])],
                "outputs": [y],
                "options": {"num_splits": 1},
            }
        )
    g.live[y] = (shape, "FLOAT32")
    return y, []


def p_common_subexpression_elimination(g: G, miss):
    x = pre(g, g.src(None))
    shape = g.shape(x)
    form = g.rng.randrange(3)
    if form == 0:
        kind = g.rng.choice(("RELU", "ABS"))
        outs = [g.op(kind, [x], shape) for _ in range(2)]
    elif form == 1:
        vals = g.values(shape, "FLOAT32")
        twin = list(vals)
        if miss == "other_const":
            twin[0] += 1
        act = "RELU" if miss == "other_options" else "NONE"
        outs = [
            g.op("ADD", [x, g.const(shape, values=vals)], shape),
            g.op("ADD", [x, g.const(shape, values=twin)], shape, fused_activation_function=act),
        ]
    else:
        if len(shape) < 2:
            return None
        p = [1, 0] + list(range(2, len(shape)))
        outs = [g.op("TRANSPOSE", [x, g.ints(p)], [shape[j] for j in p]) for _ in range(2)]
    a, b = outs
    y = g.op("SUB", [a, b], g.shape(a))
    return y, outs


def p_resolve_customop_add(g: G, miss):
    dtype = g.rng.choice(("FLOAT32", "INT32", "INT64"))
    a = pre(g, g.src(None, dtype))
    shape = g.shape(a)
    if g.rng.random() < 0.3:
        b = g.input(_bcast_shape(g.rng, shape), dtype)
    else:
        b = g.const(_bcast_shape(g.rng, shape), dtype)
    bshape = g.shape(b)
    out = list(np.broadcast_shapes(tuple(shape), tuple(bshape)))
    if g.rng.random() < 0.3:  # a BroadcastTo feeding one operand
        to = list(out)
        if g.rng.random() < 0.3 and len(to) < 5:
            to = [1] + to
        twin = {**_twin("BROADCAST_TO", [b, None]), "version": 2}  # LiteRT has no version 1 kernel
        (bb,) = g.custom("BroadcastTo", [b, g.ints(to)], [(to, dtype)], twin=[twin])
        g.twins[bb][0]["inputs"][1] = g.net.operations[-1]["inputs"][1]
        b, out = bb, list(np.broadcast_shapes(tuple(shape), tuple(to)))
    (y,) = g.custom("AddV2", [a, b], [(out, dtype)], {"T": 1}, twin=[_twin("ADD", [a, b])])
    return y, []


def p_resolve_customop_batchmatmul(g: G, miss):
    batch = g.dims(g.rng.randint(0, 2))
    m, k, u = g.rng.randint(1, 4), g.rng.randint(1, 4), g.rng.randint(1, 4)
    adj_x, adj_y = g.rng.random() < 0.5, g.rng.random() < 0.5
    x = g.input(batch + ([k, m] if adj_x else [m, k]))
    y_batch = batch[g.rng.randint(0, len(batch)) :]
    y = (
        g.const(y_batch + ([u, k] if adj_y else [k, u]))
        if g.rng.random() < 0.4
        else g.input(y_batch + ([u, k] if adj_y else [k, u]))
    )
    opts = {"adj_x": adj_x, "adj_y": adj_y, "T": 1}
    if miss == "int_options":
        opts = {"adj_x": int(adj_x), "adj_y": 2 if adj_y else 0, "T": 1}
    twin = [_twin("BATCH_MATMUL", [x, y], adj_x=adj_x, adj_y=adj_y)]
    (z,) = g.custom("BatchMatMulV2", [x, y], [(batch + [m, u], "FLOAT32")], opts, twin=twin)
    return z, []


def p_resolve_customop_matmul(g: G, miss):
    m, k, u = g.rng.randint(1, 4), g.rng.randint(1, 4), g.rng.randint(1, 4)
    ta, tb = g.rng.random() < 0.5, g.rng.random() < 0.5
    lead = [2] if miss == "rank3" else []
    a = g.input(lead + ([k, m] if ta else [m, k]))
    bshape = lead + ([u, k] if tb else [k, u])
    b = g.const(bshape) if g.rng.random() < 0.5 else g.input(bshape)
    twin = [_twin("BATCH_MATMUL", [a, b], adj_x=ta, adj_y=tb)]
    opts = {"transpose_a": ta, "transpose_b": tb, "T": 1}
    (y,) = g.custom("MatMul", [a, b], [(lead + [m, u], "FLOAT32")], opts, twin=twin)
    return y, []


def p_resolve_customop_max_pool_with_argmax(g: G, miss):
    x = src4(g)
    n, h, w, c = g.shape(x)
    kh, kw = g.rng.randint(1, min(h, 3)), g.rng.randint(1, min(w, 3))
    sh, sw = g.rng.randint(1, 2), g.rng.randint(1, 2)
    pad = g.rng.choice(("SAME", "VALID"))
    oh, ow = _out_hw(h, w, kh, kw, sh, pad) if pad == "VALID" else (-(-h // sh), -(-w // sw))
    if pad == "VALID":
        ow = (w - kw) // sw + 1
        oh = (h - kh) // sh + 1
    out = [n, oh, ow, c]
    options = {"ksize": [1, kh, kw, 1], "strides": [1, sh, sw, 1], "padding": pad}
    options["include_batch_in_index"] = g.rng.random() < 0.5
    pool = _twin("MAX_POOL_2D", [x], padding=pad, stride_w=sw, stride_h=sh, filter_width=kw, filter_height=kh)
    m, idx = g.custom(
        "MaxPoolWithArgmax", [x], [(out, "FLOAT32"), (out, g.rng.choice(("INT32", "INT64")))], options, twin=[pool]
    )
    if g.rng.random() < 0.5:
        g.net.outputs.append(idx)  # then the reference, which has no indices, is no oracle
    del g.live[idx]
    return m, []


def p_resolve_customop_splitv(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 4), low=2))
    shape = g.shape(x)
    a = g.rng.randrange(len(shape))
    cut = g.rng.randint(1, shape[a] - 1)
    sizes = [cut, shape[a] - cut]
    given = list(sizes)
    if g.rng.random() < 0.3:
        given[g.rng.randrange(2)] = -1
    dtype = g.rng.choice(("INT32", "INT64"))
    s = g.const([2], dtype, given)
    axis = g.const([] if g.rng.random() < 0.5 else [1], dtype, [a - len(shape) if g.rng.random() < 0.3 else a])
    outs = [(shape[:a] + [v] + shape[a + 1 :], "FLOAT32") for v in sizes]
    s32, a32 = g.ints(given), g.const(g.shape(axis), "INT32", [int(_operand(g.net, axis)["filler"]["values"][0])])
    twin = [{"type": "SPLIT_V", "inputs": [x, s32, a32], "outputs": None, "options": {"num_splits": 2}, "version": 1}]
    ys = g.custom("SplitV", [x, s, axis], outs, {"num_split": 2}, twin=twin)
    y = g.op("ADD", [ys[0], ys[0]], outs[0][0]) if g.rng.random() < 0.5 else ys[1]
    return y, []


def p_substitute_pack_to_reshape(g: G, miss):
    dtype = g.rng.choice(("FLOAT32", "INT32"))
    x = pre(g, g.src(g.rng.randint(0, 4), dtype))
    shape = g.shape(x)
    a = g.rng.randint(0, len(shape))
    count = 2 if miss == "two_values" else 1
    out = shape[:a] + [count] + shape[a:]
    given = a - len(shape) - 1 if g.rng.random() < 0.3 else a
    y = g.op("PACK", [x] * count, out, dtype, values_count=count, axis=given)
    return y, []


def p_substitute_padv2_to_pad(g: G, miss):
    x = src4(g, low=2)
    shape = g.shape(x)
    if miss == "not_nonneg":
        r = x
    elif g.rng.random() < 0.5:
        r = g.op(g.rng.choice(("RELU", "RELU6")), [x], shape)
    else:
        r = _conv(g, x, g.rng.choice(("RELU", "RELU6")))
    n, h, w, c = g.shape(r)
    kh, kw = g.rng.randint(1, 3), g.rng.randint(1, 3)
    pads = [
        [0, 0],
        [g.rng.randint(0, kh - 1), g.rng.randint(0, kh - 1)],
        [g.rng.randint(0, kw - 1), g.rng.randint(0, kw - 1)],
        [0, 0],
    ]
    if miss == "pad_wide":
        pads[1][g.rng.randrange(2)] = kh
    if miss == "batch_pad":
        pads[0][g.rng.randrange(2)] = 1
    if miss == "channel_pad":
        pads[3][g.rng.randrange(2)] = 1
    value = 1.0 if miss == "positive_value" else g.rng.choice((-3.4e38, -1.0, 0.0))
    padded = [d + p + q for d, (p, q) in zip((n, h, w, c), pads)]
    paddings = g.const([4, 2], "INT32", sum(pads, []))
    p = g.op("PADV2", [r, paddings, g.scalar(value, rank=g.rng.choice((0, 1)))], padded)
    pool = "SAME" if miss == "same_pool" else "VALID"
    oh, ow = _out_hw(padded[1], padded[2], kh, kw, 1, pool)
    if oh < 1 or ow < 1:
        return None
    y = g.op(
        "MAX_POOL_2D",
        [p],
        [padded[0], oh, ow, padded[3]],
        padding=pool,
        stride_w=1,
        stride_h=1,
        filter_width=kw,
        filter_height=kh,
        fused_activation_function="NONE",
    )
    return y, [p]


def p_substitute_splitv_to_split(g: G, miss):
    dtype = g.rng.choice(("FLOAT32", "INT32"))
    x = pre(g, g.src(g.rng.randint(1, 4), dtype, low=2))
    shape = g.shape(x)
    axes = [i for i, d in enumerate(shape) if d % 2 == 0]
    if not axes:
        return None
    a = g.rng.choice(axes)
    half = shape[a] // 2
    sizes = [half, half]
    outs_sizes = list(sizes)
    if miss == "unequal":
        if half < 2:
            return None
        sizes = outs_sizes = [half - 1, half + 1]
    if miss == "minus_one":
        sizes = [half, -1]
    outs = [g.net.tensor(g.name("splitv"), shape[:a] + [v] + shape[a + 1 :], dtype) for v in outs_sizes]
    g.net.operations.append(
        {
            "type": "SPLIT_V",
            "inputs": [x, g.ints(sizes), g.ints([a - len(shape) if g.rng.random() < 0.3 else a])],
            "outputs": outs,
            "options": {"num_splits": 2},
        }
    )
    for o, v in zip(outs, outs_sizes):
        g.live[o] = (shape[:a] + [v] + shape[a + 1 :], dtype)
    return outs[g.rng.randrange(2)], []


def p_substitute_squeeze_to_reshape(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 5), pred=lambda s: 1 in s))
    shape = g.shape(x)
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = [] if g.rng.random() < 0.3 else sorted(g.rng.sample(ones, g.rng.randint(1, len(ones))))
    new = [d for i, d in enumerate(shape) if (i not in dims if dims else d != 1)]
    given = [a - len(shape) if g.rng.random() < 0.3 else a for a in dims]
    return g.op("SQUEEZE", [x], new, squeeze_dims=given), []


def p_substitute_strided_slice_to_reshape(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 5), pred=lambda s: 1 in s))
    shape = g.shape(x)
    ones = [i for i, d in enumerate(shape) if d == 1]
    longs = [i for i, d in enumerate(shape) if d > 1]
    shrink_axes = g.rng.sample(ones, g.rng.randint(1, len(ones)))
    if miss == "shrink_long":
        if not longs:
            return None
        shrink_axes.append(g.rng.choice(longs))
    shrink = sum(1 << a for a in shrink_axes)
    begin = [0] * len(shape)
    end = [d if i not in shrink_axes else 1 for i, d in enumerate(shape)]
    out = [d for i, d in enumerate(shape) if i not in shrink_axes]
    inputs = [x, g.ints(begin), g.ints(end), g.ints([1] * len(shape))]
    return g.op("STRIDED_SLICE", inputs, out, shrink_axis_mask=shrink), []


def p_substitute_transpose_to_reshape(g: G, miss):
    x = pre(g, g.src(g.rng.randint(2, 5), pred=lambda s: 1 in s))
    shape = g.shape(x)
    longs = [i for i, d in enumerate(shape) if d > 1]
    for _ in range(20):
        p = _perm(g, len(shape))
        kept = [i for i in p if shape[i] > 1]
        if (kept == longs) != (miss == "moves_long"):
            break
    else:
        return None
    return g.op("TRANSPOSE", [x, g.ints(p)], [shape[i] for i in p]), []


def p_forward_reshape_to_unaryop(g: G, miss):
    x = pre(g, g.src(g.rng.randint(1, 4)))
    shape = g.shape(x)
    new = _regroup(g, shape)
    r = _reshape_to(g, x, new)
    kind = g.rng.choice(("ABS", "NEG", "LOGISTIC", "MUL", "DIV"))
    if miss == "const_not_scalar":
        if not new or new[-1] == 1:
            return None
        kind = "MUL"
    if kind in ("MUL", "DIV"):
        k = (
            g.const([new[-1]], low=0.5)
            if miss == "const_not_scalar"
            else g.scalar(round(g.rng.uniform(0.5, 2), 3), limit=len(new))
        )
        inputs = [r, k] if kind == "DIV" or g.rng.random() < 0.5 else [k, r]
        y = g.op(kind, inputs, new, fused_activation_function=g.act())
    else:
        y = g.op(kind, [r], new)
    return y, [r]


def p_replace_non_const_fc_with_batch_matmul(g: G, miss):
    x = pre(g, g.src(g.rng.randint(2, 3)))
    k = g.shape(x)[-1]
    u = g.rng.randint(1, 4)
    w = g.const([u, k]) if miss == "const_weights" else pre(g, g.input([u, k]))
    act = "TANH" if miss == "tanh" else g.rng.choice(("NONE", "RELU", "RELU6", "RELU_N1_TO_1"))
    return _fc(g, x, act, weights=w, bias=g.rng.random() < 0.5, units=u), []


def p_replace_with_fc_gelu_fc(g: G, miss):
    x = pre(g, g.src(2))
    k = g.shape(x)[-1]
    u = g.rng.randint(1, 4)
    w1 = np.array(g.values([u, k], "FLOAT32"), np.float32).reshape(u, k)
    b1 = np.array(g.values([u], "FLOAT32"), np.float32)
    s = np.float32(1 / math.sqrt(2)) * (np.float32(1.01) if miss == "not_scaled" else np.float32(1))
    f = _fc(g, x, "NONE", weights=g.const([u, k], values=w1.ravel().tolist()), bias=False, keep=False, units=u)
    g.net.operations[-1]["inputs"][2] = g.const([u], values=b1.tolist())
    w2, b2 = (w1 * s).astype(np.float32), (b1 * s).astype(np.float32)
    f2 = _fc(g, x, "NONE", weights=g.const([u, k], values=w2.ravel().tolist()), bias=False, keep=False, units=u)
    g.net.operations[-1]["inputs"][2] = g.const([u], values=b2.tolist())
    (e,) = g.custom("Erf", [f2], [(g.shape(f2), "FLOAT32")], twin=None)
    a = g.op("ADD", [e, g.scalar(1.0, limit=2)], g.shape(f))
    m = g.op("MUL", [f, a], g.shape(f))
    y = _fc(g, m, g.act(), keep=False)
    if miss is None:
        gelu = _twin("GELU", [f], approximate=False)
        gelu["outputs"] = ["__gelu_" + m]
        g.twins[m] = [gelu, _twin("MUL", ["__gelu_" + m, g.scalar(2.0, rank=0)])]
        g.net.tensor("__gelu_" + m, g.shape(f))
    return y, [f, f2, e, a, m]


def p_fuse_mul_with_rmsnorm(g: G, miss):
    """Circle's RMS_NORM, then a MUL by a constant of one value per element of the last axis (or one
    value). RMS_NORM exists only in Circle: the graph is given to bnfold as Circle and judged in onert,
    whose run of the original is checked against LiteRT on the reference, where the norm is spelt out
    (x · rsqrt(mean(x²) + ε) · γ)."""
    x = pre(g, g.src(g.rng.randint(3, 4), pred=(lambda s: s[-2] > 1) if miss == "varying" else None))
    shape = g.shape(x)
    c = shape[-1]
    if miss == "gamma_computed":
        gamma = g.input([c])
    else:
        gamma = g.const(g.rng.choice(([c], [c], [1])), low=0.5, high=1.5)
    eps = g.rng.choice((1e-6, 1e-5))
    n = g.op("RMS_NORM", [x, gamma], shape, epsilon=eps)
    g.twins[n] = _rms_norm_spelt_out(g, x, gamma, eps)
    g.circle = True
    wshape = g.rng.choice(([c], [c], [1] * g.rng.randint(1, len(shape) - 1) + [c], [1], []))
    if miss == "varying":
        wshape = [shape[-2], c]
    elif miss == "grows":
        wshape = [2] + [1] * (len(shape) - 1) + [c]
    w = g.input(wshape) if miss == "computed" else g.const(wshape, low=-1.5, high=1.5)
    act = g.rng.choice(("RELU", "RELU6", "RELU_N1_TO_1")) if miss == "act" else "NONE"
    out = list(np.broadcast_shapes(tuple(shape), tuple(wshape)))
    y = g.op("MUL", [n, w] if g.rng.random() < 0.5 else [w, n], out, fused_activation_function=act)
    return y, [n]


def _rms_norm_spelt_out(g: G, x: str, gamma: str, eps: float) -> list[dict]:
    """The builtin ops computing RMS_NORM(x, γ, ε) over the last axis, for LiteRT."""
    shape = g.shape(x)
    reduced = [*shape[:-1], 1]
    steps = [
        ("MUL", [x, x], shape, {}),
        ("MEAN", [None, g.ints([len(shape) - 1])], reduced, {"keep_dims": True}),
        ("ADD", [None, g.scalar(eps, rank=0)], reduced, {}),
        ("RSQRT", [None], reduced, {}),
        ("MUL", [x, None], shape, {}),
    ]
    ops, last = [], None
    for kind, inputs, out_shape, options in steps:
        op = _twin(kind, [last if i is None else i for i in inputs], **options)
        op["outputs"] = [g.net.tensor(g.name("rms_" + kind), out_shape)]
        last = op["outputs"][0]
        ops.append(op)
    return ops + [_twin("MUL", [last, gamma])]


def _decoder_step(step, rank=None, pred=None):
    """A pattern generator from one of tests/layout_fuzzing.py's decoder steps (bnfold's -O1 additions,
    one.py): the step, given a float32 tensor of this graph, writes its pattern as exporters do and
    draws its own variants (an RMS norm's square and root forms, γ or none; a RoPE's half or
    interleaved rotation and one table row or a row per position; a fused activation on the DIV or
    MUL; a constant of ones that broadcasts). The near misses are the common two."""

    def gen(g: G, miss):
        x = pre(g, g.src(g.rng.randint(1, 4) if rank is None else rank, pred=pred))
        b = Builder(g.rng, g.net, {x: g.shape(x)}, g.count)
        y = step(b)
        g.count = b.count  # one name counter for the graph
        made = [n for n in b.live if n != x]
        g.live.update({n: (b.live[n], "FLOAT32") for n in made})
        return None if y is None else (y, [n for n in made if n != y])

    return gen


def _twin(kind: str, inputs, **options) -> dict:
    return {"type": kind, "inputs": list(inputs), "outputs": None, "options": options, "version": 1}


COMMON = ("read_elsewhere", "graph_output")
# pass -> (generator, its near misses beyond the common two)
PATTERNS = {
    "fold_add_v2": (p_fold_add_v2, ("float", "computed")),
    "fold_cast": (p_fold_cast, ("computed",)),
    "fold_densify": (p_fold_densify, ()),
    "fold_dequantize": (p_fold_dequantize, ("computed",)),
    "fold_dwconv": (p_fold_dwconv, ("computed", "computed_filter")),
    "fold_fully_connected": (p_fold_fully_connected, ("computed", "computed_weights")),
    "fold_gather": (p_fold_gather, ("computed",)),
    "fold_sparse_to_dense": (p_fold_sparse_to_dense, ("computed",)),
    "fuse_add_with_tconv": (_single_after("tconv", "ADD"), ("layer_act", "spatial", "computed")),
    "fuse_add_with_fully_connected": (_fc_then("ADD"), ("layer_act", "varying", "computed")),
    "fuse_batchnorm_with_conv": (_bn_after("conv"), ("layer_act", "spatial", "computed")),
    "fuse_batchnorm_with_dwconv": (_bn_after("dw"), ("layer_act", "spatial", "computed")),
    "fuse_batchnorm_with_tconv": (_bn_after("tconv"), ("layer_act", "spatial", "computed")),
    "fuse_activation_function": (p_fuse_activation_function, ("tanh", "concat", "incompatible")),
    "fuse_mul_with_conv": (_single_after("conv", "MUL"), ("layer_act", "spatial", "computed")),
    "fuse_mul_with_div": (p_fuse_mul_with_div, ("zero_divisor", "not_scalar", "grows", "mul_act", "div_act")),
    "fuse_mul_with_fullyconnected": (_fc_then("MUL"), ("layer_act", "varying", "computed")),
    "fuse_instnorm": (p_fuse_instnorm, ("axes",)),
    "fuse_prelu": (p_fuse_prelu, ("not_half", "alpha_grows", "add_act")),
    "fuse_gelu": (p_fuse_gelu, ("not_sqrt2", "act")),
    "fuse_mean_with_mean": (p_fuse_mean_with_mean, ("keep_differs", "int")),
    "fuse_transpose_with_mean": (p_fuse_transpose_with_mean, ("keep_dims", "unsorted")),
    "fuse_slice_with_tconv": (p_fuse_slice_with_tconv, ("batch", "odd_crop")),
    "fuse_horizontal_fc_layers": (p_fuse_horizontal_fc_layers, ("fc_act", "computed_weights", "options_differ")),
    "transform_min_max_to_relu6": (p_transform_min_max_to_relu6, ("not_six", "not_zero", "grows", "int")),
    "transform_min_relu_to_relu6": (p_transform_min_relu_to_relu6, ("not_six", "grows")),
    "remove_redundant_reshape": (p_remove_redundant_reshape, ()),
    "remove_redundant_transpose": (p_remove_redundant_transpose, ("not_inverse",)),
    "remove_unnecessary_add": (p_remove_unnecessary_add, ("not_zero", "grows", "act")),
    "remove_unnecessary_reshape": (p_remove_unnecessary_reshape, ("changes_shape", "flatten_fc")),
    "remove_unnecessary_slice": (p_remove_unnecessary_slice, ("not_whole",)),
    "remove_unnecessary_strided_slice": (p_remove_unnecessary_strided_slice, ("stride2", "not_whole")),
    "remove_unnecessary_split": (p_remove_unnecessary_split, ("two_parts",)),
    "common_subexpression_elimination": (p_common_subexpression_elimination, ("other_const", "other_options")),
    "resolve_customop_add": (p_resolve_customop_add, ()),
    "resolve_customop_batchmatmul": (p_resolve_customop_batchmatmul, ("int_options",)),
    "resolve_customop_matmul": (p_resolve_customop_matmul, ("rank3",)),
    "resolve_customop_max_pool_with_argmax": (p_resolve_customop_max_pool_with_argmax, ()),
    "resolve_customop_splitv": (p_resolve_customop_splitv, ()),
    "substitute_pack_to_reshape": (p_substitute_pack_to_reshape, ("two_values",)),
    "substitute_padv2_to_pad": (
        p_substitute_padv2_to_pad,
        ("not_nonneg", "pad_wide", "batch_pad", "channel_pad", "positive_value", "same_pool"),
    ),
    "substitute_splitv_to_split": (p_substitute_splitv_to_split, ("unequal", "minus_one")),
    "substitute_squeeze_to_reshape": (p_substitute_squeeze_to_reshape, ()),
    "substitute_strided_slice_to_reshape": (p_substitute_strided_slice_to_reshape, ("shrink_long",)),
    "substitute_transpose_to_reshape": (p_substitute_transpose_to_reshape, ("moves_long",)),
    "forward_reshape_to_unaryop": (p_forward_reshape_to_unaryop, ("const_not_scalar",)),
    "forward_transpose_op": (p_forward_transpose_op, ()),
    "replace_non_const_fc_with_batch_matmul": (p_replace_non_const_fc_with_batch_matmul, ("const_weights", "tanh")),
    "replace_with_fc_gelu_fc": (p_replace_with_fc_gelu_fc, ("not_scaled",)),
    "transform_sqrt_div_to_rsqrt_mul": (_decoder_step(_sqrt_div), ()),
    # bnfold's additions to -O1 (one.py O1_DECODER_ADDITIONS); RMS_NORM and ROPE are made in the Circle
    # output for onert only (LiteRT has neither: the TFLite configurations keep the written-out form)
    "fuse_rmsnorm": (_decoder_step(_rms_norm), ()),
    "fuse_mul_with_rmsnorm": (p_fuse_mul_with_rmsnorm, ("act", "varying", "grows", "computed", "gamma_computed")),
    "fuse_rope": (_decoder_step(_rope, 4, lambda s: s[-1] % 2 == 0), ()),
    "fuse_rsqrt": (_decoder_step(partial(_sqrt_div, over_one=True, exact=True)), ()),
    "remove_unnecessary_div": (_decoder_step(partial(_by_ones, kind="DIV", exact=True)), ()),
    "remove_unnecessary_mul": (_decoder_step(partial(_by_ones, kind="MUL", exact=True)), ()),
}


# ---- a whole graph ------------------------------------------------------------------------------


@dataclass
class Case:
    seed: int
    recipe: dict  # what bnfold is given
    reference: dict | None  # the same graph with CUSTOM ops replaced by builtins; None: no oracle
    planted: list[tuple[str, str | None]]
    fmt: str = "tflite"  # "circle" when the recipe holds an operator only Circle has (onert judges)


def o1_graph(seed: int, passes=None, max_patterns: int = 3) -> Case:
    """A random graph holding 1..max_patterns patterns of `passes` (default: every O1 pass), each
    exact or one near miss, in a random context."""
    rng = random.Random(seed)
    g = G(rng, Net(seed=seed % 2**31))
    names = list(passes or PATTERNS)
    for _ in range(rng.randint(1, max_patterns)):
        name = rng.choice(names)
        gen, misses = PATTERNS[name]
        miss = None if rng.random() < 0.5 else rng.choice(misses + COMMON)
        made = gen(g, miss)
        if made is None:
            continue
        y, inter = made
        inter = [t for t in inter if t in g.live]
        if miss in COMMON:
            if not inter:
                miss = None
            elif miss == "read_elsewhere":
                t = rng.choice(inter)
                g.op("ADD", [t, t], g.shape(t), g.dtype(t)) if g.dtype(t) != "FLOAT32" else g.op("ABS", [t], g.shape(t))
            else:
                g.net.outputs.append(rng.choice(inter))
        g.planted.append((name, miss))
        if rng.random() < 0.3 and y in g.live:
            pre(g, y)
    if not g.net.operations:
        t = g.src(None)
        g.op("ABS", [t], g.shape(t))
    read = {i for op in g.net.operations for i in op["inputs"]}
    made = [o for op in g.net.operations for o in op["outputs"] if o in g.live or o in g.net.outputs]
    outputs = list(dict.fromkeys(g.net.outputs + [o for o in made if o not in read]))
    if not outputs:
        outputs = [made[-1]]
    g.net.outputs = outputs
    recipe = g.net.recipe()
    recipe["input"] = [i for i in recipe["input"] if i in read]
    ref = reference(recipe, g.twins)
    used = read | set(recipe["input"]) | {o for op in recipe["operation"] for o in op["outputs"]}
    recipe["operand"] = [o for o in recipe["operand"] if o["name"] in used]
    return Case(seed, recipe, ref, g.planted, "circle" if g.circle else "tflite")


def reference(recipe: dict, twins: dict) -> dict | None:
    """The graph LiteRT can run: every op with a twin replaced by it, ops nothing needs dropped;
    None when a CUSTOM op or an output without a producer is left."""
    ref = copy.deepcopy(recipe)
    ops = []
    for op in ref["operation"]:
        twin = twins.get(op["outputs"][0], "none")
        if twin == "none" or twin is None:
            ops.append(op)
            continue
        for i, t in enumerate(twin):
            t = copy.deepcopy(t)
            if t["outputs"] is None:
                t["outputs"] = op["outputs"] if len(twin) == 1 or i == len(twin) - 1 else None
                if t["type"] == "MAX_POOL_2D":
                    t["outputs"] = op["outputs"][:1]
            ops.append(t)
    ref["operation"] = _live_ops(ops, ref["output"])
    made = {o for op in ref["operation"] for o in op["outputs"]}
    if any(op["type"] == "CUSTOM" for op in ref["operation"]):
        return None
    if any(o not in made and o not in ref["input"] for o in ref["output"]):
        return None
    used = {i for op in ref["operation"] for i in op["inputs"]} | made | set(ref["output"]) | set(ref["input"])
    ref["operand"] = [o for o in ref["operand"] if o["name"] in used]
    return ref


def _live_ops(ops: list[dict], outputs: list[str]) -> list[dict]:
    needed = set(outputs)
    kept = []
    for op in reversed(ops):
        if needed & set(op["outputs"]):
            kept.append(op)
            needed |= {i for i in op["inputs"] if i}
    return kept[::-1]


# ---- building and running -----------------------------------------------------------------------


def to_bytes(recipe: dict, fmt: str = "tflite") -> bytes | None:
    """The recipe as a model file's bytes, or None when the chef refuses it."""
    import io

    from bnfold.errors import BnfoldError
    from bnfold.io.formats import CIRCLE, TFLITE
    from bnfold.io.writer import serialize
    from bnfold.recipe.chef import build

    f = CIRCLE if fmt == "circle" else TFLITE
    try:
        model = build(recipe, f)
    except BnfoldError:
        return None
    out = io.BytesIO()
    serialize(model, out, f)
    return out.getvalue()


def sample_inputs(interp, seed: int) -> list[np.ndarray]:
    """normal(0, 2) floats, integers in [-5, 5] (booleans at random), in each input's dtype."""
    rng = np.random.default_rng(seed)
    xs = []
    for d in interp.get_input_details():
        dt = np.dtype(d["dtype"])
        if dt.kind == "f":
            xs.append(rng.normal(0.0, 2.0, d["shape"]).astype(dt))
        elif dt.kind == "b":
            xs.append(rng.random(d["shape"]) < 0.5)
        else:
            low = 0 if dt.kind == "u" else -5
            xs.append(rng.integers(low, 6, d["shape"]).astype(dt))
    return xs


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Floats equal up to rounding (layout_fuzzing._close), everything else exactly."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return _close(a.astype(np.float32), b.astype(np.float32))
    return bool(np.array_equal(a, b))


@dataclass
class Oracle:
    """What the reference computes on the fixed inputs (None: no oracle), or why it is no case."""

    content: bytes | None
    inputs: list[np.ndarray] | None = None
    outputs: list[np.ndarray] | None = None
    unfair: str = ""
    circle: bytes | None = None  # the original as Circle (for onert)
    ref_circle: bytes | None = None
    fmt: str = "tflite"  # the format of `content`, what bnfold is given


def with_circle(orc: Oracle, case: Case, onert) -> Oracle:
    """The oracle with the original and its reference as Circle, for onert (when installed): a
    Circle case's original is its content."""
    if orc.content is not None and onert is not None:
        orc.circle = orc.content if case.fmt == "circle" else to_bytes(case.recipe, "circle")
        orc.ref_circle = to_bytes(case.reference, "circle") if case.reference else None
    return orc


def oracle(case: Case) -> Oracle:
    """LiteRT's outputs of the reference on sample inputs; for a Circle case, whose original LiteRT
    cannot load, the reference spells its Circle operators out in builtins."""
    content = to_bytes(case.recipe, case.fmt)
    if content is None:
        return Oracle(None, unfair="chef")
    if case.reference is None:
        return Oracle(content, fmt=case.fmt)
    ref = to_bytes(case.reference)
    if ref is None:
        return Oracle(None, unfair="chef")
    try:
        preserved = _interpreter(ref, preserve=True, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
        shapes = {o["name"]: o["shape"] for o in case.reference["operand"]}
        wanted = [shapes[n] for n in case.reference["output"]]
        if [list(d["shape"]) for d in preserved.get_output_details()] != wanted:
            return Oracle(None, unfair="litert_shape")
        xs = sample_inputs(preserved, 1)
        want = _invoke(preserved, xs)
        for resolver in ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "AUTO"):  # LiteRT's own slips
            default = _interpreter(ref, resolver=resolver)
            if not all(same(a, b) for a, b in zip(want, _invoke(default, xs))):
                return Oracle(None, unfair="litert_inplace" if resolver != "AUTO" else "litert_xnnpack")
    except (ValueError, RuntimeError):
        return Oracle(None, unfair="litert")
    if any(a.dtype.kind == "f" and not np.isfinite(a).all() for a in want):
        return Oracle(None, unfair="nonfinite")
    return Oracle(content, xs, want, fmt=case.fmt)


def file_oracle(content: bytes, onert=None, reference: bytes | None = None) -> Oracle:
    """The Oracle of a model file (a repro): LiteRT's outputs on sample 1, and the model as Circle
    for onert. A Circle repro (a graph given as Circle) comes with its `reference` in TFLite, which
    LiteRT runs."""
    import io

    from bnfold.io.formats import CIRCLE
    from bnfold.io.reader import read_model
    from bnfold.io.writer import serialize

    circle = content[4:8] == CIRCLE.identifier
    preserved = _interpreter(
        reference if circle else content, preserve=True, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES"
    )
    xs = sample_inputs(preserved, 1)
    orc = Oracle(content, xs, _invoke(preserved, xs), fmt="circle" if circle else "tflite")
    if circle:
        orc.circle = content if onert is not None else None
    elif onert is not None:
        with tempfile.TemporaryDirectory(prefix="o1fuzz-") as tmp:
            path = Path(tmp) / "model.tflite"
            path.write_bytes(content)
            out = io.BytesIO()
            serialize(read_model(str(path)), out, CIRCLE)
            orc.circle = out.getvalue()
    return orc


CONFIGS = ("O1", "O1_onert")  # and "P:<pass>" for each planted pass


def bnfold_argv(config: str, src: Path, out: Path, report: Path) -> list[str]:
    argv = [BNFOLD, "optimize", str(src), str(out), "--report", str(report), "-q"]
    if config == "O1":
        return argv + ["-O1"]
    if config == "O1_onert":
        return argv + ["-O1", "--target", "onert"]
    return argv + ["--passes", config.removeprefix("P:")]


@dataclass
class Outcome:
    kind: str  # exact, refused, internal, load_fail, run_fail, values, unjudged
    detail: str = ""
    fired: dict = field(default_factory=dict)  # pass -> folds


def run_config(config: str, orc: Oracle, work: Path, onert=None) -> Outcome:
    """bnfold under `config`; a Circle output (-O1 for onert, or a Circle case under any config)
    is judged in onert, a TFLite one in LiteRT."""
    src = work / f"in.{orc.fmt}"
    src.write_bytes(orc.content)
    ext = ".circle" if config == "O1_onert" or orc.fmt == "circle" else ".tflite"
    out, report = work / f"out{ext}", work / "report.json"
    for p in (out, report):
        p.unlink(missing_ok=True)
    try:
        done = subprocess.run(bnfold_argv(config, src, out, report), capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return Outcome("internal", "timeout (120 s)")
    said = (done.stderr.strip().splitlines() or [""])[0][:300]
    if done.returncode in (1, 2):
        return Outcome("refused", said)
    if done.returncode != 0:
        return Outcome("internal", f"exit {done.returncode}: {said}")
    fired: dict = {}
    try:
        for fold in json.loads(report.read_text()).get("folds", []):
            fired[fold["pass"]] = fired.get(fold["pass"], 0) + 1
    except (OSError, ValueError, KeyError) as e:
        return Outcome("internal", f"report unreadable: {e}")
    data = out.read_bytes()
    if ext == ".circle":
        outcome = judge_onert(data, orc, work, onert)
    else:
        outcome = judge_litert(data, orc)
    outcome.fired = fired
    return outcome


def judge_litert(data: bytes, orc: Oracle) -> Outcome:
    for resolver in ("AUTO", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"):
        try:
            interp = _interpreter(data, resolver=resolver)
        except (ValueError, RuntimeError) as e:
            if orc.outputs is None:
                return Outcome("unjudged", "no oracle; output does not load either")
            if "unresolved custom op" in str(e):  # kept as in the original, which LiteRT cannot run
                return Outcome("unjudged", "a CUSTOM op kept")
            return Outcome("load_fail", f"{resolver}: " + str(e).strip().splitlines()[0][:200])
        xs = orc.inputs if orc.inputs is not None else sample_inputs(interp, 1)
        try:
            have = _invoke(interp, xs)
        except (ValueError, RuntimeError) as e:
            if orc.outputs is None:
                return Outcome("unjudged", "no oracle; output does not run either")
            return Outcome("run_fail", f"{resolver}: " + str(e).strip().splitlines()[0][:200])
        if orc.outputs is None:
            return Outcome("unjudged", "no oracle")
        bad = _differs(orc.outputs, have)
        if bad:
            return Outcome("values", f"{resolver}: {bad}")
    return Outcome("exact")


def _differs(want: list[np.ndarray], have: list[np.ndarray]) -> str:
    if len(want) != len(have):
        return f"{len(have)} outputs, want {len(want)}"
    for i, (a, b) in enumerate(zip(want, have)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {i}: {b.dtype}{list(b.shape)}, want {a.dtype}{list(a.shape)}"
        if not same(a, b):
            diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
            return f"output {i}: max|a-b| {diff:.3g} (max|a| {float(np.max(np.abs(a))) if a.size else 0:.3g})"
    return ""


def judge_onert(data: bytes, orc: Oracle, work: Path, onert) -> Outcome:
    """The Circle output in onert, where the original (as Circle, or its reference) runs there and
    computes what LiteRT does: its values must be those. (onert 0.1.0 computes some graphs wrong
    by itself, e.g. every SPLIT_V: such a graph is unjudged for onert.)"""
    if onert is None or orc.inputs is None:
        return Outcome("unjudged", "no onert or no oracle")
    base, original_runs = None, False
    for model in (orc.circle, orc.ref_circle):
        if model is not None:
            base = onert(model, orc.inputs)
            if isinstance(base, list):
                original_runs = model is orc.circle
                break
            base = None
    if base is None:
        return Outcome("unjudged", "the original does not run in onert")
    have = onert(data, orc.inputs)
    if isinstance(have, str):
        if not original_runs:  # only its builtin twin does: what bnfold left of it may not run either
            return Outcome("unjudged", "the original (with its CUSTOM ops) does not run in onert, nor the output")
        kind = "load_fail" if "load" in have else "run_fail"
        return Outcome(kind, "onert: " + have[:200])
    if _differs(orc.outputs, base):  # onert computes the original itself otherwise than LiteRT
        return Outcome("unjudged", f"onert miscomputes the original: {_differs(orc.outputs, base)}")
    bad = _differs(orc.outputs, have)
    return Outcome("values", f"onert: {bad}") if bad else Outcome("exact")


# ---- onert in a child process (it can crash on a model) ----------------------------------------


class OnertWorker:
    """onert runs in one child process (this file run as a script: it reads "MODEL INPUTS.npz
    OUT.npz" lines, answers "ok" or the error), started again when a model crashes it."""

    def __init__(self):
        self._child: subprocess.Popen | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="o1fuzz-onert-"))

    def __call__(self, data: bytes, inputs):
        model, xs, ys = self._dir / "model.circle", self._dir / "in.npz", self._dir / "out.npz"
        model.write_bytes(data)
        np.savez(xs, *inputs)
        ys.unlink(missing_ok=True)
        if self._child is None or self._child.poll() is not None:
            self._child = subprocess.Popen(
                [sys.executable, __file__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        try:
            self._child.stdin.write(f"{model} {xs} {ys}\n")
            self._child.stdin.flush()
            answer = self._child.stdout.readline().strip()
        except (BrokenPipeError, OSError):
            answer = ""
        if not answer:
            self._child.kill()
            self._child = None
            return "onert crashed (load or run)"
        if answer != "ok":
            return answer
        with np.load(ys) as f:
            return [f[f"arr_{i}"] for i in range(len(f.files))]

    def close(self):
        if self._child is not None:
            self._child.kill()


def _onert_server() -> None:
    import os

    os.environ.setdefault("NUM_THREADS", "1")
    from bnfold.errors import BnfoldError
    from bnfold.io.reader import read_model
    from bnfold.values import onert

    for line in sys.stdin:
        model, xs, ys = line.split()
        with np.load(xs) as f:
            inputs = [f[f"arr_{i}"] for i in range(len(f.files))]
        try:
            outputs = onert.Session(read_model(model))(inputs)
            np.savez(ys, *outputs)
            answer = "ok"
        except BnfoldError as e:
            answer = (str(e).splitlines() or [type(e).__name__])[0]
        print(answer.replace("\n", " "), flush=True)


def onert_available() -> bool:
    from bnfold.values import onert

    return onert.missing() is None


# ---- one graph, every config ---------------------------------------------------------------------


def configs_for(case: Case, which=("O1", "O1_onert", "alone")) -> list[str]:
    out = [c for c in CONFIGS if c in which]
    if "alone" in which:
        out += [f"P:{p}" for p in dict.fromkeys(name for name, _ in case.planted)]
    return out


def run_graph(case: Case, work: Path, onert=None, which=("O1", "O1_onert", "alone")):
    """(Oracle, {config: Outcome}) for one graph; ({}) when it is no fair case."""
    orc = oracle(case)
    if orc.content is None:
        return orc, {}
    with_circle(orc, case, onert)
    return orc, {c: run_config(c, orc, work, onert) for c in configs_for(case, which)}


FAILURES = ("internal", "load_fail", "run_fail", "values")


def fails_alike(case: Case, config: str, kind: str, work: Path, onert=None) -> bool:
    orc = oracle(case)
    if orc.content is None:
        return False
    with_circle(orc, case, onert)
    return run_config(config, orc, work, onert).kind == kind


def shrink(case: Case, config: str, kind: str, work: Path, onert=None, budget: int = 80) -> Case:
    """Drop operators (from the last) and outputs while the case fails the same way; a dropped
    operator's output, if read, is then read from a new graph input of its shape and dtype."""
    best = case
    changed = True
    while changed and budget > 0:
        changed = False
        for i in reversed(range(len(best.recipe["operation"]))):
            if budget <= 0 or i >= len(best.recipe["operation"]):
                break
            candidate = _without(best, i)
            if candidate is None:
                continue
            budget -= 1
            if fails_alike(candidate, config, kind, work, onert):
                best, changed = candidate, True
        for o in list(best.recipe["output"]):
            if len(best.recipe["output"]) < 2 or budget <= 0:
                break
            candidate = _with_outputs(best, [x for x in best.recipe["output"] if x != o])
            budget -= 1
            if candidate is not None and fails_alike(candidate, config, kind, work, onert):
                best, changed = candidate, True
    return best


def _prune(recipe: dict) -> dict | None:
    ops = _live_ops(recipe["operation"], recipe["output"])
    if not ops:
        return None
    read = {i for op in ops for i in op["inputs"]}
    made = {o for op in ops for o in op["outputs"]}
    used = read | made | set(recipe["output"])
    inputs = [i for i in recipe["input"] if i in read]
    operands = [o for o in recipe["operand"] if o["name"] in used]
    return {**recipe, "operation": ops, "input": inputs, "operand": operands}


def _with_outputs(case: Case, outputs: list[str]) -> Case | None:
    recipe = _prune({**copy.deepcopy(case.recipe), "output": outputs})
    if recipe is None:
        return None
    ref = None
    if case.reference is not None:
        ref = _prune({**copy.deepcopy(case.reference), "output": outputs})
    return Case(case.seed, recipe, ref, case.planted, case.fmt)


def _without(case: Case, index: int) -> Case | None:
    """The case without operation `index`: its outputs become graph inputs where read (when
    they are computed, not made from constants only: then the op stays)."""
    recipe = copy.deepcopy(case.recipe)
    op = recipe["operation"].pop(index)
    outs = set(op["outputs"])
    if outs & set(recipe["output"]):
        outputs = [o for o in recipe["output"] if o not in outs]
        if not outputs:
            return None
        recipe["output"] = outputs
    read = {i for o in recipe["operation"] for i in o["inputs"]}
    new_inputs = [o for o in op["outputs"] if o in read]
    recipe["input"] = recipe["input"] + new_inputs
    for o in recipe["operand"]:
        if o["name"] in new_inputs:
            o.pop("filler", None)
            o.pop("quant", None)
    pruned = _prune(recipe)
    if pruned is None:
        return None
    ref = None
    if case.reference is not None:
        ref = copy.deepcopy(case.reference)
        ref_ops = [o for o in ref["operation"] if not set(o["outputs"]) & outs]
        ref = _prune({**ref, "operation": ref_ops, "input": ref["input"] + new_inputs, "output": pruned["output"]})
        if ref is not None:
            for o in ref["operand"]:
                if o["name"] in new_inputs:
                    o.pop("filler", None)
                    o.pop("quant", None)
            ref["input"] = pruned["input"]
    return Case(case.seed, pruned, ref, case.planted, case.fmt)


def describe(recipe: dict) -> str:
    """The graph op by op, as the repro .txt files show it."""
    operands = {o["name"]: o for o in recipe["operand"]}

    def show(name: str) -> str:
        if not name:
            return "-"
        o = operands[name]
        short = {"FLOAT32": "f32", "INT32": "i32", "INT64": "i64"}.get(o["dtype"], o["dtype"].lower())
        text = f"{name}:{short}{o['shape']}"
        values = o.get("filler", {}).get("values")
        if values is not None and len(values) <= 16:
            text += f"={values}"
        if "quant" in o:
            text += f" quant={o['quant']}"
        return text

    lines = [f"input  {show(n)}" for n in recipe["input"]]
    for op in recipe["operation"]:
        kind = op["type"] + (f"[{op['custom_code']}]" if "custom_code" in op else "")
        options = {k: v for k, v in op.get("options", {}).items() if v not in (None, "NONE")}
        options.update(op.get("custom_options", {}))
        lines.append(
            f"{kind}({', '.join(show(i) for i in op['inputs'])}) {options or ''} -> {', '.join(op['outputs'])}"
        )
    lines += [f"output {n}" for n in recipe["output"]]
    return "\n".join(lines)


if __name__ == "__main__":
    _onert_server()
