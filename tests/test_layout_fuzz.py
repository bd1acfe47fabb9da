"""A small seeded run of the layout differential fuzzer (tests/layout_fuzzing.py; the long run is
scripts/layout_fuzz.py): random layout-heavy graphs, every option set, original vs optimized in
LiteRT. Every fair case must come out "ok"; the generator must make mostly fair cases."""

from __future__ import annotations

import collections

from layout_fuzzing import OPTION_SETS, prepare, random_graph, run_case

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
    """Quantized graphs under the passes for quantized graphs: every output bit for bit, and every
    such pass folds somewhere in the run (the generator reaches what it is for)."""
    from bnfold import api
    from layout_fuzzing import QUANT_OPTION_SETS, QUANT_PASSES, quantized_graph

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
        for name in QUANT_PASSES.split(","):  # alone: together, remove_quantdequant takes mpo's pairs first
            folded.update(f["pass"] for f in api.optimize(content, name).report["folds"])
    assert fair >= 0.9 * QUANT_GRAPHS, f"only {fair} of {QUANT_GRAPHS} generated graphs are fair cases"
    assert failures == [], failures[:10]
    assert set(folded) == set(QUANT_PASSES.split(",")), folded
