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

from ..engine.match import collapse, const_operand, no_activation, not_plain_float, only_reader, read_elsewhere, scalar
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
        if div is None or div.kind != "DIV" or div.input(1) is None:
            why = None if div is not None else read_elsewhere(graph, p, "DIV")
            if why:
                result.refuse_value(mul, why)
            continue
        numerator, divisor = div.operand(0), div.operand(1)
        if not (divisor is p and scalar(numerator) is not None or numerator is p and scalar(divisor) is not None):
            continue  # no candidate: the DIV's other operand is no scalar constant
        why = (
            f"the DIV's fused {div.fused_activation} is not the MUL's"
            if not no_activation(div)
            else not_plain_float(x, (x, p, div.outputs[0])) or _fuse(graph, result, mul, div)
        )
        if why:
            result.refuse_value(div, why)
    return result


def _fuse(graph: Graph, result: PassResult, mul: Op, div: Op) -> str | None:
    """Fuse them, or say why not (a division by zero)."""
    pair = const_operand(mul)
    assert pair is not None  # run matched it
    m, x = pair
    p = mul.outputs[0]
    numerator, divisor = div.operand(0), div.operand(1)
    m_value = np.float32(scalar(m))
    if divisor is p and scalar(numerator) is not None:  # d / (m·x) = (d / m) / x
        if m_value == 0:
            return "the MUL is by zero: d / (0·x) is no (d / 0) / x"
        d = numerator
        c = graph.add_const(graph.unique_name(f"{d.name};{m.name}"), _shaped(np.float32(scalar(d)) / m_value, d))
        collapse(graph, result, [mul, div], [c, x], "DIV", div.options_with(), constant=float(c.const_data.item()))
    elif numerator is p and scalar(divisor) is not None:  # (m·x) / d = x · (m / d)
        if scalar(divisor) == 0:
            return "the DIV is by zero: (m·x) / 0 is no x · (m / 0)"
        d = divisor
        c = graph.add_const(graph.unique_name(f"{m.name};{d.name}"), _shaped(m_value / np.float32(scalar(d)), m))
        collapse(graph, result, [mul, div], [x, c], "MUL", mul.options_with(), constant=float(c.const_data.item()))
    return None


def _shaped(value: np.float32, like) -> np.ndarray:
    return np.full(like.shape, value, dtype=np.float32)
