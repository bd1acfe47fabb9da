"""The reference interpreter: runs a model's IR in numpy, with LiteRT's semantics.

It exists so that a value check does not depend on one runtime, and so that Circle-only models
(operators TFLite lacks) can be checked at all, and models holding the TensorFlow ops a converter
leaves as CUSTOM (custom_kernels.py: AddV2, BatchMatMulV2, MatMul, SplitV, BroadcastTo,
MaxPoolWithArgmax, Erf; and GELU). The float kernels are in kernels.py; int8
CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL, RELU, RELU6, MAX_POOL_2D, AVERAGE_POOL_2D and RESHAPE
run with TFLite's integer arithmetic, bit-exact with LiteRT's builtin kernels (quantized.py);
other integer-quantized operators are refused.

An operator it cannot run raises UnsupportedOperator naming the operator and its index; a kernel
that fails on the values it is given (an index out of range, a shape read from an input that
does not fit) raises RunFailed: the value check then could not verify, which is no difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..errors import ModelError, RunFailed
from ..ir.const import NUMPY_DTYPES
from ..ir.custom import custom_code
from ..ir.graph import Op, Owner, Tensor
from ..ir.model import Model
from . import kernels
from .custom_kernels import CUSTOM_KERNELS, k_custom, k_gelu
from .kernels import UnsupportedOperator
from .quantized import QUANTIZED_KERNELS
from .select_kernels import SELECT_KERNELS
from .sparse_kernels import SPARSE_KERNELS


class Runnable(Protocol):
    """What run_graph reads of a graph: a Graph, or a region of one (values/local.py)."""

    @property
    def ops(self) -> Sequence[Op]: ...
    @property
    def inputs(self) -> Sequence[Tensor]: ...
    @property
    def outputs(self) -> Sequence[Tensor]: ...


KERNELS = {**kernels.KERNELS, **SELECT_KERNELS, **SPARSE_KERNELS, "CUSTOM": k_custom, "GELU": k_gelu}

__all__ = ["Interpreter", "UnsupportedOperator", "run", "unsupported_kinds"]

# ---- the interpreter -------------------------------------------------------------------------


def _runs_on_integers(op) -> bool:
    """Whether the op computes on quantized integers: DEQUANTIZE never does (its float kernel reads
    the integers), QUANTIZE only from an integer input (a requantization), every other op when a
    tensor of it is integer-quantized."""
    if op.kind == "DEQUANTIZE":
        return False
    if op.kind == "QUANTIZE":
        return any(_integer_quantized(t) for t in op.inputs)
    return any(_integer_quantized(t) for t in (*op.inputs, *op.outputs))


def _integer_quantized(t) -> bool:
    """A tensor holding quantized integers (whose arithmetic the float kernels must not do)."""
    return t is not None and t.is_quantized and t.dtype not in ("FLOAT32", "FLOAT16", "FLOAT64")


class Interpreter:
    """Runs the subgraphs of one Model. Stateless between calls."""

    def __init__(self, model: Model | Owner, *, deadline=None):
        self.model = model
        self.deadline = deadline  # check.deadline.Deadline, checked before every operator

    def run(self, inputs: list[np.ndarray], graph_index: int = 0) -> list[np.ndarray]:
        """Outputs of subgraph `graph_index` for `inputs` (in the subgraph's input order)."""
        graph = self.model.graphs[graph_index]
        if len(inputs) != len(graph.inputs):
            raise ModelError(f"model has {len(graph.inputs)} inputs, {len(inputs)} given")
        cast = [np.asarray(x, dtype=NUMPY_DTYPES.get(t.dtype, None)) for x, t in zip(inputs, graph.inputs)]
        return [np.array(v) for v in self.run_graph(graph, cast)]

    def run_graph(self, graph: Runnable, inputs: list[np.ndarray]) -> list[np.ndarray]:
        values: dict[int, np.ndarray] = {id(t): x for t, x in zip(graph.inputs, inputs)}
        remaining = self._last_uses(graph)
        for index, op in enumerate(graph.ops):
            if self.deadline is not None:
                self.deadline.check()
            kernel = kernel_for(op)
            if kernel is None:
                raise UnsupportedOperator(f"reference interpreter cannot run {op_name(op)} (op {index})")
            if _runs_on_integers(op):
                kernel = QUANTIZED_KERNELS.get(op.kind)
                if kernel is None:
                    raise UnsupportedOperator(f"reference interpreter cannot run quantized {op.kind} (op {index})")
            args = [None if t is None else self._value(t, values, op, index) for t in op.inputs]
            try:
                outs = kernel(self, op, index, args)
            except (ValueError, IndexError) as e:  # numpy refused what the inputs ask (a shape from an input)
                raise RunFailed(f"reference interpreter failed to run the model: {op.kind} (op {index}): {e}") from None
            for t, v in zip(op.outputs, outs):
                dtype = NUMPY_DTYPES.get(t.dtype)
                values[id(t)] = v if dtype is None or v.dtype == dtype else v.astype(dtype)
            for t in remaining.get(index, ()):
                values.pop(id(t), None)
        return [self._value(t, values, None, None) for t in graph.outputs]

    @staticmethod
    def _last_uses(graph: Runnable) -> dict[int, list]:
        """op index -> activations no later op or graph output needs (freed to bound memory)."""
        last: dict[int, tuple[int, Tensor]] = {}
        for index, op in enumerate(graph.ops):
            for t in op.inputs:
                if t is not None and not t.is_const:
                    last[id(t)] = (index, t)
        keep = {id(t) for t in graph.outputs}
        out: dict[int, list] = {}
        for key, (index, t) in last.items():
            if key not in keep:
                out.setdefault(index, []).append(t)
        return out

    @staticmethod
    def _value(t, values, op, index) -> np.ndarray:
        v = values.get(id(t))
        if v is not None:
            return v
        if t.is_const:
            where = f" (op {index})" if index is not None else ""
            if getattr(t.record, "sparsity", None) is not None:  # stored compressed, not in its shape
                if op is not None and op.kind == "DENSIFY":
                    return t.buffer.data  # DENSIFY decodes it (sparse_kernels.py)
                raise UnsupportedOperator(f"reference interpreter cannot read sparse tensor {t.name!r}{where}")
            data = t.data
            if data.dtype == np.uint8 and t.dtype not in NUMPY_DTYPES:
                raise UnsupportedOperator(f"reference interpreter cannot read {t.dtype} tensor {t.name!r}{where}")
            return data
        where = f"{op.kind} (op {index})" if op is not None else "a graph output"
        raise ModelError(f"tensor {t.name!r} read by {where} has no value")


def kernel_for(op):
    """The kernel that computes `op` (a custom one by its custom code), or None."""
    if op.kind == "CUSTOM":  # only the TensorFlow ops custom_kernels.py knows, by their custom code
        return k_custom if (custom_code(op) or "") in CUSTOM_KERNELS else None
    return KERNELS.get(op.kind)


def run(model: Model, inputs: list[np.ndarray], graph_index: int = 0) -> list[np.ndarray]:
    """Run subgraph `graph_index` of `model` on `inputs` with the reference interpreter."""
    return Interpreter(model).run(inputs, graph_index)


def op_name(op) -> str:
    """The operator's kind; a custom operator with its custom code, e.g. CUSTOM(Landmarks2TransformMatrix)."""
    if op.kind != "CUSTOM":
        return op.kind
    return f"CUSTOM({(op.opcode.custom_code or b'').decode(errors='replace')})"


def unsupported_kinds(model: Model) -> list[str]:
    """Operator kinds of `model` the reference interpreter has no kernel for (custom ones named)."""
    return sorted({op_name(op) for g in model.graphs for op in g.ops if kernel_for(op) is None})
