"""Differential fuzzing of the layout passes, shared by tests/test_layout_fuzz.py (a small seeded
run in CI) and scripts/layout_fuzz.py (the long run, and shrinking a failure to a repro).

A case is a random legal float32 graph of the operators the layout passes move through (PyTorch-
style TRANSPOSEs around NHWC layers, RESHAPE, SQUEEZE, EXPAND_DIMS, CONCATENATION, SPLIT,
reductions, SLICE / STRIDED_SLICE, PAD, elementwise ops with constants and fused activations,
CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED, SOFTMAX; tensors with several readers, several
outputs, an output listed twice, an op nothing reads), built by the recipe chef, optimized in-process by
`bnfold.optimize` under one option set, and run in LiteRT. The oracle is LiteRT itself, never
bnfold's interpreter: the original runs with experimental_preserve_all_tensors (no buffer shared,
so its values are the graph's), the optimized model as deployed: the default interpreter (XNNPACK)
and the builtin kernels, both sharing buffers as LiteRT does. A graph LiteRT itself miscomputes
(its own default run differs from the preserved one) or that the generator got wrong (a shape
LiteRT infers otherwise) is not a case: it is counted apart.

Quantized graphs (`quantized_graph`: requantizations, QUANTIZE/DEQUANTIZE pairs, int8 layers,
TRANSPOSEs, RESHAPE/EXPAND_DIMS/SQUEEZE, MEAN and CONCATENATION of quantized tensors, dequantized
int8 weights; QUANT_OPTION_SETS: the passes for quantized graphs, the layout passes, the NCHW
conversion and O1 with them) are compared bit for bit, each resolver against the original under
the same resolver.

Outcomes: "ok", "refused" (a BnfoldError: a one-line refusal, legal for bnfold but counted),
"exit3" (an InternalError, the BnfoldError that is bnfold's bug, or anything else escaping
bnfold), "load_fail", "run_fail", "interface" (the optimized model's inputs or outputs are not
the original's, NHWC where asked), "values".
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import sys
from dataclasses import dataclass, field

import numpy as np

from bn_models import Net
from bnfold import api
from bnfold.engine.registry import QUANTIZED_GRAPH_PASSES
from bnfold.errors import BnfoldError, InternalError

C_LAYOUT = (
    "remove_redundant_transpose,forward_transpose_op,fuse_transpose_with_mean,remove_unnecessary_transpose,"
    "substitute_transpose_to_reshape,remove_redundant_reshape,remove_unnecessary_reshape"
)
# the transformer passes (the RMS norm and RoPE fusions refuse in a TFLite model, which LiteRT checks: they
# are tried for not breaking what they leave; the canonical forms rewrite)
DECODER_PASSES = (
    "remove_unnecessary_mul",
    "remove_unnecessary_div",
    "fuse_rsqrt",
    "transform_sqrt_div_to_rsqrt_mul",
    "fuse_rmsnorm",
    "fuse_mul_with_rmsnorm",
    "fuse_rope",
    "fuse_attention",  # finds the generator's attentions (_attention) and refuses each: nothing may change
)
NCHW_IO = {"convert_nchw_to_nhwc": True, "nchw_to_nhwc_input_shape": True, "nchw_to_nhwc_output_shape": True}
# ONE's other exact options whose patterns the generator makes (SUB by a constant, a depth-broadcast
# constant, MUL/ADD by a constant before FC, SOFTMAX, EXPAND_DIMS), with the default set around them
ONE_OPTIONS = (
    "replace_sub_with_add,expand_broadcast_const,fuse_mul_to_fullyconnected_weights,fuse_add_to_fullyconnected_bias,"
    "remove_duplicate_const,decompose_softmax,substitute_expand_dims_to_reshape,remove_unnecessary_cast,fold_mul,"
    "fold_reshape,fold_squeeze,fold_shape"
)
OPTION_SETS: dict[str, tuple[str | None, dict]] = {
    "default": (None, {}),
    "O1": (None, {"O1": True}),
    "c_layout": (C_LAYOUT, {}),
    "nchw": (None, {"convert_nchw_to_nhwc": True}),
    "nchw_in": (None, {"convert_nchw_to_nhwc": True, "nchw_to_nhwc_input_shape": True}),
    "nchw_out": (None, {"convert_nchw_to_nhwc": True, "nchw_to_nhwc_output_shape": True}),
    "nchw_io": (None, NCHW_IO),
    "decoder": (",".join(DECODER_PASSES), {}),
    "one_options": (None, {name: True for name in ONE_OPTIONS.split(",")} | {"O1": True}),
}
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)
ACTIVATIONS = ("NONE", "NONE", "RELU", "RELU6")


# ---- the generator ------------------------------------------------------------------------------


@dataclass
class Builder:
    """A random graph under construction: the Net and the tensors ops may read (name -> shape)."""

    rng: random.Random
    net: Net
    live: dict[str, list[int]] = field(default_factory=dict)
    count: int = 0

    def name(self, kind: str) -> str:
        self.count += 1
        return f"{kind.lower()}_{self.count}"

    def pick(self, rank: int | None = None) -> str | None:
        names = [n for n, s in self.live.items() if rank is None or len(s) == rank]
        return self.rng.choice(names) if names else None

    def out(self, kind: str, inputs, shape, **options) -> str:
        name = self.net.op(kind, inputs, self.name(kind), list(shape), **options)
        self.live[name] = list(shape)
        return name

    def ints(self, values) -> str:
        return self.net.ints(self.name("c"), [int(v) for v in values])


def _dims(rng: random.Random, rank: int) -> list[int]:
    return [rng.choice((1, 1, 2, 3, 4, 5)) for _ in range(rank)]


def _transpose(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    if len(shape) == 4 and b.rng.random() < 0.7:
        perm = b.rng.choice((TO_NCHW, TO_NHWC))
    else:
        perm = list(range(len(shape)))
        b.rng.shuffle(perm)
    return b.out("TRANSPOSE", [t, b.ints(perm)], [shape[p] for p in perm])


def _reshape(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    choice = b.rng.randrange(5)
    if choice == 0 and len(shape) > 1:  # merge two adjacent axes
        a = b.rng.randrange(len(shape) - 1)
        new = shape[:a] + [shape[a] * shape[a + 1]] + shape[a + 2 :]
    elif choice == 1 and len(shape) < 5:  # a unit axis somewhere
        a = b.rng.randrange(len(shape) + 1)
        new = shape[:a] + [1] + shape[a:]
    elif choice == 2 and 1 in shape and len(shape) > 1:  # a unit axis gone
        a = shape.index(1)
        new = shape[:a] + shape[a + 1 :]
    elif choice == 3:  # the same shape
        new = list(shape)
    else:  # to 2-D
        new = [shape[0], int(np.prod(shape[1:]))] if len(shape) > 1 else [1, shape[0]]
    given = list(new)
    if b.rng.random() < 0.3:
        given[b.rng.randrange(len(given))] = -1
    return b.out("RESHAPE", [t, b.ints(given)], new)


def _squeeze(b: Builder) -> str | None:
    units = [(n, s) for n, s in b.live.items() if 1 in s and len(s) > 1]
    if not units:
        return None
    t, shape = b.rng.choice(units)
    ones = [a for a, d in enumerate(shape) if d == 1]
    dims = [] if b.rng.random() < 0.3 else sorted(b.rng.sample(ones, b.rng.randint(1, len(ones))))
    if len(dims) == len(shape) or (not dims and len(ones) == len(shape)):
        return None
    new = [d for a, d in enumerate(shape) if (a not in dims if dims else d != 1)]
    given = [a - len(shape) if b.rng.random() < 0.3 else a for a in dims]
    return b.out("SQUEEZE", [t], new, squeeze_dims=given)


def _expand_dims(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    if len(shape) >= 5:
        return None
    a = b.rng.randint(-len(shape) - 1, len(shape))
    at = a + len(shape) + 1 if a < 0 else a
    return b.out("EXPAND_DIMS", [t, b.ints([a])], shape[:at] + [1] + shape[at:])


def _concat(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    same = [n for n, s in b.live.items() if s == shape]
    other = b.rng.choice(same)
    a = b.rng.randrange(len(shape))
    new = list(shape)
    new[a] *= 2
    axis = a - len(shape) if b.rng.random() < 0.3 else a
    return b.out("CONCATENATION", [t, other], new, axis=axis)  # LiteRT runs no fused activation on it


def _split(b: Builder) -> str | None:
    cands = [(n, s, a) for n, s in b.live.items() for a, d in enumerate(s) if d % 2 == 0]
    if not cands:
        return None
    t, shape, a = b.rng.choice(cands)
    half = list(shape)
    half[a] //= 2
    outs = [b.name("SPLIT") for _ in range(2)]
    for o in outs:
        b.net.tensor(o, half)
        b.live[o] = list(half)
    b.net.operations.append(
        {"type": "SPLIT", "inputs": [b.ints([a]), t], "outputs": outs, "options": {"num_splits": 2}, "version": 1}
    )
    return outs[0]


def _reduce(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    axes = sorted(b.rng.sample(range(len(shape)), b.rng.randint(1, len(shape))))
    keep = b.rng.random() < 0.5
    if not keep and len(axes) == len(shape):
        return None
    new = (
        [1 if a in axes else d for a, d in enumerate(shape)]
        if keep
        else [d for a, d in enumerate(shape) if a not in axes]
    )
    kind = b.rng.choice(("MEAN", "SUM", "REDUCE_MAX"))
    return b.out(kind, [t, b.ints(axes)], new, keep_dims=keep)


def _slice(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    begin = [b.rng.randrange(d) for d in shape]
    size = [b.rng.randint(1, d - s) for d, s in zip(shape, begin)]
    return b.out("SLICE", [t, b.ints(begin), b.ints(size)], size)


def _strided_slice(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    begin = [b.rng.randrange(d) for d in shape]
    end = [b.rng.randint(s + 1, d) for d, s in zip(shape, begin)]
    strides = [b.rng.choice((1, 1, 2)) for _ in shape]
    bmask = b.rng.randrange(1 << len(shape)) if b.rng.random() < 0.4 else 0
    emask = b.rng.randrange(1 << len(shape)) if b.rng.random() < 0.4 else 0
    new = []
    for a, d in enumerate(shape):
        lo = 0 if bmask >> a & 1 else begin[a]
        hi = d if emask >> a & 1 else end[a]
        new.append(len(range(lo, hi, strides[a])))
    if 0 in new:
        return None
    inputs = [t, b.ints(begin), b.ints(end), b.ints(strides)]
    return b.out("STRIDED_SLICE", inputs, new, begin_mask=bmask, end_mask=emask)


def _pad(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    pads = [[b.rng.randint(0, 1), b.rng.randint(0, 1)] for _ in shape]
    paddings = b.net.tensor(b.name("pads"), [len(shape), 2], "INT32", {"kind": "explicit", "values": sum(pads, [])})
    return b.out("PAD", [t, paddings], [d + p + q for d, (p, q) in zip(shape, pads)])


def _elementwise(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    kind = b.rng.choice(("ADD", "MUL", "SUB", "DIV"))
    form = b.rng.randrange(4)
    if form == 0 and kind == "DIV":
        kind = "MUL"  # a computed divisor may be 0: inf and nan are no test of a layout
    if form == 0:  # another tensor of the same shape (often itself)
        other = b.rng.choice([n for n, s in b.live.items() if s == shape])
    else:
        cshape = {1: [1], 2: [shape[-1]], 3: list(shape)}[form]
        if form == 3 and b.rng.random() < 0.5:
            cshape = [d if b.rng.random() < 0.5 else 1 for d in shape]
        low = 0.5 if kind == "DIV" else -2.0
        other = b.net.const(b.name("k"), cshape, low=low, high=2.0)
    inputs = [other, t] if b.rng.random() < 0.3 and kind in ("ADD", "MUL") else [t, other]
    return b.out(kind, inputs, shape, fused_activation_function=b.rng.choice(ACTIVATIONS))


def _unary(b: Builder) -> str | None:
    t = b.pick()
    return b.out(b.rng.choice(("RELU", "TANH", "ABS", "RELU6")), [t], b.live[t])


def _softmax(b: Builder) -> str | None:
    t = b.pick()
    return b.out("SOFTMAX", [t], b.live[t], beta=1.0)


def _conv(b: Builder) -> str | None:
    t = b.pick(4)
    if t is None:
        return None
    n, h, w, c = b.live[t]
    act = b.rng.choice(ACTIVATIONS)
    k = b.rng.choice((1, 3))
    if b.rng.random() < 0.5:
        u = b.rng.randint(1, 5)
        weights, bias = b.net.const(b.name("w"), [u, k, k, c]), b.net.const(b.name("b"), [u])
        options = dict(padding="SAME", stride_w=1, stride_h=1, fused_activation_function=act)
        return b.out("CONV_2D", [t, weights, bias], [n, h, w, u], **options)
    weights, bias = b.net.const(b.name("w"), [1, k, k, c]), b.net.const(b.name("b"), [c])
    options = dict(padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1, fused_activation_function=act)
    return b.out("DEPTHWISE_CONV_2D", [t, weights, bias], [n, h, w, c], **options)


def _fc(b: Builder) -> str | None:
    t = b.pick()
    shape = b.live[t]
    u = b.rng.randint(1, 5)
    keep = b.rng.random() < 0.5 and len(shape) >= 2
    weights, bias = b.net.const(b.name("w"), [u, shape[-1]]), b.net.const(b.name("b"), [u])
    new = shape[:-1] + [u] if keep else [int(np.prod(shape[:-1])), u]
    act = b.rng.choice(ACTIVATIONS)
    return b.out("FULLY_CONNECTED", [t, weights, bias], new, keep_num_dims=keep, fused_activation_function=act)


STEPS = {
    _transpose: 6,
    _reshape: 3,
    _squeeze: 2,
    _expand_dims: 1,
    _concat: 2,
    _split: 1,
    _reduce: 2,
    _slice: 1,
    _strided_slice: 1,
    _pad: 1,
    _elementwise: 4,
    _unary: 2,
    _softmax: 1,
    _conv: 2,
    _fc: 1,
}


def random_graph(seed: int, max_ops: int = 12) -> dict:
    """A recipe dict: 1-2 inputs of rank 4 (sometimes 3), 1-max_ops operators, 1-3 outputs."""
    rng = random.Random(seed)
    b = Builder(rng, Net(seed=seed))
    for i in range(rng.choice((1, 1, 2))):
        shape = _dims(rng, rng.choice((4, 4, 4, 3)))
        b.live[b.net.input(f"in{i}", shape)] = shape
    inputs = set(b.live)
    steps, weights = list(STEPS), list(STEPS.values())
    for _ in range(rng.randint(1, max_ops)):
        for _attempt in range(5):
            if rng.choices(steps, weights)[0](b) is not None:
                break
    made = [n for n in b.live if n not in inputs]
    if not made:
        _unary(b)
        made = [n for n in b.live if n not in inputs]
    read = {i for op in b.net.operations for i in op["inputs"]}
    outputs = [n for n in made if n not in read] or [made[-1]]
    extra = [n for n in made if n not in outputs]
    if extra and rng.random() < 0.4:
        outputs.append(rng.choice(extra))  # a tensor both read inside and seen outside
    if rng.random() < 0.1:
        outputs.append(rng.choice(outputs))  # one tensor listed twice
    unread = [n for n in outputs if n not in read]
    if len(set(outputs)) > 1 and unread and rng.random() < 0.2:
        outputs.remove(rng.choice(unread))  # an op nothing needs
    b.net.outputs = outputs[:4]
    return b.net.recipe()


IN_PLACE_STEPS = {_transpose: 1, _reshape: 3, _squeeze: 2, _expand_dims: 2, _elementwise: 6, _unary: 2, _softmax: 2}


def in_place_graph(seed: int, max_ops: int = 12) -> dict:
    """A recipe dict for LiteRT's buffer sharing (engine/planner.py): one input, 2-max_ops ops of
    the kinds LiteRT shares buffers for (and a few it does not), each reading one of the three
    latest tensors more often than not (so chains form, with second readers); most unread tensors
    are outputs, the rest dead ops, and sometimes a tensor read inside is an output too."""
    rng = random.Random(seed)
    b = Builder(rng, Net(seed=seed))
    shape = _dims(rng, rng.choice((4, 3, 2)))
    b.live[b.net.input("in0", shape)] = shape
    anywhere = b.pick

    def recent(rank: int | None = None) -> str | None:
        names = [n for n, s in b.live.items() if rank is None or len(s) == rank]
        return rng.choice(names[-3:]) if names and rng.random() < 0.7 else anywhere(rank)

    b.pick = recent
    steps, weights = list(IN_PLACE_STEPS), list(IN_PLACE_STEPS.values())
    for _ in range(rng.randint(2, max_ops)):
        for _attempt in range(5):
            if rng.choices(steps, weights)[0](b) is not None:
                break
    made = [n for n in b.live if n != "in0"]
    read = {i for op in b.net.operations for i in op["inputs"]}
    outputs = [n for n in made if n not in read and rng.random() < 0.7] or [made[-1]]
    extra = [n for n in made if n not in outputs]
    if extra and rng.random() < 0.3:
        outputs.append(rng.choice(extra))
    b.net.outputs = outputs
    return b.net.recipe()


# ---- quantized graphs ---------------------------------------------------------------------------

# the passes for quantized graphs (exact), after the default ones; the cases compare bit for bit
QUANT_PASSES = ",".join(QUANTIZED_GRAPH_PASSES)
# the layout passes that move or drop TRANSPOSEs and RESHAPEs of quantized tensors (parameters carried)
QUANT_LAYOUT = C_LAYOUT + ",substitute_squeeze_to_reshape,substitute_expand_dims_to_reshape"
QUANT_OPTION_SETS: dict[str, tuple[str | None, dict]] = {
    "quant": (QUANT_PASSES.rsplit(",", 2)[0], {}),
    "quant_weights": ("fold_quantize,fold_quantized_weight_layout", {}),
    "quant_default": (None, {"remove_quantdequant": True, "remove_redundant_quantize": True}),
    "quant_layout": (QUANT_LAYOUT, {}),
    "quant_nchw": (None, {"convert_nchw_to_nhwc": True}),
    "quant_O1": (QUANT_PASSES, {"O1": True}),
}
# a float layer whose weights become constant may move from the builtin kernel to XNNPACK, whose
# float32 rounding differs (and can flip a quantized output a step): compared in the builtin kernels
BUILTIN_ONLY = frozenset({"quant_weights", "quant_O1"})
ALL_OPTION_SETS = {**OPTION_SETS, **QUANT_OPTION_SETS}
QUANT_TYPES = {"INT8": (-128, 127), "UINT8": (0, 255), "INT16": (0, 0)}  # zero point range (int16: 0)


@dataclass
class QBuilder:
    """A random quantized graph under construction: a chain through `last` (name, shape, params)."""

    rng: random.Random
    net: Net
    count: int = 0
    last: tuple[str, list[int], tuple[str, float, int]] = ("", [], ("INT8", 1.0, 0))

    def name(self, kind: str) -> str:
        self.count += 1
        return f"{kind.lower()}_{self.count}"

    def params(self, like: tuple[str, float, int] | None = None) -> tuple[str, float, int]:
        """Parameters for a new tensor: often `like`'s, or its scale with another zero point or type."""
        if like is not None and self.rng.random() < 0.5:
            dtype, scale, zero = like
            choice = self.rng.randrange(3)
            if choice == 1 and dtype != "INT16":
                zero = self.rng.randint(*QUANT_TYPES[dtype])
            elif choice == 2:
                dtype = self.rng.choice(("INT8", "INT16")) if dtype != "UINT8" else "INT8"
                zero = 0 if dtype == "INT16" else max(-128, min(127, zero - 128 if like[0] == "UINT8" else zero))
            return dtype, scale, zero
        dtype = self.rng.choice(("INT8", "INT8", "INT8", "UINT8", "INT16"))
        scale = self.rng.choice((0.01, 0.02, 0.05, 0.1)) * (256 if dtype != "INT16" else 1)
        return dtype, scale / 256 if dtype != "INT16" else scale / 100, self.rng.randint(*QUANT_TYPES[dtype])

    def q(self, kind: str, inputs, shape, params, **options) -> str:
        name = self.name(kind)
        self.net.q(name, shape, *params)
        self.net.op(kind, inputs, name, list(shape), **options)
        self.last = (name, list(shape), params)
        return name

    def f(self, kind: str, inputs, shape, **options) -> str:
        return self.net.op(kind, inputs, self.name(kind), list(shape), **options)


def _q_requantize(b: QBuilder) -> None:
    name, shape, p = b.last
    b.q("QUANTIZE", [name], shape, b.params(p))


def _q_dequantize_quantize(b: QBuilder) -> None:
    name, shape, p = b.last
    b.q("QUANTIZE", [b.f("DEQUANTIZE", [name], shape)], shape, b.params(p))


def _q_transpose(b: QBuilder) -> None:
    """A TRANSPOSE of any quantized type (its parameters carried); sometimes the identity, its inverse
    right after, or a MEAN over the moved axes (the layout passes' patterns)."""
    name, shape, p = b.last
    perm = list(range(len(shape)))
    if b.rng.random() < 0.85:
        b.rng.shuffle(perm)
    moved = b.q("TRANSPOSE", [name, b.net.ints(b.name("p"), perm)], [shape[i] for i in perm], p)
    choice = b.rng.random()
    if choice < 0.3:
        inverse = [perm.index(i) for i in range(len(perm))]
        b.q("TRANSPOSE", [moved, b.net.ints(b.name("p"), inverse)], shape, p)
    elif choice < 0.45 and len(shape) == 4:
        axes = b.rng.choice(([1, 2], [2, 3], [1], [3]))
        reduced = [1 if i in axes else d for i, d in enumerate(b.last[1])]
        b.q("MEAN", [moved, b.net.ints(b.name("axes"), axes)], reduced, p, keep_dims=True)


def _q_reshape(b: QBuilder) -> None:
    """A unit axis added and dropped again by RESHAPE / EXPAND_DIMS then RESHAPE / SQUEEZE, or a
    RESHAPE to the same shape, all with the input's parameters (what the reshape passes merge, drop
    or substitute)."""
    name, shape, p = b.last
    if b.rng.random() < 0.2:  # to its own shape (remove_unnecessary_reshape's)
        b.q("RESHAPE", [name, b.net.ints(b.name("shape"), shape)], shape, p, new_shape=list(shape))
        return
    axis = b.rng.randrange(len(shape) + 1)
    wide = shape[:axis] + [1] + shape[axis:]
    if b.rng.random() < 0.5:
        up = b.q("EXPAND_DIMS", [name, b.net.ints(b.name("axis"), [axis])], wide, p)
    else:
        up = b.q("RESHAPE", [name, b.net.ints(b.name("shape"), wide)], wide, p, new_shape=wide)
    if b.rng.random() < 0.5:
        b.q("SQUEEZE", [up], shape, p, squeeze_dims=[axis])
    else:
        b.q("RESHAPE", [up, b.net.ints(b.name("shape"), shape)], shape, p, new_shape=list(shape))


def _q_concat(b: QBuilder) -> None:
    """A CONCATENATION of the tensor with itself (the same parameters), often of two TRANSPOSEs of it
    (forward_transpose_op and remove_redundant_transpose move them through the concatenation)."""
    name, shape, p = b.last
    if len(shape) != 4:
        return
    parts = [name, name]
    axis = b.rng.randrange(4)
    out = list(shape)
    if b.rng.random() < 0.6:
        perm = [0, 3, 1, 2]
        ints = b.net.ints(b.name("p"), perm)
        moved = [shape[i] for i in perm]
        parts = [b.q("TRANSPOSE", [name, ints], moved, p) for _ in range(2)]
        out = list(moved)
    out[axis] *= 2
    b.q("CONCATENATION", parts, out, p, axis=axis)


def _q_conv(b: QBuilder) -> None:
    """int8 CONV_2D (per-channel weights), often followed by a QUANTIZE of its scale."""
    name, shape, p = b.last
    if p[0] != "INT8" or len(shape) != 4:
        return
    n, h, w, c = shape
    u = b.rng.randint(1, 4)
    values = np.array([b.rng.randint(-127, 127) for _ in range(u * c)]).reshape(u, 1, 1, c)
    scales = [b.rng.choice((0.005, 0.01, 0.02)) for _ in range(u)]
    weights = b.net.qconst(b.name("w"), values, "INT8", scales, [0] * u, 0)
    bias_values = np.array([b.rng.randint(-300, 300) for _ in range(u)])
    bias = b.net.qconst(b.name("b"), bias_values, "INT32", [p[1] * s for s in scales], [0] * u, 0)
    out = ("INT8", b.rng.choice((0.05, 0.1, 0.2)), b.rng.randint(-128, 127))
    act = b.rng.choice(ACTIVATIONS)
    options = dict(padding="VALID", stride_w=1, stride_h=1, fused_activation_function=act)
    b.q("CONV_2D", [name, weights, bias], [n, h, w, u], out, **options)
    if b.rng.random() < 0.6:
        _, _, zero = out
        b.q("QUANTIZE", [b.last[0]], [n, h, w, u], ("INT8", out[1], b.rng.choice((zero, b.rng.randint(-128, 127)))))


def _q_float_conv_of_moved_weights(b: QBuilder) -> None:
    """DEQUANTIZE -> float CONV_2D whose weights are int8 HWIO -> DEQUANTIZE -> TRANSPOSE -> QUANTIZE."""
    name, shape, p = b.last
    if len(shape) != 4:
        return
    n, h, w, c = shape
    u = b.rng.randint(1, 4)
    values = np.array([b.rng.randint(-127, 127) for _ in range(u * c)]).reshape(1, 1, c, u)
    per_channel = b.rng.random() < 0.7
    scales = [b.rng.choice((0.01, 0.02, 0.03)) for _ in range(u if per_channel else 1)]
    axis = 3 if per_channel else 0
    if b.rng.random() < 0.5:
        stored = b.net.qconst(b.name("w"), values, "INT8", scales, [0] * len(scales), axis)
    else:  # PT2E's way: float32 weights quantized on every run
        floats = [b.rng.uniform(-1.3, 1.3) for _ in range(u * c)]
        if b.rng.random() < 0.3:  # one at a half step: fold_quantize keeps the QUANTIZE (kernels round it apart)
            k = b.rng.randrange(u * c)
            floats[k] = (b.rng.randint(-20, 20) + 0.5) * scales[k % u if per_channel else 0]
        stored = b.name("q")
        b.net.q(stored, [1, 1, c, u], "INT8", scales, [0] * len(scales), axis)
        b.net.op("QUANTIZE", [b.net.const(b.name("wf"), [1, 1, c, u], values=floats)], stored, [1, 1, c, u])
    wf = b.f("DEQUANTIZE", [stored], [1, 1, c, u])
    wt = b.f("TRANSPOSE", [wf, b.net.ints(b.name("p"), [3, 0, 1, 2])], [u, 1, 1, c])
    x = b.f("DEQUANTIZE", [name], shape)
    conv = b.f("CONV_2D", [x, wt, b.net.const(b.name("b"), [u])], [n, h, w, u], padding="VALID", stride_w=1, stride_h=1)
    b.q("QUANTIZE", [conv], [n, h, w, u], b.params())


def _q_mixed_precision(b: QBuilder) -> None:
    """DEQUANTIZE -> FULLY_CONNECTED (float) -> QUANTIZE -> DEQUANTIZE -> QUANTIZE (often one scale)."""
    name, shape, _ = b.last
    u = b.rng.randint(1, 4)
    x = b.f("DEQUANTIZE", [name], shape)
    fc = b.f(
        "FULLY_CONNECTED",
        [x, b.net.const(b.name("w"), [u, shape[-1]]), b.net.const(b.name("b"), [u])],
        shape[:-1] + [u],
        keep_num_dims=True,
    )
    first, second = b.params(), None
    if b.rng.random() < 0.5:  # ONE's mixed-precision shape: int16 (or int8), then int8 of one scale
        scale = b.rng.choice((0.01, 0.02, 0.05))
        first = (b.rng.choice(("INT16", "INT8")), scale, 0)
        second = first if b.rng.random() < 0.5 else ("INT8", scale, b.rng.choice((0, 5)))
    b.q("QUANTIZE", [fc], shape[:-1] + [u], first)
    after = b.f("DEQUANTIZE", [b.last[0]], shape[:-1] + [u])
    b.q("QUANTIZE", [after], shape[:-1] + [u], second or b.params(first))


QUANT_STEPS = {
    _q_requantize: 3,
    _q_dequantize_quantize: 3,
    _q_transpose: 3,
    _q_reshape: 1,
    _q_concat: 1,
    _q_conv: 2,
    _q_float_conv_of_moved_weights: 1,
    _q_mixed_precision: 1,
}


def quantized_graph(seed: int, max_ops: int = 8) -> dict:
    """A recipe dict: a float input [1-3, 2-5, 2-5, 1-4] quantized, then a chain of 1-max_ops steps
    (requantizations, DEQUANTIZE -> QUANTIZE pairs, TRANSPOSEs of every quantized type (with their
    inverse, a MEAN, or into a CONCATENATION), unit-axis RESHAPE / EXPAND_DIMS / SQUEEZE pairs,
    per-channel int8 CONV_2Ds with a QUANTIZE after, a float conv whose int8 weights (stored, or
    float32 quantized on every run as PT2E writes them, sometimes one at a half step) are dequantized
    and transposed, FC -> QUANTIZE -> DEQUANTIZE -> QUANTIZE), the last tensor dequantized or output
    as integers."""
    from quant_models import QNet

    rng = random.Random(seed)
    b = QBuilder(rng, QNet(seed=seed))
    shape = [rng.randint(1, 3), rng.randint(2, 5), rng.randint(2, 5), rng.randint(1, 4)]
    b.net.input("in0", shape)
    b.last = ("in0", shape, ("FLOAT32", 1.0, 0))
    b.q("QUANTIZE", ["in0"], shape, b.params())
    steps, weights = list(QUANT_STEPS), list(QUANT_STEPS.values())
    for _ in range(rng.randint(1, max_ops)):
        rng.choices(steps, weights)[0](b)
    if rng.random() < 0.5:
        b.net.outputs = [b.f("DEQUANTIZE", [b.last[0]], b.last[1])]
    else:
        b.net.outputs = [b.last[0]]
    return b.net.recipe()


def run_quant_case(content: bytes, option_set: str) -> Outcome:
    """Optimize `content` under a QUANT_OPTION_SETS entry; every output bit for bit the original's,
    per resolver (XNNPACK and the builtin kernels may round differently from each other)."""
    passes, options = QUANT_OPTION_SETS[option_set]
    try:
        result = api.optimize(content, passes, **options)
    except InternalError as e:
        return Outcome("exit3", str(e).splitlines()[0])
    except BnfoldError as e:
        return Outcome("refused", str(e).splitlines()[0])
    except Exception as e:  # noqa: BLE001 - what the CLI reports as exit 3
        return Outcome("exit3", f"{type(e).__name__}: {e}".splitlines()[0])
    resolvers = ("AUTO", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    for resolver in resolvers[1:] if option_set in BUILTIN_ONLY else resolvers:
        original = _interpreter(content, resolver=resolver)
        try:
            interp = _interpreter(result.data, resolver=resolver)
        except (ValueError, RuntimeError) as e:
            return Outcome("load_fail", str(e).strip().splitlines()[0][:200])
        for seed in (0, 1):
            xs = sample_inputs(original, seed)
            try:
                have = _invoke(interp, xs)
            except (ValueError, RuntimeError) as e:
                return Outcome("run_fail", str(e).strip().splitlines()[0][:200])
            for i, (a, b) in enumerate(zip(_invoke(original, xs), have)):
                if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                    return Outcome("values", f"{resolver}: output {i} differs")
    return Outcome("ok")


def _rms_norm(b: Builder) -> str | None:
    """An RMS norm written out over the last axis, in one of the forms exporters write."""
    t = b.pick()
    shape = b.live[t]
    reduced = [*shape[:-1], 1]
    if b.rng.random() < 0.5:
        square = b.out("MUL", [t, t], shape)
    else:
        square = b.out("POW", [t, b.net.const(b.name("two"), [], values=[2.0])], shape)
    mean = b.out("MEAN", [square, b.ints([len(shape) - 1])], reduced, keep_dims=True)
    a = b.out("ADD", [mean, b.net.const(b.name("eps"), [], values=[1e-5])], reduced)
    root = b.rng.choice(("RSQRT", "SQRT", "POW-0.5", "POW0.5"))
    if root in ("RSQRT", "SQRT"):
        r = b.out(root, [a], reduced)
    else:
        r = b.out("POW", [a, b.net.const(b.name("half"), [], values=[float(root[3:])])], reduced)
    normed = b.out("DIV" if root in ("SQRT", "POW0.5") else "MUL", [t, r], shape)
    if b.rng.random() < 0.6:
        gamma = b.net.const(b.name("gamma"), [shape[-1]], low=0.5, high=1.5)
        normed = b.out("MUL", [gamma, normed] if b.rng.random() < 0.5 else [normed, gamma], shape)
    return normed


def _rope(b: Builder) -> str | None:
    """A rotary embedding written out (half rotation or interleaved) on a rank-4 tensor of even last axis."""
    t = b.pick(4)
    if t is None or b.live[t][-1] % 2:
        return None
    shape = b.live[t]
    d, half = shape[-1], shape[-1] // 2
    table = [1, 1, shape[2] if b.rng.random() < 0.5 else 1, d]
    cos, sin = (b.net.const(b.name(n), table, low=-1.0, high=1.0) for n in ("cos", "sin"))
    part = [*shape[:-1], half]
    if b.rng.random() < 0.6:
        upper = b.out("STRIDED_SLICE", [t, b.ints([0, 0, 0, half]), b.ints(shape), b.ints([1, 1, 1, 1])], part)
        lower = b.out("SLICE", [t, b.ints([0, 0, 0, 0]), b.ints(part)], part)
        rotated = b.out("CONCATENATION", [b.out("NEG", [upper], part), lower], shape, axis=-1)
    else:
        odd = b.out("STRIDED_SLICE", [t, b.ints([0, 0, 0, 1]), b.ints(shape), b.ints([1, 1, 1, 2])], part)
        even = b.out("STRIDED_SLICE", [t, b.ints([0, 0, 0, 0]), b.ints(shape), b.ints([1, 1, 1, 2])], part)
        packed = b.out("PACK", [b.out("NEG", [odd], part), even], [*part, 2], axis=4, values_count=2)
        rotated = b.out("RESHAPE", [packed, b.ints(shape)], shape, new_shape=list(shape))
    return b.out("ADD", [b.out("MUL", [t, cos], shape), b.out("MUL", [sin, rotated], shape)], shape)


def _sqrt_div(b: Builder, over_one: bool | None = None, exact: bool = False) -> str | None:
    """x / SQRT(exp(tanh(u))) or 1 / SQRT(exp(tanh(u))) (real and bounded: a square of an overflowing
    value is where an RMS_NORM and its written-out form differ by design, passes/fuse_rmsnorm.py);
    `over_one` None draws the numerator; `exact`: no fused activation (the O1 fuzzer's exact pattern)."""
    t = b.pick()
    shape = b.live[t]
    root = b.out("SQRT", [b.out("EXP", [b.out("TANH", [t], shape)], shape)], shape)
    top = b.rng.choice([n for n, s in b.live.items() if s == shape and n != root])
    if over_one or (over_one is None and b.rng.random() < 0.4):
        top = b.net.const(b.name("one"), [], values=[1.0])
    activation = "NONE" if exact else b.rng.choice(ACTIVATIONS)
    return b.out("DIV", [top, root], shape, fused_activation_function=activation)


def _by_ones(b: Builder, kind: str | None = None, exact: bool = False) -> str | None:
    """A MUL or DIV (`kind`, else drawn) by a constant of ones; unless `exact` (the O1 fuzzer's exact
    pattern: the ones no larger than the operand, no fused activation), sometimes with a fused
    activation or ones that broadcast."""
    t = b.pick()
    shape = b.live[t]
    kind = kind or b.rng.choice(("MUL", "DIV"))
    cshape = b.rng.choice(([1], [shape[-1]], list(shape)))
    ones = b.net.const(b.name("ones"), cshape, values=[1.0] * int(np.prod(cshape)))
    inputs = [ones, t] if kind == "MUL" and b.rng.random() < 0.5 else [t, ones]
    activation = "NONE" if exact else b.rng.choice(ACTIVATIONS)
    return b.out(kind, inputs, shape, fused_activation_function=activation)


def _attention(b: Builder) -> str | None:
    """softmax(q · transpose(k) · scale) · v as exporters write it: a TRANSPOSE of the last two axes (often
    through a scalar MUL) before BATCH_MATMUL, the scores through SOFTMAX into a second BATCH_MATMUL."""
    q = b.pick()
    shape = b.live[q]
    if len(shape) < 3:
        return None
    k = b.rng.choice([n for n, s in b.live.items() if s == shape])
    rank = len(shape)
    swap = [*range(rank - 2), rank - 1, rank - 2]
    kt_shape = [shape[i] for i in swap]
    kt = b.out("TRANSPOSE", [k, b.ints(swap)], kt_shape)
    if b.rng.random() < 0.5:
        kt = b.out("MUL", [kt, b.net.const(b.name("scale"), [], values=[0.35])], kt_shape)
    scores_shape = [*shape[:-1], shape[-2]]
    scores = b.out("BATCH_MATMUL", [q, kt], scores_shape)
    if b.rng.random() < 0.6:
        probs = b.out("SOFTMAX", [scores], scores_shape, beta=1.0)
        return b.out("BATCH_MATMUL", [probs, k], shape)
    return scores


DECODER_STEPS = {
    _attention: 2,
    _rms_norm: 3,
    _rope: 3,
    _sqrt_div: 2,
    _by_ones: 2,
    _elementwise: 2,
    _unary: 1,
    _transpose: 2,
    _softmax: 1,
    _fc: 1,
}


def decoder_graph(seed: int, max_ops: int = 12) -> dict:
    """A recipe dict of decoder-block pieces (the transformer passes' patterns, written out as exporters
    write them, among transposes, elementwise ops and FCs): one input [1..2, H, S, D] or [1..2, S, D], D
    even; 1-max_ops steps (a step may write several ops); unread tensors are outputs."""
    rng = random.Random(seed)
    b = Builder(rng, Net(seed=seed))
    d = rng.choice((2, 4, 6, 8))
    shape = [rng.choice((1, 2)), rng.randint(1, 3), rng.randint(1, 4), d][rng.choice((0, 1)) :]
    b.live[b.net.input("in0", shape)] = shape
    steps, weights = list(DECODER_STEPS), list(DECODER_STEPS.values())
    for _ in range(rng.randint(1, max_ops)):
        for _attempt in range(5):
            if rng.choices(steps, weights)[0](b) is not None:
                break
    made = [n for n in b.live if n != "in0"]
    read = {i for op in b.net.operations for i in op["inputs"]}
    outputs = [n for n in made if n not in read] or [made[-1]]
    extra = [n for n in made if n not in outputs]
    if extra and rng.random() < 0.3:
        outputs.append(rng.choice(extra))  # a tensor both read inside and seen outside
    b.net.outputs = outputs[:4]
    return b.net.recipe()


# ---- running a case -----------------------------------------------------------------------------


@dataclass
class Outcome:
    kind: str
    detail: str = ""


def _interpreter(content: bytes, *, preserve: bool = False, resolver: str = "AUTO"):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    with _quiet():
        interp = Interpreter(
            model_content=content,
            experimental_op_resolver_type=getattr(OpResolverType, resolver),
            experimental_preserve_all_tensors=preserve,
            num_threads=1,
        )
        interp.allocate_tensors()
    return interp


def _invoke(interp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    with _quiet():
        interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


@contextlib.contextmanager
def _quiet():
    """LiteRT's C++ logging goes to file descriptor 2 ("Created TensorFlow Lite XNNPACK delegate")."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def original_bytes(recipe: dict) -> bytes | None:
    return prepare(recipe)[0]


def prepare(recipe: dict) -> tuple[bytes | None, str]:
    """The graph as a .tflite file's bytes, or None and why it is no fair case: the chef refuses
    it ("chef"), LiteRT refuses it or infers another shape than the generator's ("litert"), or
    LiteRT's own buffer sharing changes its values ("litert_inplace": its default run differs from
    the run with every tensor preserved)."""
    from bnfold.io.writer import serialize
    from bnfold.recipe.chef import build

    try:
        model = build(recipe)
    except BnfoldError:
        return None, "chef"
    out = io.BytesIO()
    serialize(model, out, model.format)
    content = out.getvalue()
    try:
        preserved = _interpreter(content, preserve=True, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
        if any(tuple(d["shape"]) != tuple(recipe_shape(recipe, d["name"])) for d in preserved.get_output_details()):
            return None, "litert"
        default = _interpreter(content, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
        # on run_case's inputs (seed 1) too: a RELU6 that clamps one input to 0 can hide an overwrite
        for seed in (0, 1):
            xs = sample_inputs(preserved, seed)
            if not all(_close(a, b) for a, b in zip(_invoke(preserved, xs), _invoke(default, xs))):
                return None, "litert_inplace"
    except (ValueError, RuntimeError):
        return None, "litert"
    return content, ""


def recipe_shape(recipe: dict, name: str) -> list[int]:
    return next(o["shape"] for o in recipe["operand"] if o["name"] == name)


def sample_inputs(interp, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 2.0, d["shape"]).astype(np.float32) for d in interp.get_input_details()]


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal up to float32 rounding, scaled by the values' size (XNNPACK sums in another order)."""
    if a.shape != b.shape:
        return False
    finite = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        return False
    scale = max(1.0, float(np.max(np.abs(a[finite]))) if finite.any() else 1.0)
    return bool(np.all(np.abs(a[finite].astype(np.float64) - b[finite]) <= 1e-4 * scale))


def run_case(content: bytes, option_set: str) -> Outcome:
    """Optimize `content` under `option_set` and compare in LiteRT (module docstring); a set of
    QUANT_OPTION_SETS compares bit for bit (run_quant_case)."""
    if option_set in QUANT_OPTION_SETS:
        return run_quant_case(content, option_set)
    passes, options = OPTION_SETS[option_set]
    try:
        result = api.optimize(content, passes, **options)
    except InternalError as e:  # a BnfoldError, but exit 3: bnfold's bug, not a refusal
        return Outcome("exit3", str(e).splitlines()[0])
    except BnfoldError as e:
        return Outcome("refused", str(e).splitlines()[0])
    except Exception as e:  # noqa: BLE001 - what the CLI reports as exit 3
        return Outcome("exit3", f"{type(e).__name__}: {e}".splitlines()[0])
    interface = result.report.get("interface") or {}
    nhwc_in = {t["name"] for t in interface.get("inputs", [])}
    nhwc_out = {t["name"] for t in interface.get("outputs", [])}
    original = _interpreter(content, preserve=True, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    xs = sample_inputs(original, 1)
    want = _invoke(original, xs)
    for resolver in ("AUTO", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"):
        try:
            interp = _interpreter(result.data, resolver=resolver)
        except (ValueError, RuntimeError) as e:
            return Outcome("load_fail", str(e).strip().splitlines()[0][:200])
        names_in = [d["name"] for d in interp.get_input_details()]
        names_out = [d["name"] for d in interp.get_output_details()]
        if names_in != [d["name"] for d in original.get_input_details()] or names_out != [
            d["name"] for d in original.get_output_details()
        ]:
            return Outcome("interface", f"inputs {names_in}, outputs {names_out}")
        fed = [np.ascontiguousarray(np.transpose(x, TO_NHWC)) if n in nhwc_in else x for n, x in zip(names_in, xs)]
        try:
            have = _invoke(interp, fed)
        except (ValueError, RuntimeError) as e:
            return Outcome("run_fail", str(e).strip().splitlines()[0][:200])
        have = [np.transpose(y, TO_NCHW) if n in nhwc_out and y.ndim == 4 else y for n, y in zip(names_out, have)]
        for i, (a, b) in enumerate(zip(want, have)):
            if a.shape != b.shape:
                return Outcome("interface", f"output {i} {names_out[i]}: shape {list(b.shape)}, want {list(a.shape)}")
            if not _close(a, b):
                diff = float(np.max(np.abs(a.astype(np.float64) - b)))
                return Outcome("values", f"{resolver}: output {i} {names_out[i]} max|diff| {diff:.3g}")
    return Outcome("ok")


def shrink(recipe: dict, option_set: str, kind: str) -> dict:
    """Drop operators (from the last) and outputs while the case still fails with `kind`: the
    graph's outputs become the tensors nothing reads any more."""

    def fails(candidate: dict) -> bool:
        content = original_bytes(candidate)
        return content is not None and run_case(content, option_set).kind == kind

    best = recipe
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(best["operation"]))):
            candidate = _without_op(best, i)
            if candidate is not None and fails(candidate):
                best, changed = candidate, True
        for i in reversed(range(len(best["output"]))):
            if len(best["output"]) > 1:
                candidate = {**best, "output": best["output"][:i] + best["output"][i + 1 :]}
                if fails(candidate):
                    best, changed = candidate, True
    return best


def _without_op(recipe: dict, index: int) -> dict | None:
    """The recipe without operation `index`, if nothing else reads what it makes."""
    op = recipe["operation"][index]
    rest = recipe["operation"][:index] + recipe["operation"][index + 1 :]
    read = {i for o in rest for i in o["inputs"]}
    if read & set(op["outputs"]):
        return None
    made = {o for other in rest for o in other["outputs"]}
    outputs = [o for o in recipe["output"] if o in made or o in recipe["input"]]
    outputs = [o for o in outputs if o not in recipe["input"]]
    if not outputs:
        unread = [o for other in rest for o in other["outputs"] if o not in read]
        outputs = unread[-1:]
    if not outputs:
        return None
    used = read | set(outputs) | {i for o in rest for i in o["outputs"]}
    operands = [o for o in recipe["operand"] if o["name"] in used or o["name"] in recipe["input"]]
    return {**recipe, "operation": rest, "output": outputs, "operand": operands}


def describe(recipe: dict) -> str:
    """The graph op by op, as the repro .txt files show it."""
    shapes = {o["name"]: o["shape"] for o in recipe["operand"]}
    consts = {o["name"]: o["filler"].get("values") for o in recipe["operand"] if "filler" in o}
    lines = [f"input  {n} {shapes[n]}" for n in recipe["input"]]
    for op in recipe["operation"]:
        args = ", ".join(f"{i}{shapes[i]}" + (f"={consts[i]}" if consts.get(i) else "") for i in op["inputs"])
        outs = ", ".join(f"{o}{shapes[o]}" for o in op["outputs"])
        options = {k: v for k, v in op["options"].items() if v not in (None, "NONE")}
        lines.append(f"{op['type']}({args}) {options if options else ''} -> {outs}")
    lines += [f"output {n} {shapes[n]}" for n in recipe["output"]]
    return "\n".join(lines)


def run_onert_case(recipe: dict, option_set: str = "decoder") -> Outcome:
    """The graph as a Circle model, optimized for the onert target under `option_set` and run in onert
    against the original (what the RMS_NORM and ROPE fusions make runs there only); "unfair" when
    the chef or onert refuses the original, or onert's run of it is not the graph's values (the
    reference interpreter's)."""
    from bnfold.io.formats import CIRCLE
    from bnfold.io.writer import serialize
    from bnfold.recipe.chef import build
    from bnfold.values import onert

    try:
        model = build(recipe, CIRCLE)
        out = io.BytesIO()
        serialize(model, out, CIRCLE)
        content = out.getvalue()
        original = onert.Session(model)
        xs = [np.random.default_rng(1).normal(0, 2, t.shape).astype(np.float32) for t in model.graphs[0].inputs]
        want = original(xs)
    except (BnfoldError, RuntimeError, ValueError) as e:
        return Outcome("unfair", str(e).splitlines()[0][:200])
    from bnfold.reference import interpreter

    if not all(_close(a, b) for a, b in zip(want, interpreter.run(model, xs))):
        # onert 0.1.0 itself miscomputes some graphs (a graph output another op reads can come back
        # holding that op's result): no oracle there, as litert_inplace for LiteRT
        return Outcome("unfair", "onert's own run of the original differs from the graph's values")
    passes, options = OPTION_SETS[option_set]
    try:
        result = api.optimize(content, passes, target="onert", **options)
    except InternalError as e:
        return Outcome("exit3", str(e).splitlines()[0])
    except BnfoldError as e:
        return Outcome("refused", str(e).splitlines()[0])
    import tempfile

    from bnfold.io.reader import read_model

    try:
        with tempfile.NamedTemporaryFile(suffix=".circle") as f:
            f.write(result.data)
            f.flush()
            read_back = read_model(f.name)
            have = onert.Session(read_back)(xs)
    except (BnfoldError, RuntimeError, ValueError) as e:
        return Outcome("run_fail", str(e).splitlines()[0][:200])
    for i, (a, b) in enumerate(zip(want, have)):
        if a.shape != b.shape and a.size == b.size and _close(a.reshape(-1), b.reshape(-1)):
            # onert 0.1.0 does not read FULLY_CONNECTED's keep_num_dims: an FC that now writes a graph
            # output directly (an op after it removed) comes back flattened, with the right values
            return Outcome("onert_shape", f"output {i}: shape {list(b.shape)} in onert, {list(a.shape)} declared")
        if not _close(a, b) and all(_close(w, h) for w, h in zip(want, interpreter.run(read_back, xs))):
            # the optimized graph computes the original's values (the reference interpreter), onert's run
            # of it does not: onert 0.1.0 can hand back another output's buffer for an output (seen with
            # several outputs, one read by another op)
            return Outcome("onert_self", f"output {i}: onert's run differs from the optimized graph's values")
        if not _close(a, b):
            diff = float(np.max(np.abs(a.astype(np.float64) - b))) if a.shape == b.shape else float("nan")
            return Outcome("values", f"output {i}: max|diff| {diff:.3g}, shapes {list(a.shape)} {list(b.shape)}")
    return Outcome("ok")
