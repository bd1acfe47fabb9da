"""Robustness: malformed and hostile files are refused in one line, outputs are atomic, and
quantized or float16-weight models pass through every pass untouched."""

from __future__ import annotations

import errno
import os
import struct
import sys

import numpy as np
import pytest

from bnfold import cli
from bnfold.errors import ModelError
from bnfold.io import validate, writer
from bnfold.io.reader import read_model
from bnfold.passes import registry
from bnfold.passes.leftovers import explain
from bnfold.passes.report import Report

from conftest import DATA, ROOT, build_recipe, object_tree, run_litert, tree_diff

FIXTURE = DATA / "conv_relu_bn.tflite"
# integer-quantized models stay untouched (float16 ones fold: recipes/Quant_Fp16_Conv_BN_000.toml)
QUANT_RECIPES = ["Quant_Conv_BN_Relu_000"]


def _run(capsys, *argv):
    code = cli.run([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines()


def _entries(directory):
    return sorted(p.name for p in directory.iterdir())


# ---- one line naming the file and the problem ------------------------------------------------

def _bad_inputs(tmp_path):
    data = FIXTURE.read_bytes()
    cases = {
        "empty": b"",
        "seven_bytes": data[:7],
        "wrong_identifier": data[:4] + b"XYZ9" + data[8:],
        "truncated": data[: len(data) // 3],
        "root_outside": struct.pack("<I", 0xFFFFFF00) + data[4:],
    }
    # corrupt offsets: the subgraphs vector's uoffset aimed past the end of the file
    model = read_model(str(FIXTURE))
    del model
    corrupt = bytearray(data)
    (root,) = struct.unpack_from("<I", corrupt, 0)
    (soff,) = struct.unpack_from("<i", corrupt, root)
    vt = root - soff
    (field,) = struct.unpack_from("<H", corrupt, vt + 4 + 2 * 2)  # Model slot 2: subgraphs
    struct.pack_into("<I", corrupt, root + field, len(data) * 4)
    cases["corrupt_offsets"] = bytes(corrupt)
    paths = {}
    for name, content in cases.items():
        p = tmp_path / f"{name}.tflite"
        p.write_bytes(content)
        paths[name] = p
    paths["directory"] = tmp_path / "a_directory.tflite"
    paths["directory"].mkdir()
    paths["missing"] = tmp_path / "missing.tflite"
    return paths


EXPECTED_PROBLEM = {
    "empty": "too short", "seven_bytes": "too short", "wrong_identifier": "not a TFLite or Circle model",
    "truncated": "malformed tflite flatbuffer", "root_outside": "root table offset",
    "corrupt_offsets": "points outside the file", "directory": "is a directory", "missing": "no such file",
}


@pytest.mark.parametrize("command", ["optimize", "inspect", "convert"])
def test_bad_inputs_fail_in_one_line_naming_file_and_problem(command, tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name, path in _bad_inputs(tmp_path).items():
        argv = [command, path] + ([] if command == "inspect" else [out_dir / "out.tflite"])
        code, lines = _run(capsys, *argv)
        assert code == 1, (name, lines)
        assert len(lines) == 1, (name, lines)
        assert str(path) in lines[0] and EXPECTED_PROBLEM[name] in lines[0], (name, lines[0])
        assert lines[0].startswith("bnfold: error: ")
        assert _entries(out_dir) == []


def test_usage_errors_exit_2_in_one_line(tmp_path, capsys):
    code, lines = _run(capsys, "optimize", FIXTURE, tmp_path / "out.onnx")
    assert code == 2 and len(lines) == 1 and "out.onnx" in lines[0] and ".tflite or .circle" in lines[0]
    code, lines = _run(capsys, "optimize", FIXTURE)
    assert code == 2 and len(lines) == 1


def test_semantic_errors_name_the_problem(tmp_path, capsys):
    """A sound flatbuffer whose constant does not fit its shape: caught after lifting."""
    model = read_model(str(FIXTURE))
    record = model.record
    tensor = next(t for t in record.subgraphs[0].tensors if record.buffers[t.buffer].data is not None
                  and len(record.buffers[t.buffer].data) > 4)
    tensor.shape = np.array([int(d) * 2 for d in tensor.shape], dtype=np.int32)
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    builder.Finish(record.Pack(builder), file_identifier=b"TFL3")
    bad = tmp_path / "bad_shape.tflite"
    bad.write_bytes(bytes(builder.Output()))
    code, lines = _run(capsys, "inspect", bad)
    assert code == 1 and len(lines) == 1
    assert str(bad) in lines[0] and "its buffer holds" in lines[0] and "needs" in lines[0]


def test_absurd_structure_is_refused_before_allocating(tmp_path):
    """A subgraphs vector whose entries all point at one tiny table: a file describing far more
    tables than it could hold (the shape of a decompression bomb)."""
    data = bytearray(FIXTURE.read_bytes())
    (root,) = struct.unpack_from("<I", data, 0)
    vt = root - struct.unpack_from("<i", data, root)[0]
    (field,) = struct.unpack_from("<H", data, vt + 4 + 2 * 2)  # Model slot 2: subgraphs
    n = len(data)
    vec = len(data)
    table_vt = vec + 4 + 4 * n
    table = table_vt + 4
    data += struct.pack("<I", n) + b"".join(struct.pack("<I", table - (vec + 4 + 4 * i)) for i in range(n))
    data += struct.pack("<HHi", 4, 4, table - table_vt)  # an empty table and its vtable
    struct.pack_into("<I", data, root + field, vec - (root + field))
    bad = tmp_path / "shared.tflite"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="absurd structure") as info:
        read_model(str(bad))
    assert str(bad) in str(info.value)


# ---- output safety ---------------------------------------------------------------------------

def test_input_is_never_overwritten_without_in_place(tmp_path, capsys):
    src = tmp_path / "a.tflite"
    src.write_bytes(FIXTURE.read_bytes())
    before = src.read_bytes()
    code, lines = _run(capsys, "optimize", src, src)
    assert code == 2 and len(lines) == 1 and "--in-place" in lines[0] and str(src) in lines[0]
    assert src.read_bytes() == before
    assert _entries(tmp_path) == ["a.tflite"]


def test_in_place_rewrites_the_input(tmp_path, capsys):
    folds = DATA / "bn_conv_valid.tflite"
    src = tmp_path / "a.tflite"
    src.write_bytes(folds.read_bytes())
    code, lines = _run(capsys, "optimize", src, "--in-place", "--quiet")
    assert code == 0 and lines == []
    assert _entries(tmp_path) == ["a.tflite"]
    assert sum(read_model(str(src)).op_counts().values()) == 1
    assert sum(read_model(str(folds)).op_counts().values()) == 3


def test_refused_conversion_leaves_no_file(tmp_path, capsys):
    circle_only = build_recipe("Foundation_InstanceNorm_000", tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, lines = _run(capsys, "convert", circle_only, out_dir / "x.tflite")
    assert code == 1 and len(lines) == 1 and "INSTANCE_NORM" in lines[0]
    assert _entries(out_dir) == []


def test_failure_after_writing_started_leaves_no_file(tmp_path, capsys, monkeypatch):
    """A model error raised mid-write (after the temp file exists) removes the temp file."""
    def fail(self, buffer):
        raise ModelError("simulated failure while streaming weights")

    monkeypatch.setattr(writer._Sink, "write_buffer", fail)
    code, lines = _run(capsys, "optimize", FIXTURE, tmp_path / "o.tflite")
    assert code == 1 and len(lines) == 1 and "simulated failure" in lines[0] and "o.tflite" in lines[0]
    assert _entries(tmp_path) == []


def test_interrupt_while_writing_exits_130_and_cleans_up(tmp_path, capsys, monkeypatch):
    def interrupt(self, buffer):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer._Sink, "write_buffer", interrupt)
    code, lines = _run(capsys, "optimize", FIXTURE, tmp_path / "o.tflite", "--quiet")
    assert code == 130 and lines == ["bnfold: error: interrupted"]
    assert _entries(tmp_path) == []


class _FullDisk:
    """An output file whose writes fail the way a full disk makes them fail."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def test_full_disk_is_one_line_and_cleans_up(tmp_path, capsys, monkeypatch):
    """ENOSPC from the file write (simulated): one line naming the output, no temp file left."""
    real_fdopen = os.fdopen
    monkeypatch.setattr(writer.os, "fdopen", lambda fd, mode="r", *a, **k: _FullDisk(real_fdopen(fd, mode, *a, **k)))
    out = tmp_path / "o.tflite"
    code, lines = _run(capsys, "optimize", FIXTURE, out, "--quiet")
    assert code == 1 and len(lines) == 1, lines
    assert str(out) in lines[0] and "No space left on device" in lines[0]
    assert _entries(tmp_path) == []


# ---- quantized and float16-weight models -----------------------------------------------------

@pytest.mark.parametrize("recipe", QUANT_RECIPES)
def test_quantized_model_is_unchanged_and_runs_identically(recipe, tmp_path, capsys):
    src = build_recipe(recipe, tmp_path)
    out = tmp_path / "out.tflite"
    code, lines = _run(capsys, "optimize", src, out, "--quiet")
    assert code == 0 and lines == []
    assert tree_diff(object_tree(src), object_tree(out)) == []
    model = read_model(str(src))
    spec = model.graphs[0].inputs[0]
    rng = np.random.default_rng(3)
    if spec.dtype == "INT8":
        x = rng.integers(-128, 128, size=spec.shape, dtype=np.int8)
    else:
        x = rng.normal(size=spec.shape).astype(np.float32)
    before, after = run_litert(src, [x]), run_litert(out, [x])
    assert len(before) == len(after) == 1
    assert before[0].dtype == after[0].dtype and np.array_equal(before[0], after[0])
    assert np.any(before[0] != before[0].flat[0])  # the model computes something non-trivial


def test_quantized_recipe_carries_per_channel_parameters(tmp_path):
    model = read_model(str(build_recipe("Quant_Conv_BN_Relu_000", tmp_path)))
    conv = next(op for op in model.graphs[0].ops if op.kind == "CONV_2D")
    q = conv.inputs[1].quantization
    assert conv.inputs[1].dtype == "INT8" and list(np.round(q.scale, 6)) == [0.01, 0.02, 0.015, 0.005]
    assert q.quantizedDimension == 0 and list(q.zeroPoint) == [0, 0, 0, 0]


@pytest.mark.parametrize("spec", registry.PASSES, ids=lambda s: s.name)
@pytest.mark.parametrize("recipe", QUANT_RECIPES)
def test_every_pass_skips_quantized_models_with_a_reason(spec, recipe, tmp_path):
    """Each registered pass, alone: no exception, no change, and every skip has a reason. Passes
    whose pattern (BN after a conv, a standalone RELU) occurs in the model must say why they skip."""
    src = build_recipe(recipe, tmp_path)
    model = read_model(str(src))
    report = Report([spec.name])
    changed = False
    for i, g in enumerate(model.graphs):
        result = spec.run(g)
        report.add(spec.name, i, result)
        changed |= result.changed
    assert not changed and report.folds == []
    assert all(isinstance(s.record["reason"], str) and s.record["reason"] for s in report.said)
    expected_skips = {"fuse_batchnorm_with_conv", "fuse_activation_function"} if "Relu" in recipe else {"fuse_batchnorm_with_conv"}
    if spec.name in expected_skips:
        assert report.said, f"{spec.name} saw its pattern in {recipe} but recorded no skip"
    # the report: the MUL and the ADD left, each with a reason (the pass's own when it spoke about them)
    skips = explain(model, report.said, report.passes)
    assert [s["at"]["kind"] for s in skips] == ["MUL", "ADD"] and all(s["reason"] for s in skips)
    about_chain = any(s.record["at"]["kind"] in ("MUL", "ADD") for s in report.said)
    assert all(s["pass"] == (spec.name if about_chain else None) for s in skips)
