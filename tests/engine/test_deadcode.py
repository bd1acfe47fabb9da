"""Dead code (engine/deadcode.py): after any run of passes, an op whose output nothing reads, a
constant no op reads and a buffer no tensor holds are gone from the written model, and the summary
says so, even when no pass folded anything; with no pass run the model is copied as it was."""

from __future__ import annotations

import numpy as np

from bn_models import Net
from bnfold.cli import run
from bnfold.io.atomic import save_model
from bnfold.io.reader import read_model
from bnfold.ir.const import Buffer


def dead_model(path) -> None:
    """x -> TANH -> y, beside an EXP of x nothing reads, a constant no op reads, an orphan buffer."""
    n = Net()
    n.input("x", [3, 5])
    n.op("EXP", ["x"], "unread", [3, 5])
    n.const("unused", [4, 2])
    n.outputs = [n.op("TANH", ["x"], "y", [3, 5])]
    model = n.model()
    model.buffers.append(Buffer.from_array(np.arange(6, dtype=np.float32)))
    save_model(model, str(path), model.format)


def test_dead_code_goes_after_any_pass(tmp_path, capsys):
    src, out = tmp_path / "dead.tflite", tmp_path / "out.tflite"
    dead_model(src)
    before = read_model(str(src))
    assert run(["optimize", str(src), str(out), "-O1"]) == 0
    assert "dead code removed: 1 operators, 2 tensors, 2 buffers" in capsys.readouterr().out
    after = read_model(str(out))
    graph = after.graphs[0]
    assert [op.kind for op in graph.ops] == ["TANH"] and {t.name for t in graph.tensors} == {"x", "y"}
    assert len(after.buffers) < len(before.buffers) - 1 and out.stat().st_size < src.stat().st_size


def test_no_pass_run_keeps_the_model_as_it_was(tmp_path):
    src, out = tmp_path / "dead.tflite", tmp_path / "out.tflite"
    dead_model(src)
    assert run(["optimize", str(src), str(out), "--passes", "", "-q"]) == 0
    assert out.read_bytes() == src.read_bytes()
