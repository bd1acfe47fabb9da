"""Small matching helpers the pattern passes share (the O1 fusions and canonicalizations): who
reads a tensor, which operand of a binary op is a constant, and the value of a one-element float
constant. A helper answers about the ops it is given only, never by scanning the graph."""

from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Op, Options, Tensor
from ..ir.ops import FUSED_ACTIVATIONS, PADDINGS, info
from ..ir.shapes import shape_problem
from .report import PassResult
from .targets import written_format


def only_reader(graph: Graph, t: Tensor) -> Op | None:
    """The one op reading `t`, when exactly one does (reading it once) and no one outside sees it."""
    readers = graph.consumers(t)
    if len(readers) != 1 or not graph.has_single_use(t, readers[0]):
        return None
    return readers[0]


def float_const(t: Tensor | None) -> np.ndarray | None:
    """The values of a float32 constant that is not quantized, else None."""
    if t is None or not t.is_const or t.dtype != "FLOAT32" or t.is_quantized:
        return None
    return t.data


def scalar(t: Tensor | None) -> float | None:
    """The value of a one-element float32 constant (of any rank), else None."""
    data = float_const(t)
    if data is None or data.size != 1:
        return None
    return float(data.reshape(-1)[0])


def const_operand(op: Op) -> tuple[Tensor, Tensor] | None:
    """(constant, other) for a binary op with exactly one constant operand, in either order."""
    if len(op.inputs) < 2:
        return None
    a, b = op.inputs[:2]
    if a is None or b is None or a.is_const == b.is_const:
        return None
    return (a, b) if a.is_const else (b, a)


def is_plain_float(t: Tensor | None) -> bool:
    """A float32 tensor that is not quantized (what every exact fusion here computes on)."""
    return t is not None and t.dtype == "FLOAT32" and not t.is_quantized


def format_has(graph: Graph, kind: str) -> bool:
    """Whether the format the graph's model will be written in has operator `kind` (INSTANCE_NORM,
    RMS_NORM, ROPE: Circle only): the target's (a .tflite input written as .circle gets them), else,
    for a graph without one (a unit test), the model's own."""
    written = written_format(graph)
    return written is not None and kind in written.op_codes


def format_lacks(graph: Graph, kind: str) -> str | None:
    """Why no pass may make operator `kind` in `graph` for its format (`format_has`), or None."""
    written = written_format(graph)
    if written is None or kind in written.op_codes:
        return None
    return f"the output format {written.name} has no {kind} (Circle only)"


def fully_connected_options() -> Options:
    """A plain FULLY_CONNECTED's options: no fused activation, float weights, the rows flattened."""
    return Options(
        "FullyConnectedOptions",
        fusedActivationFunction=0,
        weightsFormat=0,
        keepNumDims=False,
        asymmetricQuantizeInputs=False,
    )


def pointwise_depthwise_options(activation: str) -> Options:
    """A 1x1 DEPTHWISE_CONV_2D's options (VALID, stride and dilation 1, one filter per channel)
    with the fused `activation`: a per-channel scale and shift written as one layer."""
    return Options(
        "DepthwiseConv2DOptions",
        padding=PADDINGS.index("VALID"),
        strideW=1,
        strideH=1,
        depthMultiplier=1,
        dilationWFactor=1,
        dilationHFactor=1,
        fusedActivationFunction=FUSED_ACTIVATIONS.index(activation),
    )


def batch_matmul_options(graph: Graph, adj_x: bool, adj_y: bool) -> Options:
    """BATCH_MATMUL's options in the graph's format: TFLite names the flags adj_x / adj_y, Circle
    adjoint_lhs / adjoint_rhs (the same table otherwise)."""
    circle = graph.model is not None and graph.model.format.name == "circle"
    names = ("adjointLhs", "adjointRhs") if circle else ("adjX", "adjY")
    return Options("BatchMatMulOptions", **{names[0]: adj_x, names[1]: adj_y}, asymmetricQuantizeInputs=False)


SHAPES_DISAGREE = "its recorded shapes are not what its inputs make (as read): left as it is"


def shapes_hold(op: Op) -> bool:
    """Whether `op`'s recorded output shapes are what its kind's rule computes from its inputs (or
    no rule decides). A file may hold an op whose are not (the reader does not hold that against
    it); ops a pass makes in its place would be checked, and refused by the writer's gate, so a
    rewrite leaves such an op as it was read."""
    return shape_problem(op, info(op.kind).shape) is None


def no_activation(op: Op) -> bool:
    return not op.has_fused_activation_slot or op.fused_activation == "NONE"


def collapse(graph: Graph, result, ops: list[Op], inputs: list[Tensor | None], kind, options=None, **details) -> Op:
    """Replace the chain `ops` (in execution order, its last op's output the result) by one `kind`
    op (a kind name, or an OpCode to keep its version) reading `inputs` and writing that same
    output tensor, so its name and readers stay; the fold is recorded in `result` (a PassResult)
    before anything moves."""
    last = ops[-1]
    y = last.outputs[0]
    result.fold(last, ops, into=[], **details)
    for op in ops:
        graph.remove_op(op)
    made = graph.add_op(kind, inputs, [y], options, after=last)
    result.made(made)
    return made


def transposed_matrix(graph: Graph, result: PassResult, t: Tensor, at: Op) -> Tensor:
    """t's 2-D transpose for a rewrite at `at`: a new constant for a constant (t's buffer is not
    touched), else the output of a new TRANSPOSE(1, 0) placed before `at`."""
    name = graph.unique_name(f"{t.name}/transposed")
    if t.is_const:
        return graph.add_const(name, np.ascontiguousarray(t.const_data.T))
    perm = graph.add_const(graph.unique_name(f"{name}/perm"), np.array([1, 0], np.int32), "INT32")
    out = graph.add_tensor(name, t.dtype, t.shape[::-1])
    result.made(graph.add_op("TRANSPOSE", [t, perm], [out], Options("TransposeOptions"), before=at))
    return out


def read_elsewhere(graph: Graph, t: Tensor, kind: str) -> str | None:
    """Why the `kind` op reading `t` cannot take it into a fusion: `t` has another reader or is a
    model output (for the report); None when no `kind` op reads `t`, or when one is its only reader."""
    if only_reader(graph, t) is not None or not any(op.kind == kind for op in graph.consumers(t)):
        return None
    where = "is a model output" if graph.is_observed(t) else "has another reader than the " + kind
    return f"{t.name!r} {where}, so it must stay computed"


def not_plain_float(x: Tensor, tensors) -> str | None:
    """Why a fusion computing on float32 tensors of x's shape cannot take `tensors` (for the
    report): one is not float32 or is quantized, or has another shape (a constant broadcast it)."""
    for t in tensors:
        if not is_plain_float(t):
            return f"{t.name!r} is {'quantized ' if t.is_quantized else ''}{t.dtype}, not float32"
        if t.shape != x.shape:
            return f"{t.name!r} is {list(t.shape)} but {x.name!r} is {list(x.shape)}: a constant broadcasts it"
    return None
