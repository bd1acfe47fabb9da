"""The writer streams folded weights that are still pending (ir/const.py Scaled) block by block:
the bytes are exactly those of the computed weights, and they are never held whole."""

from __future__ import annotations

import io
import tracemalloc

import numpy as np
import pytest

from bnfold.engine.affine import scale_along
from bnfold.io import writer
from bnfold.io.atomic import save_model
from bnfold.io.formats import TFLITE
from bnfold.io.reader import read_model
from bnfold.io.writer import serialize
from bnfold.ir.graph import Graph, Options
from bnfold.ir.model import Model

RNG = np.random.default_rng(23)


def _folded_conv(out_channels: int = 16, in_channels: int = 12, *, computed: bool) -> tuple[Model, np.ndarray]:
    """x -> CONV_2D(W', b) with W' = W·s (twice folded) pending, or read (computed) before writing;
    the same values either way (a fixed seed). Returns the model and W' computed eagerly."""
    rng = np.random.default_rng(5)
    w = rng.normal(0, 1, (out_channels, 3, 3, in_channels)).astype(np.float32)
    s1, s2 = rng.uniform(0.5, 2, out_channels), rng.uniform(0.5, 2, in_channels)
    model = Model(TFLITE, version=3)
    g = model.add_graph(Graph("main"))
    x = g.add_tensor("x", "FLOAT32", (1, 5, 5, in_channels))
    weights = g.add_const("w", w)
    b = g.add_const("b", rng.normal(0, 1, out_channels))
    y = g.add_tensor("y", "FLOAT32", (1, 5, 5, out_channels))
    g.add_op("CONV_2D", [x, weights, b], [y], Options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    g.inputs, g.outputs = [x], [y]
    weights.data = scale_along(scale_along(weights.pending_data, s1, 0), s2, 3)
    if computed:
        weights.data.tobytes()
    assert (weights.buffer.pending is None) == computed
    step = (w.astype(np.float64) * s1.reshape(-1, 1, 1, 1)).astype(np.float32)
    return model, (step.astype(np.float64) * s2).astype(np.float32)


@pytest.mark.parametrize("external", [False, True])
@pytest.mark.parametrize("scratch", [4, 100, writer._Sink.SCRATCH])
def test_streamed_weights_are_the_bytes_of_the_computed_ones(tmp_path, monkeypatch, external, scratch):
    monkeypatch.setattr(writer._Sink, "SCRATCH", scratch)
    pending, want = _folded_conv(computed=False)
    computed, _ = _folded_conv(computed=True)
    a, b = tmp_path / "pending.tflite", tmp_path / "computed.tflite"
    save_model(pending, str(a), TFLITE, external=external)
    save_model(computed, str(b), TFLITE, external=external)
    assert a.read_bytes() == b.read_bytes()
    memory = io.BytesIO()
    serialize(pending, memory, TFLITE, external=external)  # an in-memory output (api.optimize's bytes)
    assert memory.getvalue() == a.read_bytes()
    back = read_model(str(a)).graphs[0]
    assert back.tensors[[t.name for t in back.tensors].index("w")].data.tobytes() == want.tobytes()
    assert pending.graphs[0].ops[0].inputs[1].buffer.pending is not None  # writing computed nothing to keep


def test_the_writer_never_holds_the_folded_weights_whole(tmp_path):
    model, want = _folded_conv(256, 512, computed=False)  # 4.7 MB of folded weights
    tracemalloc.start()
    try:
        save_model(model, str(tmp_path / "out.tflite"), TFLITE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < want.nbytes // 3, peak
    back = read_model(str(tmp_path / "out.tflite")).graphs[0]
    assert back.tensors[[t.name for t in back.tensors].index("w")].data.tobytes() == want.tobytes()
