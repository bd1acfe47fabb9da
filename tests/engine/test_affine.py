"""Weight scaling without float64 copies gives exactly the float64-then-round-once result."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.engine import affine


@pytest.mark.parametrize("axis", [0, 1, 3])
def test_scale_along_is_the_single_rounding_of_the_float64_product(axis):
    rng = np.random.default_rng(5)
    w = rng.normal(0, 3, (70, 5, 3, 40)).astype(np.float32)
    v = rng.uniform(-2, 2, w.shape[axis])
    shape = [1] * 4
    shape[axis] = len(v)
    want = (w.astype(np.float64) * v.reshape(shape)).astype(np.float32)
    got = affine.scale_along(w, v, axis)
    assert got.dtype == np.float32 and np.array_equal(got, want)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 17, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_finite_finds_one_non_finite_value_anywhere(bad, where, dtype):
    values = np.linspace(-3, 3, 40).astype(dtype)
    assert affine.finite(values, np.zeros(0, dtype))
    values[where] = bad
    assert not affine.finite(np.ones(3, dtype), values)


def test_finite_makes_no_copy_of_the_weights():
    """finite runs over every folded weight tensor (25 M values in ResNet50V2): it allocates
    nothing the size of the array (np.isfinite would write a bool array of its size)."""
    import tracemalloc

    weights = np.ones(1 << 20, np.float32)
    tracemalloc.start()
    try:
        assert affine.finite(weights)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < weights.size // 16, peak
