"""A small seeded run of the layout differential fuzzer (tests/layout_fuzzing.py; the long run is
scripts/layout_fuzz.py): random layout-heavy graphs, every option set, original vs optimized in
LiteRT. Every fair case must come out "ok"; the generator must make mostly fair cases."""

from __future__ import annotations

import collections

from layout_fuzzing import OPTION_SETS, decoder_graph, prepare, random_graph, run_case

GRAPHS = 200


def test_seeded_graphs_optimize_exactly_in_litert():
    outcomes: collections.Counter = collections.Counter()
    failures = []
    fair = 0
    for seed in range(GRAPHS):
        content, _why = prepare(random_graph(seed))
        if content is None:
            continue
        fair += 1
        for option_set in OPTION_SETS:
            outcome = run_case(content, option_set)
            outcomes[outcome.kind] += 1
            if outcome.kind != "ok":
                failures.append((seed, option_set, outcome.kind, outcome.detail))
    assert fair >= 0.9 * GRAPHS, f"only {fair} of {GRAPHS} generated graphs are fair cases"
    assert failures == [], failures[:10]
    assert outcomes["ok"] == fair * len(OPTION_SETS)


def test_the_fuzzer_sees_a_broken_output():
    """The comparison can fail: a model whose output is negated differs in LiteRT."""
    import numpy as np

    from layout_fuzzing import _close

    a = np.linspace(-1, 1, 12, dtype=np.float32)
    assert _close(a, a + np.float32(1e-7))
    assert not _close(a, -a)
    assert not _close(a, a.reshape(3, 4))


def test_an_internal_error_counts_as_exit_3_not_as_a_refusal(monkeypatch):
    """InternalError is a BnfoldError (exit 3): counted as a refusal, the output gate's finds hid
    in the long run's `refused` column."""
    from bnfold import api
    from bnfold.errors import InternalError, UsageError

    content, _why = prepare(random_graph(0))
    internal = InternalError("pass x left a model bnfold's reader refuses")
    for error, kind in ((internal, "exit3"), (UsageError("no"), "refused")):

        def fail(*_args, error=error, **_kwargs):
            raise error

        monkeypatch.setattr(api, "optimize", fail)
        assert run_case(content, "default").kind == kind


QUANT_GRAPHS = 60


def test_seeded_quantized_graphs_optimize_bit_for_bit_in_litert():
    """Quantized graphs under the passes for quantized graphs, the layout passes and the NCHW
    conversion: every output bit for bit, and every such pass folds somewhere in the run (the
    generator reaches what it is for)."""
    from bnfold import api
    from layout_fuzzing import QUANT_LAYOUT, QUANT_OPTION_SETS, QUANT_PASSES, quantized_graph

    every = [*QUANT_PASSES.split(","), *QUANT_LAYOUT.split(","), "convert_nchw_to_nhwc"]

    failures, folded, fair = [], collections.Counter(), 0
    for seed in range(QUANT_GRAPHS):
        content, _why = prepare(quantized_graph(seed))
        if content is None:
            continue
        fair += 1
        for option_set in QUANT_OPTION_SETS:
            outcome = run_case(content, option_set)
            if outcome.kind != "ok":
                failures.append((seed, option_set, outcome.kind, outcome.detail))
        for name in every:  # alone: together, remove_quantdequant takes mpo's pairs first
            folded.update(f["pass"] for f in api.optimize(content, name).report["folds"] if f["pass"] == name)
    assert fair >= 0.9 * QUANT_GRAPHS, f"only {fair} of {QUANT_GRAPHS} generated graphs are fair cases"
    assert failures == [], failures[:10]
    assert set(folded) == set(every), set(every) - set(folded)


DECODER_GRAPHS = 120


def test_seeded_decoder_graphs_optimize_exactly_in_litert():
    """The transformer passes' patterns (tests/layout_fuzzing.py's decoder_graph) under the default set,
    O1 and the decoder passes: every fair case exact in LiteRT, and the canonical forms do rewrite."""
    from bnfold import api

    failures, fair, folds = [], 0, 0
    for seed in range(DECODER_GRAPHS):
        content, _why = prepare(decoder_graph(seed))
        if content is None:
            continue
        fair += 1
        folds += len(api.optimize(content, OPTION_SETS["decoder"][0]).report["folds"])
        for option_set in ("default", "O1", "decoder"):
            outcome = run_case(content, option_set)
            if outcome.kind != "ok":
                failures.append((seed, option_set, outcome.kind, outcome.detail))
    assert fair >= 0.9 * DECODER_GRAPHS, f"only {fair} of {DECODER_GRAPHS} generated graphs are fair cases"
    assert failures == [], failures[:10]
    assert folds >= DECODER_GRAPHS // 2, folds


def test_seeded_decoder_graphs_fuse_exactly_in_onert():
    """The same graphs as Circle models for the onert target, where RMS_NORM and ROPE are made: every fair
    case equal in onert. onert 0.1.0's own faults are counted apart, not hidden: an output it hands
    back flattened (it ignores FULLY_CONNECTED's keep_num_dims) or holding another output's values
    while the optimized graph computes the original's (the reference interpreter)."""
    import pytest

    from bnfold.values import onert

    if onert.missing():
        pytest.skip(f"onert: {onert.missing()}")
    from layout_fuzzing import run_onert_case

    outcomes: collections.Counter = collections.Counter()
    failures = []
    for seed in range(DECODER_GRAPHS):
        outcome = run_onert_case(decoder_graph(seed))
        outcomes[outcome.kind] += 1
        if outcome.kind not in ("ok", "unfair", "onert_shape", "onert_self"):
            failures.append((seed, outcome.kind, outcome.detail))
    assert failures == [], failures[:10]
    assert outcomes["ok"] >= 0.6 * DECODER_GRAPHS and outcomes["onert_shape"] + outcomes["onert_self"] <= 2, outcomes
