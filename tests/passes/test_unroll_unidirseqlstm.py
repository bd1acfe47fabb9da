"""unroll_unidirseqlstm on the TFLite converter's own LSTMs (tests/data/zoo/tfkeras_lstm_*: one
sequence, the last step only, two stacked layers of batch 2; cell_clip 10): every
UNIDIRECTIONAL_SEQUENCE_LSTM becomes per-step ops computing the reference within float rounding in
LiteRT, and onert runs the result (it crashes on the original); forms ONE does not unroll stay,
with the reason."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bn_models import build_copy
from bnfold import api
from bnfold.io.atomic import save_model
from bnfold.io.reader import read_model
from bnfold.values import litert
from conftest import DATA

PASS = "unroll_unidirseqlstm"
ZOO = DATA / "zoo"
LSTMS = ["tfkeras_lstm_seq", "tfkeras_lstm_last", "tfkeras_lstm_stacked"]


def _unrolled(name: str):
    model = read_model(str(ZOO / f"{name}.tflite"))
    report = api.apply_passes(model, [PASS])
    return model, report


@pytest.mark.parametrize("name", LSTMS)
def test_lstm_is_unrolled_and_computes_the_reference(name):
    model, report = _unrolled(name)
    counts = model.op_counts()
    assert counts.get("UNIDIRECTIONAL_SEQUENCE_LSTM", 0) == 0 and counts["PACK"] == len(report.folds) >= 1
    assert counts["MAXIMUM"] == counts["MINIMUM"] == sum(f["steps"] for f in report.folds)  # the cell clip
    x, ref = np.load(ZOO / f"{name}.input.npy"), np.load(ZOO / f"{name}.ref.npy")
    (got,) = litert.run(build_copy(model), [x])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


def test_the_value_check_compares_first_invocations():
    """LiteRT carries an LSTM's state over invocations; the check resets it before every sample,
    so several samples of the original and the unrolled model agree."""
    original = read_model(str(ZOO / "tfkeras_lstm_seq.tflite"))
    x = np.load(ZOO / "tfkeras_lstm_seq.input.npy")
    runner = litert.model_interpreter(original)
    first, second = litert.invoke(runner, [x]), litert.invoke(runner, [x])
    np.testing.assert_array_equal(first[0], second[0])


def test_onert_runs_the_unrolled_model(tmp_path):
    pytest.importorskip("onert")
    model, _ = _unrolled("tfkeras_lstm_stacked")
    path = tmp_path / "unrolled.tflite"
    save_model(model, str(path), model.format)
    x = ZOO / "tfkeras_lstm_stacked.input.npy"
    y = tmp_path / "y.npy"
    script = (
        "import numpy as np; from onert import infer; "
        f"np.save({str(y)!r}, infer.session({str(path)!r}, 'cpu').infer([np.load({str(x)!r})])[0])"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=120)
    ref = np.load(ZOO / "tfkeras_lstm_stacked.ref.npy")
    np.testing.assert_allclose(np.load(tmp_path / "y.npy").reshape(ref.shape), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda op, g: setattr(op.options, "fusedActivationFunction", 1), "activation is not TANH"),
        (lambda op, g: g.outputs.append(op.inputs[19]), "not variables starting at zero"),
        (lambda op, g: g.set_input(op, 9, op.inputs[12]), "peephole, projection or layer-norm"),
    ],
)
def test_forms_one_does_not_unroll_stay(change, why):
    model = read_model(str(ZOO / "tfkeras_lstm_seq.tflite"))
    graph = model.graphs[0]
    change(graph.ops[0], graph)
    report = api.apply_passes(model, [PASS])
    assert report.folds == [] and why in report.not_folded[0]["reason"]
    assert model.op_counts()["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 1
