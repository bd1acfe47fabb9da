"""Writer layout rules that only bite at scale, checked on small models."""

from __future__ import annotations

import mmap

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from bnfold.io.atomic import save_model
from bnfold.io.formats import TFLITE
from bnfold.io.reader import read_model
from bnfold.ir.graph import Graph, Options
from bnfold.ir.model import Model


def _conv_model() -> Model:
    model = Model(TFLITE, version=3)
    g = model.add_graph(Graph("main"))
    x = g.add_tensor("x", "FLOAT32", (1, 4, 4, 8))
    w = g.add_const("w", np.ones((8, 1, 1, 8)))
    b = g.add_const("b", np.zeros(8))
    y = g.add_tensor("y", "FLOAT32", (1, 4, 4, 8))
    g.add_op("CONV_2D", [x, w, b], [y], Options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    g.inputs, g.outputs = [x], [y]
    return model


def _layout(path):
    """(end of every inline data vector, start of every offset buffer) in the file."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        root = schema.Model.GetRootAs(m, 0)
        inline_ends, offsets = [], []
        for i in range(root.BuffersLength()):
            buf = root.Buffers(i)
            if buf.Offset() > 1:
                offsets.append(buf.Offset())
            elif buf.DataLength():
                data = buf.DataAsNumpy()
                inline_ends.append(data.ctypes.data - np.frombuffer(m, np.uint8).ctypes.data + data.size)
                del data
        return inline_ends, offsets


def test_inline_data_precedes_offset_buffers(tmp_path):
    # the buffer_location metadata stays inline; it must not land behind gigabytes of weights,
    # where its 32-bit offset would overflow (LiteRT then rejects the whole file)
    out = tmp_path / "ext.tflite"
    save_model(_conv_model(), str(out), TFLITE, external=True)
    inline_ends, offsets = _layout(out)
    assert inline_ends and offsets
    assert max(inline_ends) <= min(offsets)
    again = tmp_path / "again.tflite"
    save_model(read_model(str(out)), str(again), TFLITE, external=True)
    inline_ends, offsets = _layout(again)
    assert max(inline_ends) <= min(offsets)
