"""fuse_mul_with_conv: a MUL by a per-channel (or scalar) constant after a CONV_2D goes into the
conv's filter and bias. ONE's flag; fuse_batchnorm_with_conv's backward fold (backward.py) with the chain
restricted to MUL.

    before:  x -> CONV_2D(W, b) -> MUL(s, act) -> y
    after:   x -> CONV_2D(W', b', act) -> y

    W'[o, h, w, i] = s[o]·W[o, h, w, i]     (filter OHWI, output channel on axis 0)
    b'[o]          = s[o]·b[o]              (no bias: none is needed, one with zeros is created)

s of shape [], [1], [C], [1,1,1,C], ... (a scalar scales every channel). Consecutive MULs fold as
one. What follows the MUL (the ADD of a batch norm) stays: fuse_add_with_conv or
fuse_batchnorm_with_conv takes it. Refused with a reason: an activation on the conv
(s·relu(v) ≠ relu(s·v) when s < 0), the conv output read elsewhere or a graph output, non-constant
or non-float32 operands, a constant varying along a spatial axis, a non-finite result.
"""

from __future__ import annotations

from ..engine.backward import fold_backward
from ..engine.report import PassResult
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    return fold_backward(graph, "fuse_batchnorm_with_conv", chain_kinds=frozenset({"MUL"}))
