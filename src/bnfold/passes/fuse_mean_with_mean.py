"""fuse_mean_with_mean: MEAN over some axes, then MEAN over others, is one MEAN over all of them
(ONE's pass of that name: ONNX's ReduceMean per axis, e.g. global pooling as two means).

    before:  x [N,H,W,C] -> MEAN(axes [1], keep) -> m [N,1,W,C] -> MEAN(axes [2], keep) -> y [N,1,1,C]
    after:   x -> MEAN(axes [1, 2], keep) -> y

Algebra: each mean of the second op averages equally many means of the first, each over equally
many elements, so the mean of means is the mean over the union of the axes. Exact up to float
rounding (the sums are taken in another order). The second op's axes count the first one's
output axes: with keep_dims those are x's axes, without it x's axes the first op kept, in order
(ONE maps them the second way in both cases, which picks wrong axes under keep_dims).

Guards: both float32, not quantized (an integer MEAN rounds each stage); both keep_dims alike;
axes are constants within x's rank (negative ones counted from the end); x's rank is known; m has
no reader but the second MEAN and is no graph output; the target runs the MEAN made (onert 0.1.0
runs no MEAN of rank 5: two such MEANs stay two, with the reason, rather than one it cannot run
either).
"""

from __future__ import annotations

import numpy as np

from ..engine import targets
from ..engine.match import collapse, is_plain_float, only_reader, read_elsewhere
from ..engine.report import PassResult
from ..ir.graph import Graph, Op
from ..ir.ops import INDEX_DTYPES, reduction_form


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for first in [op for op in graph.ops if op.kind == "MEAN"]:
        if not graph.contains(first):
            continue
        x, m = first.input(0), first.outputs[0]
        second = only_reader(graph, m)
        if x is None or second is None or second.kind != "MEAN" or second.input(0) is not m:
            why = None if x is None or second is not None else read_elsewhere(graph, m, "MEAN")
            if why:
                result.refuse_value(first, why)
            continue
        why = _refusal(first, second, len(x.shape))
        if why is not None:
            result.refuse_value(second, why)
            continue
        axes = _merged_axes(first, second, len(x.shape))
        assert axes is not None  # _refusal said so
        y = second.outputs[0]
        form = reduction_form(len(x.shape), axes, _keep(second))
        unsupported = targets.refusal(graph, "MEAN", rank=len(y.shape), dtype=y.dtype, form=form)  # the one made
        if unsupported:
            result.not_for_target(second, unsupported)
            continue
        c = graph.add_const(graph.unique_name(f"{second.outputs[0].name}/axes"), np.array(axes, np.int32), "INT32")
        collapse(graph, result, [first, second], [x, c], "MEAN", second.options_with(), axes=axes)
    return result


def _refusal(first: Op, second: Op, rank: int) -> str | None:
    """None when the two MEANs make one, else why not."""
    problem = next((t for t in (first.input(0), first.outputs[0], second.outputs[0]) if not is_plain_float(t)), None)
    if problem is not None:
        return f"{problem.name!r} is not float32 (or is quantized)"
    if _keep(first) != _keep(second):
        return "one MEAN keeps the reduced axes and the other does not"
    if _merged_axes(first, second, rank) is None:
        return "an axes operand is no constant list of axes in range"
    return None


def _keep(op: Op) -> bool:
    return bool(getattr(op.options, "keepDims", False))


def _axes(op: Op, rank: int) -> list[int] | None:
    """The op's reduction axes in [0, rank), or None when they are not constant indices in range."""
    t = op.input(1)
    if t is None or not t.is_const or t.dtype not in INDEX_DTYPES:
        return None
    axes = [int(a) for a in t.const_data.reshape(-1)]
    if not all(-rank <= a < rank for a in axes):
        return None
    return sorted({a % rank for a in axes})


def _merged_axes(first: Op, second: Op, rank: int) -> list[int] | None:
    """The axes of x the two means reduce together."""
    inner = _axes(first, rank)
    if inner is None:
        return None
    kept = list(range(rank)) if _keep(first) else [a for a in range(rank) if a not in inner]
    outer = _axes(second, len(kept))
    if outer is None or not kept:
        return None
    return sorted(set(inner) | {kept[a] for a in outer})
