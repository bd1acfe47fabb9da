"""candidates.py: which ops are batch-norm candidates, and how they group into chains."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.engine.candidates import broadcast_axis, candidate, candidates, chains, dtype_refusal
from bnfold.io.formats import TFLITE
from bnfold.ir.graph import Graph
from bnfold.ir.model import Model

X = (1, 5, 7, 4)  # NHWC data, every dimension a different size


@pytest.mark.parametrize(
    "shape, axis",
    [
        ((), None),
        ((1,), None),
        ((1, 1, 1, 1), None),
        ((4,), 3),
        ((1, 4), 3),
        ((1, 1, 1, 4), 3),
        ((1, 5, 1, 1), 1),
        ((5, 1, 1), 1),
        ((7, 1), 2),
        ((1, 1, 7, 4), False),  # varies along two axes
        ((3,), False),  # does not broadcast onto 4 channels
        ((1, 1, 1, 1, 4), False),  # more dimensions than the data
        ((2, 1, 1, 1), False),  # would grow the batch
    ],
)
def test_broadcast_axis(shape, axis):
    assert broadcast_axis(shape, X) is axis


def _graph():
    g = Model(TFLITE, version=3).add_graph(Graph("main"))
    x = g.add_tensor("x", "FLOAT32", X)
    g.inputs.append(x)
    return g, x


def _binary(g, kind, a, b, name="y"):
    y = g.add_tensor(name, "FLOAT32", X)
    return g.add_op(kind, [a, b], [y], None)


def test_a_constant_operand_of_one_axis_makes_a_candidate_on_either_side():
    g, x = _graph()
    c = g.add_const("c", np.ones((1, 5, 1, 1)))
    for kind in ("MUL", "ADD", "SUB", "DIV"):
        for a, b in ((x, c), (c, x)):  # DIV(c, x) is no affine step, but still a candidate the report explains
            found = candidate(_binary(g, kind, a, b))
            assert found is not None and found.data is x and found.constant is c and found.axis == 1
            assert not found.dequantized and dtype_refusal(found) is None


def test_a_scalar_constant_is_a_candidate():
    g, x = _graph()
    found = candidate(_binary(g, "MUL", x, g.add_const("half", np.float32(0.5))))
    assert found is not None and found.axis is None


def test_no_constant_two_constants_or_other_kinds_are_no_candidates():
    g, x = _graph()
    gate = g.add_tensor("gate", "FLOAT32", (1, 1, 1, 4))  # a gating MUL: computed at runtime
    g.inputs.append(gate)
    c1, c2 = g.add_const("c1", np.ones(4)), g.add_const("c2", np.ones(4))
    assert candidate(_binary(g, "MUL", x, gate)) is None
    assert candidate(_binary(g, "MUL", x, x)) is None  # a square
    assert candidate(_binary(g, "ADD", c1, c2)) is None  # nothing runs on data
    assert candidate(_binary(g, "SQUARED_DIFFERENCE", x, c1)) is None
    assert candidate(_binary(g, "MUL", x, g.add_const("spatial", np.ones((1, 1, 7, 4))))) is None
    assert candidate(_binary(g, "ADD", x, g.add_const("index", np.ones(4), dtype="INT32"))) is None


def test_a_constant_behind_dequantize_is_a_candidate():
    g, x = _graph()
    half = g.add_const("scale16", np.full(4, 2.0), dtype="FLOAT16")
    scale = g.add_tensor("scale", "FLOAT32", (4,))
    g.add_op("DEQUANTIZE", [half], [scale], None)
    found = candidate(_binary(g, "MUL", x, scale))
    assert found is not None and found.dequantized and found.stored is half and found.constant is scale
    assert dtype_refusal(found) is None  # float16 behind DEQUANTIZE is what folds read


def test_an_integer_constant_behind_dequantize_is_a_candidate_no_fold_reads():
    g, x = _graph()
    q = g.add_const("scale8", np.full(4, 3), dtype="INT8")
    scale = g.add_tensor("scale", "FLOAT32", (4,))
    g.add_op("DEQUANTIZE", [q], [scale], None)
    found = candidate(_binary(g, "MUL", x, scale))
    assert found is not None and "INT8 behind a DEQUANTIZE" in dtype_refusal(found)


def test_chains_join_single_reader_candidates_and_nothing_else():
    g, x = _graph()
    m = _binary(g, "MUL", x, g.add_const("s", np.ones(4)), "m")
    a = _binary(g, "ADD", m.outputs[0], g.add_const("t", np.ones(4)), "a")
    # a second reader of a's output starts a chain of its own
    b1 = _binary(g, "MUL", a.outputs[0], g.add_const("u", np.ones(4)), "b1")
    b2 = _binary(g, "SUB", a.outputs[0], g.add_const("v", np.ones(4)), "b2")
    # a MUL whose constant varies along two axes is no candidate but part of the chain: a fold
    # that refuses it refuses the ADD after it
    w = _binary(g, "MUL", b2.outputs[0], g.add_const("w", np.ones((1, 1, 7, 4))), "w")
    z = _binary(g, "ADD", w.outputs[0], g.add_const("z", np.ones(4)), "z")
    g.outputs += [b1.outputs[0], z.outputs[0]]
    assert [c.op for c in candidates(g)] == [m, a, b1, b2, z]
    assert chains(g) == [[m, a], [b1], [b2, w, z]]
