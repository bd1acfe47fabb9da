"""fuse_hardswish: the hard-swish decomposition becomes LiteRT's one HARD_SWISH kernel.

    hardswish(x) = x · relu6(x + 3) / 6

TICO (PyTorch's nn.Hardswish, decomposed) writes it as three ops; the scale 1/6 may also come as
a MUL by 1/6, or be applied to relu6(x + 3) before the product (x · hardsigmoid(x)):

    before:  x ─┬─> ADD(3, RELU6) -> r ─┐                          after:  x -> HARD_SWISH -> y
                └──────────────────────> MUL(x, r) -> m -> DIV(m, 6) -> y
       or:  x -> ADD(3, RELU6) -> r -> DIV(r, 6) -> h -> MUL(x, h) -> y

The relu6 is the ADD's fused RELU6 or a RELU6 op after an activation-free ADD. Every form is the
same function; LiteRT's kernels (builtin and XNNPACK) compute it in another order,
so the result differs by float rounding only: max |difference| / max |output| 1.3e-7 on x ~
normal(0, 100), 4.2e-7 on the output of TICO's MobileNetV3-Small (19 hard swishes), against the
check's 1e-5. The first op after x must be the ADD of exactly 3 and the scale exactly 6 (DIV) or
float32(1/6) (MUL), one-element constants; every matched op must keep x's shape.

Guards: the target runs HARD_SWISH (engine/targets.py: onert 0.1.0 does not load it); float32, not
quantized; the intermediate tensors (r, m or h) have one reader and are not graph outputs (x may
have any number of readers); the MUL and DIV carry no fused activation.
Runs before the batch-norm folds: the 3 and the 1/6 are scalar constants, which the folds would
otherwise take as part of a batch norm (or fold the 1/6 forward into a layer), breaking the form.
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.report import PassResult, Refusal
from ..ir.graph import Graph, Op, Tensor

SIXTH = float(np.float32(1 / 6))


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for add in [op for op in graph.ops if op.kind == "ADD"]:
        if not graph.contains(add):
            continue
        match = _match(graph, add)
        if match is None:
            continue
        if isinstance(match, Refusal):
            result.refuse(match, add)
            continue
        x, ops = match
        unsupported = targets.refusal(graph, "HARD_SWISH")
        if unsupported:  # onert has no HARD_SWISH: the decomposition stays (decompose_hardswish makes it)
            result.not_for_target(add, unsupported)
            continue
        result.fold(add, ops, into=[], activation="HARD_SWISH")
        y = ops[-1].outputs[0]
        for op in ops:
            graph.remove_op(op)
        result.made(graph.add_op("HARD_SWISH", [x], [y], None, after=ops[-1]))
    return result


def _match(graph: Graph, add: Op) -> tuple[Tensor, list[Op]] | Refusal | None:
    """(x, the ops computing hardswish(x)) for the decomposition starting at `add`, a Refusal when
    the form is there but a guard fails, None when `add` does not start one."""
    x = _operand_besides(add, lambda c: _is_scalar(c, 3.0))
    if x is None:
        return None
    ops = [add]
    r = add.outputs[0]
    if add.fused_activation == "NONE":
        relu6 = _only_reader(graph, r)
        if relu6 is None or relu6.kind != "RELU6":
            return None
        ops.append(relu6)
        r = relu6.outputs[0]
    elif add.fused_activation != "RELU6":
        return None
    first = _only_reader(graph, r)
    if first is None:
        return None
    if _scales_by_sixth(first, r):  # x · (relu6(x + 3) / 6)
        last = _only_reader(graph, first.outputs[0])
        if last is None or last.kind != "MUL" or set(last.inputs[:2]) != {x, first.outputs[0]}:
            return None
    elif first.kind == "MUL" and set(first.inputs[:2]) == {x, r}:  # (x · relu6(x + 3)) / 6
        last = _only_reader(graph, first.outputs[0])
        if last is None or not _scales_by_sixth(last, first.outputs[0]):
            return None
    else:
        return None
    ops += [first, last]
    return _refusal(graph, x, ops) or (x, ops)


def _refusal(graph: Graph, x: Tensor, ops: list[Op]) -> Refusal | None:
    for op in ops:
        out = op.outputs[0]
        if out.dtype != "FLOAT32" or out.is_quantized or out.shape != x.shape:
            return Refusal(f"hard swish: {op.kind} {out.name!r} is not a float32 tensor of x's shape")
        if op is not ops[-1] and graph.is_observed(out):
            return Refusal(f"hard swish: the intermediate {out.name!r} is a graph output")
        if op.has_fused_activation_slot and op.fused_activation != "NONE" and op is not ops[0]:
            return Refusal(f"hard swish: {op.kind} {out.name!r} has a fused {op.fused_activation}")
    if x.dtype != "FLOAT32" or x.is_quantized:
        return Refusal(f"hard swish: its input {x.name!r} is {x.dtype}, not float32")
    return None


def _only_reader(graph: Graph, t: Tensor) -> Op | None:
    readers = graph.consumers(t)
    return readers[0] if len(readers) == 1 else None


def _scales_by_sixth(op: Op, v: Tensor) -> bool:
    """op is v / 6 or v · float32(1/6) (either operand order for the MUL)."""
    if op.kind == "DIV":
        return op.inputs[0] is v and _is_scalar(op.inputs[1], 6.0)
    return op.kind == "MUL" and _operand_besides(op, lambda c: _is_scalar(c, SIXTH)) is v


def _operand_besides(op: Op, is_constant) -> Tensor | None:
    """The other operand of a binary op one of whose operands satisfies `is_constant`."""
    a, b = (op.inputs + (None, None))[:2]
    if b is not None and is_constant(b) and a is not None and not a.is_const:
        return a
    if a is not None and is_constant(a) and b is not None and not b.is_const:
        return b
    return None


def _is_scalar(t: Tensor | None, value: float) -> bool:
    """t is a float32 constant holding the one element `value` (of any rank: that the result keeps
    x's shape is checked on the matched ops)."""
    if t is None or not t.is_const or t.dtype != "FLOAT32" or t.is_quantized or t.data is None:
        return False
    data = t.data
    return data.size == 1 and bool(data.reshape(-1)[0] == np.float32(value))
