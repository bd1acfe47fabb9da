"""fuse_pad_with_conv: a zero PAD of the spatial axes before a VALID CONV_2D / DEPTHWISE_CONV_2D
goes when it pads exactly what SAME padding would: the layer takes SAME padding instead.

    before:  x [1,7,7,C] -> PAD([[0,0],[2,2],[2,2],[0,0]]) -> [1,11,11,C] -> DEPTHWISE_CONV_2D(5x5, stride 2, VALID)
    after:   x [1,7,7,C] -> DEPTHWISE_CONV_2D(5x5, stride 2, SAME)                  both -> [1,4,4,C]

PyTorch pads symmetrically (padding=k//2), so TICO writes PAD + VALID where litert-torch writes
SAME whenever SAME's split agrees. Exact: SAME on an input of size n with stride s gives
o = ceil(n/s) outputs and pads total = max((o-1)·s + (k-1)·d + 1 - n, 0) zeros, total//2 before
and the rest after (LiteRT's rule); when the PAD's zeros are those and the VALID layer's output
has that size, both compute the same sums over the same zeros.

Guards: PAD, or PADV2 with a constant zero value; integer constant paddings, zero on the batch and
channel axes; float data (a quantized zero is the zero point); static 4-D shapes; the padded
tensor read only by the layer, as its data input, and no graph output.
"""

from __future__ import annotations

import numpy as np

from ..engine.report import PassResult
from ..ir.graph import Graph, Op
from ..ir.ops import INDEX_DTYPES, PADDINGS

LAYERS = ("CONV_2D", "DEPTHWISE_CONV_2D")


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for layer in [op for op in graph.ops if op.kind in LAYERS]:
        pad = _same_pad(graph, layer)
        if pad is None:
            continue
        if isinstance(pad, str):
            result.refuse_value(layer, pad)
            continue
        result.fold(layer, [pad], padding="SAME")
        graph.set_input(layer, 0, pad.inputs[0])
        assert layer.options is not None  # _same_pad: it has VALID padding
        layer.options = layer.options.copy(padding=PADDINGS.index("SAME"))
        graph.remove_op(pad)
    return result


def _same_pad(graph: Graph, layer: Op) -> Op | str | None:
    """The PAD before `layer` that pads what SAME would; None when no PAD feeds a VALID layer, or
    why the one that does cannot go."""
    y, options = layer.input(0), layer.options
    pad = None if y is None else y.producer
    if (
        y is None
        or options is None
        or pad is None
        or pad.kind not in ("PAD", "PADV2")
        or getattr(options, "padding", None) != PADDINGS.index("VALID")
        or y in layer.inputs[1:]
    ):
        return None
    if graph.is_observed(y) or graph.consumers(y) != [layer]:
        return f"{y.name!r} is read by more than the {layer.kind} (or is a model output)"
    x, w, out = pad.inputs[0], layer.input(1), layer.outputs[0]
    if x is None or w is None or len(w.shape) != 4:
        return None
    if x.dtype != "FLOAT32" or x.is_quantized:
        return f"{x.name!r} is not float32 (or is quantized): SAME pads the real zero"
    if any(len(t.shape) != 4 or -1 in t.signature for t in (x, y, out)):
        return "the shapes are not static and 4-D"
    paddings = _paddings(pad)
    if paddings is None:
        return f"the {pad.kind}'s paddings are not constant, or it pads another value than zero"
    if np.any(paddings[[0, 3]] != 0):
        return f"the {pad.kind} pads the batch or channel axis"
    strides = (options.strideH or 1, options.strideW or 1)
    dilations = (getattr(options, "dilationHFactor", 1) or 1, getattr(options, "dilationWFactor", 1) or 1)
    for d in range(2):
        n, o, s = x.shape[1 + d], out.shape[1 + d], strides[d]
        total = max((o - 1) * s + (w.shape[1 + d] - 1) * dilations[d] + 1 - n, 0)
        axis = ("height", "width")[d]
        if o != -(-n // s):
            return f"the {axis} of {out.name!r} is {o}; SAME would make {-(-n // s)}"
        if list(paddings[1 + d]) != [total // 2, total - total // 2]:
            return (
                f"pads {paddings[1 + d].tolist()} along the {axis}; SAME would pad {[total // 2, total - total // 2]}"
            )
    return pad


def _paddings(pad: Op) -> np.ndarray | None:
    """The [4, 2] paddings of a PAD / zero-valued PADV2 as integers, or None."""
    paddings = pad.input(1)
    if paddings is None or not paddings.is_const or paddings.dtype not in INDEX_DTYPES:
        return None
    if pad.kind == "PADV2":
        value = pad.input(2)
        if value is not None and (not value.is_const or np.any(np.asarray(value.data) != 0)):
            return None
    values = np.asarray(paddings.data).reshape(-1, 2)
    return values if values.shape == (4, 2) else None
