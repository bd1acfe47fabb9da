"""Finds of scripts/tico_suite.py (TICO's own test modules, raw and after `optimize -O1`, in onert and
LiteRT), each a TICO export kept in tests/data/tico_suite (its README says what each showed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bnfold import cli
from bnfold.io.reader import read_model
from bnfold.values import litert, onert

DATA = Path(__file__).resolve().parent / "data" / "tico_suite"


def _onert_outputs(path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    if onert.missing():
        pytest.skip(onert.missing())
    return onert.Session(read_model(str(path)))(inputs)


@pytest.mark.parametrize("command", [["convert"], ["optimize", "-O1", "--target", "litert"]])
def test_broadcast_to_written_as_tflite_loads_in_litert(command, tmp_path):
    """TFLite's BROADCAST_TO begins at version 2 (1 is TensorFlow's flex op); TICO writes 1. The TFLite
    file LiteRT itself loads from disk computes what onert computes on TICO's Circle file."""
    source = DATA / "broadcast_to_v1.circle"
    assert [oc.version for oc in read_model(str(source)).opcodes] == [1]
    out = tmp_path / "m.tflite"
    assert cli.run([command[0], str(source), str(out), *command[1:], "-q"]) == 0
    assert [(oc.kind, oc.version) for oc in read_model(str(out)).opcodes] == [("BROADCAST_TO", 2)]
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=(5, 5)).astype(np.float32), rng.normal(size=(1, 5)).astype(np.float32)]
    (got,) = litert.invoke(litert.interpreter(out.read_bytes()), inputs)
    np.testing.assert_array_equal(got, np.broadcast_to(inputs[1], (5, 5)))
    (expected,) = _onert_outputs(source, inputs)
    np.testing.assert_array_equal(got, expected)
