"""What the passes removing or substituting data-movement ops share: whether an op passes every
element of its input through in order (an identity, or a RESHAPE in disguise), and how an op that
computes its input is taken out of the graph.

Whether a SLICE, STRIDED_SLICE or the like keeps every element in order is decided by running the
value check's own kernel (reference/select_kernels.py) on the positions 0 .. n-1 of a static input:
it keeps them all in order exactly when it returns those positions in that order. So the masks,
negative indices, clamping and strides are read the way the runtime reads them, not re-derived
(cost: one pass over n integers, asked only when the element counts already agree).
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Graph, Op, Tensor
from .reshapes import same_quantization


def keeps_every_element_in_order(graph: Graph, op: Op) -> bool:
    """`op` (data in input 0, index operands constant) outputs input 0's elements, all of them,
    in memory order, whatever its shape: the output is a RESHAPE of the input."""
    from ..errors import RunFailed  # only asked of slices whose counts agree
    from ..reference.interpreter import Interpreter, kernel_for

    x, y = op.input(0), op.outputs[0]
    if x is None or -1 in x.signature or -1 in y.signature or math.prod(x.shape) != math.prod(y.shape):
        return False
    if not all(t is None or t.is_const for t in op.inputs[1:]) or not same_quantization(x, y):
        return False
    kernel = kernel_for(op)
    if kernel is None:
        return False
    assert graph.model is not None  # passes run on the graphs of a model (Model.add_graph sets it)
    positions = np.arange(math.prod(x.shape), dtype=np.int64).reshape(x.shape)
    try:
        args = [positions, *(None if t is None else t.data for t in op.inputs[1:])]
        out = kernel(Interpreter(graph.model), op, None, args)[0]
    except (RunFailed, ValueError, IndexError):
        return False
    return out.size == positions.size and bool(np.array_equal(out.reshape(-1), positions.reshape(-1)))


def can_bypass(graph: Graph, op: Op, x: Tensor, y: Tensor) -> bool:
    """y (an output of `op`) may be replaced by x, which holds the same values: y's readers read x,
    or, when the outside sees y, x's producer writes y (x then must have no other reader and be
    seen by no one)."""
    if not graph.is_observed(y):
        return True
    return x.producer is not None and graph.has_single_use(x, op)


def bypass_refusal(graph: Graph, op: Op, x: Tensor, y: Tensor) -> str | None:
    """None when `can_bypass`, else why not (for the report)."""
    if can_bypass(graph, op, x, y):
        return None
    return (
        f"{y.name!r} is a model output, and {x.name!r} is a graph input, a constant or read elsewhere:"
        f" no op could write {y.name!r} in the {op.kind}'s place"
    )


def bypass(graph: Graph, op: Op, x: Tensor, y: Tensor) -> None:
    """Take `op` out: y's readers read x (can_bypass said it may). Call for the op's last output."""
    graph.remove_op(op)
    if graph.is_observed(y):
        producer = x.producer
        assert producer is not None  # can_bypass: an observed y goes only when x has a producer to write it
        graph.set_output(producer, producer.outputs.index(x), y)
    else:
        graph.replace_uses(y, x)


def neutral_operand_refusal(graph: Graph, op: Op, data: int) -> str | None:
    """Why `op`, a binary op reading x = input `data` and at the other input a constant that leaves x
    as it is (neutral_constant), may not be taken out as the identity on x (None: it may)."""
    x, y = op.inputs[data], op.outputs[0]
    assert x is not None  # the caller matched it
    if op.fused_activation != "NONE":
        return f"its fused {op.fused_activation} changes values"
    if x.signature != y.signature:
        return f"the constant broadcasts x {list(x.signature)} to {list(y.signature)}"
    if x.dtype != y.dtype or not same_quantization(x, y) or x.is_quantized:
        return "x and the output differ in type or quantization"
    if not can_bypass(graph, op, x, y):
        return "the output is a graph output and x has no producer of its own to write it"
    return None


def neutral_constant(op: Op, data: int, neutral: float) -> bool:
    """The input of `op` other than `data` is an unquantized constant every element of which is
    exactly `neutral` (any shape; the broadcast is checked apart)."""
    c = op.inputs[1 - data]
    if c is None or c is op.inputs[data] or not c.is_const or c.is_quantized or c.data is None:
        return False
    return c.data.size > 0 and bool(np.all(c.data == neutral))
