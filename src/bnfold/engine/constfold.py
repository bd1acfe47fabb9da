"""Constant folding: an operator whose every input is a constant is computed once, while optimizing,
and its outputs become constants (ONE's fold_* passes, one operator kind each).

The values come from the reference interpreter's kernels (reference/kernels.py, select_kernels.py),
the same code the value check runs, so a folded constant is what the check computes for the op:
in the model's own precision (float32 kernels compute in float32; integer ones exactly), with
LiteRT's semantics. An output keeps its tensor (name, type, quantization): only its producer goes
and it gets the computed data in a new buffer, so nothing else that reads a buffer is touched.

Refused, with a reason in the report's `not_folded` (a candidate is an op of the pass's kind whose
inputs are all constants; an op reading a computed value is no candidate and says nothing):
- an output the outside world sees (graph output, signature): a model output stays computed;
- integer-quantized arithmetic (the float kernels must not do it) other than DEQUANTIZE's input;
- a kernel that cannot compute it (a type, a sparse or unknown-type constant, an index out of
  range): the kernel's own message;
- a result whose shape is not the output's static shape, or that holds no element.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import ModelError, RunFailed
from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Graph, Op, Tensor
from .report import PassResult

# an extra guard of one pass: None when the op may fold, else why not
Guard = Callable[[Op], str | None]


def fold_constants(
    graph: Graph,
    kinds: frozenset[str],
    guard: Guard | None = None,
    *,
    custom_code: bytes | None = None,
) -> PassResult:
    """Fold every op of `kinds` (of a CUSTOM op: with `custom_code`) in `graph` whose inputs are all
    constants (see the module doc)."""
    result = PassResult()
    for op in [op for op in graph.ops if op.kind in kinds]:
        if not all_constant_inputs(op) or (custom_code is not None and op.opcode.custom_code != custom_code):
            continue
        reason = (guard(op) if guard is not None else None) or _why_not(graph, op)
        values = None
        if reason is None:
            values, reason = compute(graph, op)
        if reason is not None:
            result.refuse_value(op, reason)
            continue
        assert values is not None  # compute() gives values whenever it gives no reason
        result.fold(op, [op], into=[], constants=[t.name for t in op.outputs], shapes=[list(v.shape) for v in values])
        graph.remove_op(op)
        for tensor, value in zip(op.outputs, values):
            make_constant(tensor, value)
    return result


def all_constant_inputs(op: Op) -> bool:
    """Every present input holds data (absent optional inputs are fine), and there is one."""
    present = [t for t in op.inputs if t is not None]
    return bool(present) and all(t.is_const for t in present)


def _why_not(graph: Graph, op: Op) -> str | None:
    for t in op.outputs:
        if graph.is_observed(t):
            return f"{t.name!r} is seen from outside the graph (a model output stays computed)"
        if t.dtype not in NUMPY_DTYPES:
            return f"{t.name!r} is {t.dtype}, which bnfold cannot hold as numbers"
    checked = [*op.outputs, *(op.inputs[1:] if op.kind == "DEQUANTIZE" else op.inputs)]
    for c in checked:
        if c is not None and c.is_quantized and c.dtype not in ("FLOAT32", "FLOAT16"):
            return f"{c.name!r} is quantized: integer-quantized arithmetic is not folded"
    if any(t is not None and getattr(t.record, "sparsity", None) is not None for t in op.inputs):
        if op.kind != "DENSIFY":
            return "reads a sparse constant"
    return None


def compute(graph: Graph, op: Op) -> tuple[list[np.ndarray] | None, str | None]:
    """The op's outputs computed by the value check's kernel, or (None, why it cannot be)."""
    from ..reference.interpreter import Interpreter, kernel_for, op_name  # only a fold of constants needs them

    kernel = kernel_for(op)
    if kernel is None:
        return None, f"no kernel computes {op_name(op)}"
    assert graph.model is not None  # passes run on the graphs of a model (Model.add_graph sets it)
    interp = Interpreter(graph.model)
    try:
        args = [None if t is None else Interpreter._value(t, {}, op, None) for t in op.inputs]
        outputs = kernel(interp, op, None, args)
    except (RunFailed, ModelError, ValueError, IndexError) as e:
        return None, f"cannot be computed: {e}"
    values = []
    for tensor, value in zip(op.outputs, outputs):
        value = np.asarray(value)
        if value.dtype != NUMPY_DTYPES[tensor.dtype]:
            value = value.astype(NUMPY_DTYPES[tensor.dtype])
        if value.size == 0:
            return None, f"{tensor.name!r} would hold no element"
        if -1 not in tensor.signature and tuple(value.shape) != tensor.shape:
            return None, f"{tensor.name!r} is {list(tensor.shape)} but computes to {list(value.shape)}"
        values.append(value)
    return values, None


def make_constant(tensor: Tensor, value: np.ndarray) -> None:
    """`tensor` holds `value` from now on (a new buffer; its static shape is the value's)."""
    tensor.data = np.asarray(value, order="C")  # ascontiguousarray would make rank 0 rank 1
    tensor.shape_signature = None
