"""remove_redundant_reshape: RESHAPE -> RESHAPE becomes one RESHAPE (ONE's pass of that name).

    before:  x [4,6] -> RESHAPE([2,12]) -> t -> RESHAPE([1,2,3,4]) -> y
    after:   x [4,6] -> RESHAPE([1,2,3,4]) -> y           (t stays only if something else reads it)

Exact: neither RESHAPE moves an element, so the second one read from x gives the same buffer
under the same shape. The second RESHAPE's new shape is its own; a -1 in it is inferred from the
element count, which x and t share.

Guards: t is made by a RESHAPE; x, t and y read their bytes with the same quantization. The first
RESHAPE is left to whoever else reads t (cleanup drops it when no one does), so nothing another
reader or the outside sees changes. Not when LiteRT, running the second RESHAPE over x's buffer,
would let an op after it overwrite what another reader of x needs, nor when t, left with one
reader, would let LiteRT run that reader in place over it (engine/reshapes.py: aliasing_hazard,
release_hazard). A second RESHAPE nothing reads is left to the cleanup, which keeps it where its
reference is what stops an op in place (engine/planner.py).
"""

from __future__ import annotations

from ..engine.report import PassResult
from ..engine.reshapes import HAZARD, aliasing_hazard, release_hazard, same_quantization
from ..ir.graph import Graph


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for op in [op for op in graph.ops if op.kind == "RESHAPE"]:
        t = op.input(0)
        first = None if t is None else t.producer
        if t is None or first is None or first.kind != "RESHAPE" or (x := first.input(0)) is None:
            continue
        if graph.is_unread(op.outputs[0]):
            continue  # nothing reads it: the cleanup's (it keeps a reader LiteRT needs, engine/planner.py)
        if not (same_quantization(x, t) and same_quantization(t, op.outputs[0])):
            result.refuse_value(
                op, f"{x.name!r}, {t.name!r} and {op.outputs[0].name!r} are not read with one quantization"
            )
            continue
        removed = [first] if graph.has_single_use(t, op) else []  # else it stays for t's other readers
        if aliasing_hazard(graph, x, op.outputs[0], added=0 if removed else 1) or (
            not removed and release_hazard(graph, t, op)
        ):
            result.refuse_value(op, HAZARD)  # (a RESHAPE is no batch-norm candidate: not a skip)
            continue
        result.fold(op, removed, output=op.outputs[0].name)
        graph.set_input(op, 0, x)
    return result
