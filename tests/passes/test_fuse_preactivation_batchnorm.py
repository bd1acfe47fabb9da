"""fuse_preactivation_batchnorm: BN -> ReLU before layers, moved across the ReLU exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnfold import api
from bnfold.check import litert
from bnfold.io.reader import read_model

from conftest import DATA, build_recipe, fixture_input

TOL = dict(rtol=1e-5, atol=1e-5)


def _optimize(path, passes=None):
    model = read_model(str(path))
    report = api.optimize(model, passes)
    return model, report


def _inputs(model, rng, n=3):
    graph = model.graphs[0]
    return [[rng.normal(0, 2, t.shape).astype(np.float32) for t in graph.inputs] for _ in range(n)]


def _assert_same(original_path, model, inputs):
    original = read_model(str(original_path))
    for xs in inputs:
        for a, b in zip(litert.run(original, xs), litert.run(model, xs)):
            np.testing.assert_allclose(b, a, **TOL)


def test_resnet_v2_mini_every_preactivation_bn_folds_exactly(rng):
    path = DATA / "resnet_v2_mini.tflite"
    model, report = _optimize(path)
    counts = model.op_counts()
    assert counts.get("MUL", 0) == 0
    assert counts["ADD"] == 6  # the 6 residual ADDs, nothing else
    graph = model.graphs[0]
    assert all(not op.inputs[1].is_const and not op.inputs[0].is_const for op in graph.ops if op.kind == "ADD")
    assert counts["CONV_2D"] == 22 and counts["FULLY_CONNECTED"] == 1
    # standalone RELUs remain only where the residual sum also feeds the skip path
    assert counts.get("RELU", 0) == 3
    folds = [f for f in report.folds if f["pass"] == "fuse_preactivation_batchnorm"]
    assert len(folds) == 6 and all(f["shift_kept"] is None for f in folds)
    assert [s for s in report.skips if s["pass"] == "fuse_preactivation_batchnorm"] == []
    _assert_same(path, model, [[fixture_input("resnet_v2_mini.tflite")]] + _inputs(model, rng))
