"""Pending folded weights (const.Scaled): computed in blocks or whole, they are bit for bit the
product computed at once; the bound that spares computing them never calls an overflow finite;
a Buffer holding one computes it only when read, once."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.engine.affine import finite, scale_along
from bnfold.io.formats import TFLITE
from bnfold.ir.const import Buffer, Scaled, _blocks
from bnfold.ir.graph import Graph
from bnfold.ir.model import Model

RNG = np.random.default_rng(7)


def eager(weights: np.ndarray, vector: np.ndarray, axis: int) -> np.ndarray:
    """The reference: the float64 product, rounded once to the weights' dtype."""
    shape = [1] * weights.ndim
    shape[axis] = len(vector)
    return (weights.astype(np.float64) * vector.reshape(shape)).astype(weights.dtype)


def streamed(scaled: Scaled, scratch_bytes: int) -> bytes:
    return b"".join(bytes(piece) for piece in scaled.chunks(np.empty(scratch_bytes, np.uint8)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", [(70, 5, 3, 41), (1, 3, 3, 37), (13,), (2, 1, 1, 1, 9)])
@pytest.mark.parametrize("scratch", [4, 7 * 4, 1000, 1 << 19])
def test_blocks_and_whole_are_the_one_rounding_of_the_float64_product_on_every_axis(dtype, shape, scratch):
    w = RNG.normal(0, 3, shape).astype(dtype)
    for axis in range(len(shape)):
        v = RNG.uniform(-2, 2, shape[axis])
        want = eager(w, v, axis)
        scaled = Scaled(w, v, axis)
        got = scaled.values()
        assert got.dtype == dtype and got.tobytes() == want.tobytes()
        assert streamed(scaled, scratch) == want.tobytes()  # sizes that are no multiple of a block


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_scaling_of_a_scaling_rounds_after_each_step(dtype):
    w = RNG.normal(0, 3, (6, 3, 3, 5)).astype(dtype)
    v1, v2, v3 = RNG.uniform(-2, 2, 6), RNG.uniform(-2, 2, 5), RNG.uniform(0.1, 3, 3)
    want = eager(eager(eager(w, v1, 0), v2, 3), v3, 1)
    nested = Scaled(Scaled(Scaled(w, v1, 0), v2, 3), v3, 1)
    assert len(nested.steps) == 3 and nested.weights is w  # the original weights, not a product
    assert nested.values().tobytes() == want.tobytes() == streamed(nested, 100)
    # rounding once after all three steps gives other values: the steps are rounded one by one
    once = (w.astype(np.float64) * v1.reshape(6, 1, 1, 1) * v2 * v3.reshape(3, 1)).astype(dtype)
    assert not np.array_equal(once, want)


def test_the_vector_is_copied_and_the_weights_are_never_written():
    w = RNG.normal(0, 1, (4, 3)).astype(np.float32)
    w.flags.writeable = False
    v = RNG.uniform(0.5, 2, 4)
    scaled = Scaled(w, v, 0)
    want = eager(w, v, 0)
    v[:] = 0  # the fold's vector changing afterwards changes nothing
    assert scaled.values().tobytes() == want.tobytes() == streamed(scaled, 8)


def test_a_vector_that_does_not_fit_the_axis_is_an_error():
    with pytest.raises(ValueError):
        Scaled(np.ones((4, 3), np.float32), np.ones(3), 0)


@pytest.mark.parametrize("shape", [(5, 7, 3), (1, 1, 50), (50, 1, 1), (3, 0, 2), ()])
@pytest.mark.parametrize("limit", [1, 4, 21, 1000])
def test_blocks_cover_the_array_in_order_each_within_the_limit(shape, limit):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    parts = [a[key] for key in _blocks(shape, limit)]
    assert all(p.size <= limit for p in parts)
    assert np.concatenate([p.reshape(-1) for p in parts] or [a.reshape(-1)]).tolist() == a.reshape(-1).tolist()
    assert len(parts) <= 3 * a.size / limit + 1


# ---- the bound --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_bound_never_calls_an_overflow_finite_near_the_largest_value(dtype):
    """Weights and scales around the dtype's largest value: whenever the bound says finite, every
    value is; finite() is always the exact answer; the bound proves most products well below the
    largest value without computing them."""
    top = float(np.finfo(dtype).max)
    proven = 0
    for _ in range(300):
        w = (RNG.uniform(-1, 1, (3, 4)) * top * RNG.uniform(0.5, 1)).astype(dtype)
        v = RNG.uniform(0.9, 1.1, 3) * RNG.choice([1, -1], 3)
        scaled = Scaled(w, v, 0)
        exact = bool(np.all(np.isfinite(scaled.values())))
        if scaled.provably_finite():
            assert exact
            proven += 1
        assert finite(scaled) == exact
    assert proven > 50


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_largest_value_itself_and_the_rounding_below_overflow_are_finite(dtype):
    top = np.finfo(dtype).max
    w = np.array([[top], [-top]], dtype)
    assert Scaled(w, np.ones(2), 0).provably_finite()
    # a product a little above the largest value that still rounds down to it (float16: 65504 up
    # to 65520): finite, and the bound, rounded the same way, says so
    nudge = 1 + float(np.finfo(dtype).eps) / 8
    assert Scaled(w, np.full(2, nudge), 0).provably_finite() and finite(Scaled(w, np.full(2, nudge), 0))
    over = Scaled(w, np.array([1.0, 2.0]), 0)
    assert not over.provably_finite() and not finite(over)


def test_a_bound_that_cannot_tell_falls_back_to_the_values():
    # the largest weight and the largest scale sit in different channels: the bound overflows,
    # every product is finite
    w = np.array([[3e38, 1.0], [1e-3, -2e-3]], np.float32)
    scaled = Scaled(w, np.array([1.0, 1e10]), 0)
    assert not scaled.provably_finite() and finite(scaled)
    one_overflows = Scaled(w, np.array([1.2, 1e10]), 0)
    assert not finite(one_overflows)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_weights_or_scales_are_never_proven_finite(bad):
    w = np.ones((2, 3), np.float32)
    assert not Scaled(w, np.array([1.0, bad]), 0).provably_finite()
    assert not finite(Scaled(w, np.array([1.0, bad]), 0))
    w[1, 2] = bad
    assert not Scaled(w, np.ones(2), 0).provably_finite() and not finite(Scaled(w, np.ones(2), 0))


def test_nested_bounds_round_after_each_step():
    w = np.full((2, 2), 1e30, np.float32)
    assert Scaled(Scaled(w, np.full(2, 1e4), 0), np.full(2, 3e4), 1).provably_finite()  # 3e38
    assert not finite(Scaled(Scaled(w, np.full(2, 1e4), 0), np.full(2, 4e4), 1))  # 4e38


def test_finite_does_not_compute_what_the_bound_proves(monkeypatch):
    monkeypatch.setattr(Scaled, "values", lambda self: pytest.fail("computed"))
    assert finite(scale_along(np.ones((3, 2), np.float32), np.full(3, 2.0), 0))


# ---- in the IR --------------------------------------------------------------------------------


def _weights_graph() -> tuple[Graph, np.ndarray]:
    graph = Model(TFLITE).add_graph(Graph("g"))
    w = RNG.normal(0, 1, (4, 2, 2, 3)).astype(np.float32)
    graph.add_const("w", w)
    return graph, w


def test_a_pending_buffer_is_computed_once_when_read_and_not_before(monkeypatch):
    graph, w = _weights_graph()
    t = graph.tensors[0]
    v = RNG.uniform(0.5, 2, 4)
    t.data = scale_along(t.data, v, 0)
    buffer = t.buffer
    calls = []
    original = Scaled.values
    monkeypatch.setattr(Scaled, "values", lambda self: calls.append(1) or original(self))
    assert buffer.pending is not None and buffer.nbytes == w.nbytes and buffer.has_data and t.is_const
    assert t.shape == w.shape and calls == []
    assert t.data.tobytes() == eager(w, v, 0).tobytes() and not t.data.flags.writeable
    assert t.data.tobytes() == eager(w, v, 0).tobytes()
    assert calls == [1] and buffer.pending is None  # computed once, then kept


def test_pending_data_adds_a_step_and_a_computed_buffer_is_scaled_as_an_array():
    graph, w = _weights_graph()
    t = graph.tensors[0]
    v1, v2 = RNG.uniform(0.5, 2, 4), RNG.uniform(0.5, 2, 3)
    want = eager(eager(w, v1, 0), v2, 3)
    t.data = scale_along(t.pending_data, v1, 0)
    pending = t.pending_data
    assert isinstance(pending, Scaled) and np.shares_memory(pending.weights, w)  # not computed: one more step
    t.data = scale_along(pending, v2, 3)
    assert len(t.buffer.pending.steps) == 2 and t.data.tobytes() == want.tobytes()
    # a scaling of an already computed buffer scales the computed array
    graph2, _ = _weights_graph()
    u = graph2.tensors[0]
    u.data = w
    u.data = scale_along(u.pending_data, v1, 0)
    computed = u.data  # read: no longer pending
    assert u.buffer.pending is None and u.pending_data is not None and not isinstance(u.pending_data, Scaled)
    u.data = scale_along(u.pending_data, v2, 3)
    assert np.shares_memory(u.buffer.pending.weights, computed)
    assert u.data.tobytes() == want.tobytes()


def test_a_float16_product_stays_float16_and_another_dtype_is_computed_and_cast():
    graph = Model(TFLITE).add_graph(Graph("g"))
    w16 = RNG.normal(0, 1, (3, 5)).astype(np.float16)
    v = RNG.uniform(0.5, 2, 3)
    t = graph.add_const("w16", scale_along(w16, v, 0), "FLOAT16")
    assert t.buffer.pending is not None and t.data.tobytes() == eager(w16, v, 0).tobytes()
    wide = graph.add_const("w32", scale_along(w16, v, 0), "FLOAT32")  # not a float16 product any more
    assert wide.buffer.pending is None and np.array_equal(wide.data, eager(w16, v, 0).astype(np.float32))


def test_a_buffer_shared_by_two_tensors_is_never_changed():
    graph, w = _weights_graph()
    a = graph.tensors[0]
    b = graph.add_tensor("b", "FLOAT32", a.shape, a.buffer)
    shared, before = a.buffer, bytes(a.buffer.data)
    a.data = scale_along(a.pending_data, RNG.uniform(0.5, 2, 4), 0)
    assert a.buffer is not shared and b.buffer is shared
    a.data.tobytes()  # computing the product reads the shared bytes, never writes them
    assert bytes(b.buffer.data) == before == w.tobytes()


def test_buffer_kinds_report_their_size_without_computing():
    assert not Buffer().has_data and Buffer().nbytes == 0
    empty = Buffer(np.zeros(0, np.uint8))
    assert empty.has_data and empty.nbytes == 0
    pending = Buffer.holding(Scaled(np.ones((2, 3), np.float16), np.ones(2), 0))
    assert pending.nbytes == 12 and "pending" in repr(pending) and pending.has_data and pending.pending is not None
    assert not hasattr(pending, "other")  # only `data` is computed on demand
    assert pending.data.tobytes() == np.ones((2, 3), np.float16).tobytes() and pending.pending is None
