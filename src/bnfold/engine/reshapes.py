"""What the RESHAPE passes share: when two tensors hold the same values in the same memory order,
and how a RESHAPE is made.

A RESHAPE only renames the axes of a row-major buffer; it never moves an element. So it can stand
for any op that also moves none (a TRANSPOSE of unit axes), and it can be dropped or merged
wherever the shapes say so. Dynamic dimensions (-1 in the shape signature) are kept as -1 in the
new shape; a RESHAPE takes at most one of them.
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Op, Options, Tensor


def same_quantization(a: Tensor, b: Tensor) -> bool:
    """A RESHAPE copies bytes: its input and output must read them with the same scale and zero point."""
    if not a.is_quantized and not b.is_quantized:
        return True
    if a.is_quantized != b.is_quantized:
        return False
    qa, qb = a.quantization, b.quantization
    return all(
        np.array_equal(np.asarray(getattr(qa, f, None)), np.asarray(getattr(qb, f, None)))
        for f in ("scale", "zeroPoint", "quantizedDimension")
    )


def add_reshape(graph: Graph, x: Tensor, y: Tensor, *, after: Op) -> Op:
    """RESHAPE x -> y (y's shape, -1 for its one dynamic dimension if any) placed after `after`."""
    new_shape = [int(d) for d in y.signature]
    shape = graph.add_const(f"{y.name}/shape", np.array(new_shape, dtype=np.int32), "INT32")
    return graph.add_op("RESHAPE", [x, shape], [y], Options("ReshapeOptions", newShape=new_shape), after=after)
