"""fuse_mul_with_div: a MUL by a scalar constant and a DIV by (or of) a scalar constant become one
op (ONE's pass of that name, from PyTorch exports of x / sqrt(d) and 1 / (c·x)).

    before:  x -> MUL(x, m) -> p -> DIV(d, p) -> y        after:  x -> DIV(d / m, x) -> y
    before:  x -> MUL(x, m) -> p -> DIV(p, d) -> y        after:  x -> MUL(x, m / d) -> y

Algebra: d / (m·x) = (d / m) / x and (m·x) / d = x · (m / d); the new constant is computed once,
in float32 like the ops it replaces. Exact up to float rounding (two roundings before, two after:
a few ulp), except where m·x overflows (then the old result is 0 or inf, the new one finite).

Guards (ONE's, plus the ones it leaves to luck): m and d are one-element float32 constants, not
quantized; the divisor of the new op is not zero (m for DIV, d for MUL); x, p and y are float32 of
one shape (a constant of higher rank would broadcast x); the MUL and the DIV carry no fused
activation; p has no reader but the DIV and is no graph output.
"""

from __future__ import annotations

import numpy as np

from ..engine.match import collapse, const_operand, is_plain_float, no_activation, only_reader, scalar
from ..engine.report import PassResult
from ..ir.graph import Graph, Op


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for mul in [op for op in graph.ops if op.kind == "MUL"]:
        pair = const_operand(mul)
        if pair is None or scalar(pair[0]) is None or not no_activation(mul):
            continue
        x, p = pair[1], mul.outputs[0]
        div = only_reader(graph, p)
        if div is None or div.kind != "DIV" or not no_activation(div) or div.input(1) is None:
            continue
        if not all(is_plain_float(t) and t.shape == x.shape for t in (x, p, div.outputs[0])):
            continue
        _fuse(graph, result, mul, div)
    return result


def _fuse(graph: Graph, result: PassResult, mul: Op, div: Op) -> None:
    m, x = const_operand(mul)
    p = mul.outputs[0]
    numerator, divisor = div.inputs[:2]
    m_value = np.float32(scalar(m))
    if divisor is p and scalar(numerator) is not None and m_value != 0:  # d / (m·x) = (d / m) / x
        d = numerator
        c = graph.add_const(graph.unique_name(f"{d.name};{m.name}"), _shaped(np.float32(scalar(d)) / m_value, d))
        collapse(graph, result, [mul, div], [c, x], "DIV", div.options.copy(), constant=float(c.data.item()))
    elif numerator is p and scalar(divisor) is not None and scalar(divisor) != 0:  # (m·x) / d = x · (m / d)
        d = divisor
        c = graph.add_const(graph.unique_name(f"{m.name};{d.name}"), _shaped(m_value / np.float32(scalar(d)), m))
        collapse(graph, result, [mul, div], [x, c], "MUL", mul.options.copy(), constant=float(c.data.item()))


def _shaped(value: np.float32, like) -> np.ndarray:
    return np.full(like.shape, value, dtype=np.float32)
