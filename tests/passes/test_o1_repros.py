"""The O1 repros of issue 43 (tests/data/o1_repros, copied byte for byte from the shared fixtures):
graphs built around the O1 passes' patterns on which `optimize` wrote a model that computes other
values (substitute_padv2_to_pad), exited 3 (the constant folds of a rank-0 result), or undid TICO's
workaround for onert (replace_non_const_fc_with_batch_matmul). Each is optimized under the command
its .txt gives and under -O1, then run in LiteRT (with every tensor preserved for the original, as
deployed for the output) against the original, and for the Circle one in onert."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from bnfold import api, cli
from bnfold.io.reader import read_model
from bnfold.values import onert
from layout_fuzzing import _close, _interpreter, _invoke

REPROS = Path(__file__).resolve().parent.parent / "data" / "o1_repros"
TFLITE = sorted(p.stem for p in REPROS.glob("*.tflite"))


def _command_options(name: str) -> list[str]:
    """The options of the `command:` line of the repro's .txt (after IN and OUT)."""
    line = next(ln for ln in (REPROS / f"{name}.txt").read_text().splitlines() if ln.startswith("command:"))
    return shlex.split(line.removeprefix("command:"))[4:]


def _inputs(interp, seed: int = 0) -> list[np.ndarray]:
    """normal(0, 2) floats, small integers: what the repros' samples are."""
    rng = np.random.default_rng(seed)
    made = []
    for d in interp.get_input_details():
        if np.issubdtype(d["dtype"], np.floating):
            made.append(rng.normal(0.0, 2.0, d["shape"]).astype(d["dtype"]))
        else:
            made.append(rng.integers(-8, 8, d["shape"]).astype(d["dtype"]))
    return made


def _samples(name: str) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """(inputs, the original's outputs in LiteRT with every tensor preserved) for three seeds; for
    an original LiteRT cannot load (a CUSTOM AddV2), the .txt's one sample of a scalar input and
    output, which LiteRT computed on the model before the fold."""
    content = (REPROS / f"{name}.tflite").read_bytes()
    try:
        original = _interpreter(content, preserve=True, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    except RuntimeError:
        return [_txt_scalar_sample(name)]
    return [(xs, _invoke(original, xs)) for xs in (_inputs(original, seed) for seed in range(3))]


def _txt_scalar_sample(name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    lines = (REPROS / f"{name}.txt").read_text().splitlines()
    at_input = next(i for i, ln in enumerate(lines) if ln.startswith("input ") and "(sample 0)" in ln)
    at_output = next(i for i, ln in enumerate(lines) if ln.startswith("expected output 0 "))
    dtype = np.dtype(lines[at_output].split()[-1].split("[")[0])
    return [np.array(lines[at_input + 1], dtype)], [np.array(lines[at_output + 1], dtype)]


def test_every_repro_has_its_command():
    assert len(TFLITE) == 9
    assert all(_command_options(name)[:1] == ["--passes"] for name in TFLITE)


@pytest.mark.parametrize("options", ["txt", "-O1"])
@pytest.mark.parametrize("name", TFLITE)
def test_repro_is_exact_in_litert(name, options, tmp_path):
    source, out, report = REPROS / f"{name}.tflite", tmp_path / f"{name}.opt.tflite", tmp_path / "r.json"
    chosen = _command_options(name) if options == "txt" else ["-O1"]
    assert cli.run(["optimize", str(source), str(out), *chosen, "--report", str(report), "-q"]) == 0
    for xs, want in _samples(name):
        for resolver in ("AUTO", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"):
            have = _invoke(_interpreter(out.read_bytes(), resolver=resolver), xs)
            assert all(_close(a, b) for a, b in zip(want, have)), (resolver, xs)
    folds = [f["pass"] for f in json.loads(report.read_text())["folds"]]
    if name.startswith("internal-") and options == "txt":  # the constant is folded, as the pass should
        assert folds == [_command_options(name)[1]]


PADV2_REASONS = {
    "batch_pad": "pads the pool's batch or channel axis",
    "channel_pad": "pads the pool's batch or channel axis",
    "s100654": "pads the pool's batch or channel axis",
    "pool_same": "SAME window of the pool along height holds padding only",
}


@pytest.mark.parametrize("case", sorted(PADV2_REASONS))
def test_padv2_repro_is_refused_with_its_reason(case):
    result = api.optimize(REPROS / f"value_mismatch-substitute_padv2_to_pad-{case}.tflite", O1=True)
    (said,) = [n["reason"] for n in result.report.get("not_folded", []) if n["pass"] == "substitute_padv2_to_pad"]
    assert PADV2_REASONS[case] in said
    assert result.report["operators"]["after"].get("PADV2") == 1


def test_rank_0_constant_folds_keep_rank_0():
    """make_constant kept a folded scalar a scalar (np.ascontiguousarray made it [1]: exit 3)."""
    result = api.optimize(REPROS / "internal-fold_cast-rank0.tflite", "fold_cast")
    graph = result.model.graphs[0]
    (add,) = graph.ops
    assert [t.shape for t in add.inputs] == [(), ()] and add.inputs[1].const_data.tolist() == 3.0


CONST_LHS = REPROS / "onert-const_lhs_matmul.circle"


def test_tico_onert_workaround_is_kept_for_onert():
    """TICO writes mm(W, x) for onert as FULLY_CONNECTED(W, xᵀ) (convert_lhs_const_mm_to_fc): as a
    BATCH_MATMUL its left operand would be the constant W, which onert refuses (the runtime table:
    ('BATCH_MATMUL', 'constant input 0') runs in LiteRT, not in onert). -O1 for onert keeps it."""
    result = api.optimize(CONST_LHS, O1=True, target="onert")
    assert result.report["operators"]["after"] == {"FULLY_CONNECTED": 1, "TRANSPOSE": 1}
    (refused,) = result.report["target"]["refused"]
    assert refused["pass"] == "replace_non_const_fc_with_batch_matmul"
    assert refused["reason"] == "onert does not run BATCH_MATMUL with a constant input 0"


@pytest.mark.skipif(onert.missing() is not None, reason=str(onert.missing()))
def test_tico_onert_workaround_runs_in_onert_after_o1(tmp_path):
    out = tmp_path / "o.circle"
    assert cli.run(["optimize", "-O1", str(CONST_LHS), str(out), "-q"]) == 0
    (x,) = np.load(REPROS / "onert-const_lhs_matmul.inputs.npz").values()
    (want,) = onert.Session(read_model(str(CONST_LHS)))([x])
    (have,) = onert.Session(read_model(str(out)))([x])
    np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)
