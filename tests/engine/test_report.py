"""report.py: refusals keep the op they are about, results and the run's report as values."""

from __future__ import annotations

import json

import numpy as np

from bn_models import conv2d
from bnfold.engine.report import PassResult, Refusal, Report


def test_refusal_prefix_keeps_the_op():
    graph = conv2d()[0].model().graphs[0]
    r = Refusal("why", graph.ops[0]).prefixed("CONV_2D 'conv': ")
    assert r.reason == "CONV_2D 'conv': why" and r.at is graph.ops[0] and str(r) == r.reason


def test_pass_result_and_report():
    graph = conv2d()[0].model().graphs[0]
    conv = graph.ops[0]
    result = PassResult()
    assert not result.changed
    result.skip(conv, Refusal("not now"), detail=np.float32(1.5))
    result.fold(conv, [], scale=np.array([1.0, 2.0]))
    assert result.changed
    assert result.skipped == [conv]
    report = Report(["p"])
    report.add("p", 0, result)
    [said] = report.said
    assert said.op is conv and said.record["reason"] == "not now" and said.record["pass"] == "p"
    report.skips = [
        {
            "subgraph": 0,
            "at": said.record["at"],
            "pass": "p",
            "reason": "not now",
            "reasons": {"p": "not now"},
            "chain": [said.record["at"]],
            "detail": np.float32(1.5),
        }
    ]  # what leftovers.explain makes
    data = json.loads(report.to_json())
    assert data["folds"] == [
        {
            "pass": "p",
            "subgraph": 0,
            "layer": {"index": 0, "kind": "CONV_2D", "output": "conv"},
            "removed": [],
            "scale": [1.0, 2.0],
        }
    ]
    assert data["skips"][0]["reason"] == "not now" and data["skips"][0]["detail"] == 1.5
    assert report.counts() == {"p": (1, 1)}
