"""Weight scaling without float64 copies gives exactly the float64-then-round-once result."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.passes import affine


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
