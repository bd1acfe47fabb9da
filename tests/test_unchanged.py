"""A model no pass changes is kept as the input's bytes: copied to OUT, or left alone in place."""

from __future__ import annotations

import shutil

import pytest

from bnfold.cli import run
from bnfold.io.atomic import save_model
from bnfold.io.formats import TFLITE
from bnfold.io.reader import read_model
from conftest import DATA, has_offset_buffers

UNCHANGED = DATA / "conv_relu_bn.tflite"  # RELU between conv and BN: nothing folds
FOLDED = DATA / "bn_conv_valid.tflite"
OFFSETS = DATA / "conv_buffer_offset.tflite"  # weights after the flatbuffer


def _optimize(capsys, *argv) -> str:
    assert run(["optimize", *map(str, argv)]) == 0
    return capsys.readouterr().out


def test_unchanged_model_is_copied_byte_for_byte(tmp_path, capsys):
    out = tmp_path / "o.tflite"
    text = _optimize(capsys, UNCHANGED, out)
    assert out.read_bytes() == UNCHANGED.read_bytes()
    why = "the layer has a fused RELU, which sits between it and the chain"  # the report's reason for what is left
    assert text.splitlines()[-1] == f"unchanged ({why}): wrote {out} (a copy of {UNCHANGED})"


@pytest.mark.parametrize("name", ["resnet_v2_mini.tflite", "torch_resblock_nchw.circle"])
def test_no_passes_is_a_copy(name, tmp_path, capsys):
    src = DATA / name
    out = tmp_path / name
    assert "unchanged" in _optimize(capsys, src, out, "--passes", "")
    assert out.read_bytes() == src.read_bytes()


def test_changed_model_is_rewritten(tmp_path, capsys):
    out = tmp_path / "o.tflite"
    text = _optimize(capsys, FOLDED, out)
    assert "unchanged" not in text and text.splitlines()[-1] == f"wrote {out}"
    assert len(read_model(str(out)).graphs[0].ops) < len(read_model(str(FOLDED)).graphs[0].ops)


def test_in_place_unchanged_writes_nothing(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    shutil.copyfile(UNCHANGED, model)
    before = model.stat()
    text = _optimize(capsys, model, "--in-place")
    after = model.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    assert (
        text.splitlines()[-1]
        == f"unchanged (the layer has a fused RELU, which sits between it and the chain): {model} left as it is"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]  # no temporary file either


def test_in_place_changed_is_rewritten(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    shutil.copyfile(FOLDED, model)
    assert _optimize(capsys, model, "--in-place").splitlines()[-1] == f"wrote {model}"
    assert model.read_bytes() != FOLDED.read_bytes()


def test_another_format_is_not_a_copy(tmp_path, capsys):
    out = tmp_path / "o.circle"
    assert "unchanged" not in _optimize(capsys, UNCHANGED, out, "--passes", "")
    assert out.read_bytes()[4:8] == b"CIR0"


def test_another_layout_is_not_a_copy(tmp_path, capsys):
    """The layout asked for wins: --external-buffers on a standard file, or none on an offset file."""
    out = tmp_path / "o.tflite"
    assert "unchanged" not in _optimize(capsys, UNCHANGED, out, "--passes", "", "--external-buffers")
    assert has_offset_buffers(out)
    assert "unchanged" not in _optimize(capsys, OFFSETS, out, "--passes", "")
    assert not has_offset_buffers(out)
    assert "unchanged" in _optimize(capsys, OFFSETS, out, "--passes", "", "--external-buffers")
    assert out.read_bytes() == OFFSETS.read_bytes()


def test_convert_to_the_same_format_is_a_copy(tmp_path, capsys):
    out = tmp_path / "o.tflite"
    assert run(["convert", str(UNCHANGED), str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"unchanged: wrote {out}")
    assert out.read_bytes() == UNCHANGED.read_bytes()


def test_library_save_rewrites_unless_asked_to_keep(tmp_path):
    """save_model serializes by default: a caller that edits a model by hand without the pass
    manager (which sets Model.changed) must never get the old bytes back."""
    model = read_model(str(UNCHANGED))
    graph = model.graphs[0]
    graph.outputs = [graph.ops[0].outputs[0]]  # a hand edit, not through a pass
    out = tmp_path / "o.tflite"
    info = save_model(model, str(out), TFLITE)
    assert not info.unchanged
    assert read_model(str(out)).graphs[0].outputs[0].name == graph.ops[0].outputs[0].name
