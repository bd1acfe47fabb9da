"""The real-exporter fixtures in tests/data/zoo (see its README): the file and its reference
output agree in LiteRT, and the default passes keep every output within float rounding
(float16 models: within one float16 rounding of the folded weights)."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.api import apply_passes
from bnfold.io.reader import read_model
from bnfold.values import litert
from conftest import DATA

ZOO = DATA / "zoo"
ZOO_FIXTURES = sorted(p.name for p in ZOO.iterdir() if p.suffix in (".tflite", ".circle"))


def _arrays(name: str) -> tuple[np.ndarray, np.ndarray]:
    stem = ZOO / name.rsplit(".", 1)[0]
    return np.load(f"{stem}.input.npy"), np.load(f"{stem}.ref.npy")


def _tolerance(name: str) -> float:
    return 2e-3 if "fp16" in name else 1e-5


def test_every_zoo_fixture_is_small_and_complete():
    assert len(ZOO_FIXTURES) >= 19
    for name in ZOO_FIXTURES:
        assert (ZOO / name).stat().st_size < 300_000, name
        x, ref = _arrays(name)
        assert x.dtype == np.float32 and ref.size > 0


@pytest.mark.parametrize("name", ZOO_FIXTURES)
def test_zoo_fixture_matches_its_reference(name):
    x, ref = _arrays(name)
    (got,) = litert.run(read_model(str(ZOO / name)), [x])
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ZOO_FIXTURES)
def test_default_passes_keep_zoo_fixture_exact(name):
    x, ref = _arrays(name)
    model = read_model(str(ZOO / name))
    apply_passes(model)
    (got,) = litert.run(model, [x])
    tol = _tolerance(name) * (1 + float(np.max(np.abs(ref))))
    assert got.shape == ref.shape
    assert float(np.max(np.abs(got - ref))) <= tol
