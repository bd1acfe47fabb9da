"""Robustness: malformed and hostile files are refused in one line, outputs are atomic, and
quantized or float16-weight models pass through every pass untouched."""

from __future__ import annotations

import gc
import os
import signal
import struct
import sys

import numpy as np
import pytest

from bnfold import cli
from bnfold.engine import registry
from bnfold.engine.leftovers import explain
from bnfold.engine.report import Report
from bnfold.errors import ModelError
from bnfold.io import atomic, writer
from bnfold.io.reader import read_model
from conftest import DATA, ROOT, build_recipe, object_tree, run_litert, tree_diff, unpacked

FIXTURE = DATA / "conv_relu_bn.tflite"
FOLDED = DATA / "bn_conv_valid.tflite"  # a model the default passes change, so it is serialized, not copied
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
    "empty": "too short",
    "seven_bytes": "too short",
    "wrong_identifier": "not a TFLite or Circle model",
    "truncated": "malformed tflite flatbuffer",
    "root_outside": "root table offset",
    "corrupt_offsets": "points outside the file",
    "directory": "is a directory",
    "missing": "no such file",
}


INPUT_USAGE_ERRORS = ("directory", "missing")  # io/paths.open_input: exit 2 like any input; a bad model is 1


@pytest.mark.parametrize("command", ["optimize", "inspect", "convert"])
def test_bad_inputs_fail_in_one_line_naming_file_and_problem(command, tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name, path in _bad_inputs(tmp_path).items():
        argv = [command, path] + ([] if command == "inspect" else [out_dir / "out.tflite"])
        code, lines = _run(capsys, *argv)
        assert code == (2 if name in INPUT_USAGE_ERRORS else 1), (name, lines)
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
    record = unpacked(FIXTURE)
    tensor = next(
        t
        for t in record.subgraphs[0].tensors
        if record.buffers[t.buffer].data is not None and len(record.buffers[t.buffer].data) > 4
    )
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

    def fail(*_):
        raise ModelError("simulated failure while streaming weights")

    monkeypatch.setattr(writer._Sink, "write_buffer", fail)
    monkeypatch.setattr(atomic, "copy_file", fail)  # the fixture is unchanged by the passes: copied
    code, lines = _run(capsys, "optimize", FIXTURE, tmp_path / "o.tflite")
    assert code == 1 and len(lines) == 1 and "simulated failure" in lines[0] and "o.tflite" in lines[0]
    assert _entries(tmp_path) == []


def test_interrupt_while_writing_exits_130_and_cleans_up(tmp_path, capsys, monkeypatch):
    def interrupt(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer._Sink, "write_buffer", interrupt)
    monkeypatch.setattr(atomic, "copy_file", interrupt)
    code, lines = _run(capsys, "optimize", FIXTURE, tmp_path / "o.tflite", "--quiet")
    assert code == 130 and lines == ["bnfold: error: interrupted"]
    assert _entries(tmp_path) == []


# full disk, file-size limit, read-only targets and concurrent runs: tests/test_faults.py


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


INT8_BATCH_NORM = "replace_quantized_mul_add_with_depthwise_conv"  # the opt-in lossy fold of an int8 batch norm


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
    if spec.name == INT8_BATCH_NORM:  # made for this: the int8 MUL -> ADD goes, lossily, and says so
        assert changed and report.folds and all(f["lossy"] for f in report.folds)
        return
    assert not changed and report.folds == []
    assert all(isinstance(s.record["reason"], str) and s.record["reason"] for s in report.said)
    assert all(isinstance(n["reason"], str) and n["reason"] for n in report.not_folded)
    expected_skips = (
        {"fuse_batchnorm_with_conv", "fuse_activation_function"} if "Relu" in recipe else {"fuse_batchnorm_with_conv"}
    )
    if spec.name in expected_skips:
        # (a standalone RELU is no batch-norm candidate: its reason is in not_folded)
        assert report.said or report.not_folded, f"{spec.name} saw its pattern in {recipe} but recorded no reason"
    # the report: the MUL and the ADD left, each with a reason (the pass's own when it spoke about them)
    skips = explain(model, report.said, report.passes)
    assert [s["at"]["kind"] for s in skips] == ["MUL", "ADD"] and all(s["reason"] for s in skips)
    about_chain = any(s.record["at"]["kind"] in ("MUL", "ADD") for s in report.said)
    assert all(s["pass"] == (spec.name if about_chain else None) for s in skips)


# ---- issue 16: side files never clobber models -----------------------------------------------


def _model_copy(tmp_path, name="a.tflite", source=DATA / "bn_conv_valid.tflite"):
    path = tmp_path / name
    path.write_bytes(source.read_bytes())
    return path


@pytest.mark.parametrize("which", ["input", "output"])
def test_report_never_replaces_this_runs_model(which, tmp_path, capsys):
    src, out = _model_copy(tmp_path, "in.tflite"), _model_copy(tmp_path, "out.tflite")
    before = {p.name: p.read_bytes() for p in (src, out)}
    target = src if which == "input" else out
    for extra in ([], ["--force"]):  # --force is for other models, never this run's own
        code, lines = _run(capsys, "optimize", src, out, "--report", target, "-q", *extra)
        assert code == 2 and len(lines) == 1 and str(target) in lines[0] and "--report" in lines[0], lines
        assert {p.name: p.read_bytes() for p in (src, out)} == before
    assert _entries(tmp_path) == ["in.tflite", "out.tflite"]


def test_report_replaces_another_model_only_with_force(tmp_path, capsys):
    src, other = _model_copy(tmp_path, "in.tflite"), _model_copy(tmp_path, "other.tflite")
    code, lines = _run(capsys, "optimize", src, tmp_path / "o.tflite", "--report", other, "-q")
    assert code == 2 and len(lines) == 1 and "--force" in lines[0] and str(other) in lines[0]
    assert other.read_bytes() == src.read_bytes() and not (tmp_path / "o.tflite").exists()
    code, lines = _run(capsys, "optimize", src, tmp_path / "o.tflite", "--report", other, "-q", "--force")
    assert code == 0 and lines == []
    assert other.read_text().lstrip().startswith("{")
    # an existing report (not a model) is replaced without asking, as before
    code, _ = _run(capsys, "optimize", src, tmp_path / "o.tflite", "--report", other, "-q")
    assert code == 0


def test_report_through_a_circle_model_is_refused_too(tmp_path, capsys):
    src = _model_copy(tmp_path, "in.tflite")
    circle = tmp_path / "m.circle"
    assert cli.run(["convert", str(src), str(circle)]) == 0
    capsys.readouterr()
    code, lines = _run(capsys, "optimize", src, tmp_path / "o.tflite", "--report", circle)
    assert code == 2 and "would overwrite a model file" in lines[0]


@pytest.mark.parametrize("option", ["--write-input", "--write-expected"])
def test_check_side_files_never_replace_models(option, tmp_path, capsys):
    a, b = _model_copy(tmp_path, "a.tflite"), _model_copy(tmp_path, "b.tflite")
    other = _model_copy(tmp_path, "c.tflite")
    before = a.read_bytes()
    for target, extra in ((a, []), (b, []), (a, ["--force"]), (other, [])):
        code, lines = _run(capsys, "check", a, b, option, target, *extra)
        assert code == 2 and len(lines) == 1 and option in lines[0] and str(target) in lines[0], lines
    assert a.read_bytes() == b.read_bytes() == other.read_bytes() == before
    code, lines = _run(capsys, "check", a, b, option, other, "--force")
    assert code == 0
    assert other.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"


def test_check_side_files_refuse_each_other_and_the_inputs(tmp_path, capsys):
    a = _model_copy(tmp_path, "a.tflite")
    code, lines = _run(capsys, "check", a, a, "--write-input", tmp_path / "x.h5", "--write-expected", tmp_path / "x.h5")
    assert code == 2 and "x.h5" in lines[0]
    assert cli.run(["check", str(a), str(a), "--write-input", str(tmp_path / "in.h5")]) == 0
    capsys.readouterr()
    code, lines = _run(capsys, "check", a, a, "--input", tmp_path / "in.h5", "--write-expected", tmp_path / "in.h5")
    assert code == 2 and "in.h5" in lines[0]
    # several samples: each derived name is checked
    other = _model_copy(tmp_path, "s.1.tflite")
    code, lines = _run(capsys, "check", a, a, "--samples", "2", "--write-input", tmp_path / "s.tflite")
    assert code == 2 and str(other) in lines[0]
    assert not (tmp_path / "s.0.tflite").exists()


def test_in_place_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path, capsys):
    real = _model_copy(tmp_path, "real.tflite")
    link = tmp_path / "link.tflite"
    link.symlink_to(real.name)
    code, lines = _run(capsys, "optimize", link, "--in-place", "-q")
    assert code == 0 and lines == []
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_bytes() != (DATA / "bn_conv_valid.tflite").read_bytes()
    assert sum(read_model(str(real)).op_counts().values()) == 1
    assert _entries(tmp_path) == ["link.tflite", "real.tflite"]


def test_output_onto_a_device_or_directory_is_refused(tmp_path, capsys):
    (tmp_path / "d.tflite").mkdir()
    code, lines = _run(capsys, "optimize", FIXTURE, tmp_path / "d.tflite")
    assert code == 2 and len(lines) == 1 and "is a directory" in lines[0]
    code, lines = _run(capsys, "convert", FIXTURE, tmp_path / "d.tflite")
    assert code == 2 and len(lines) == 1 and "is a directory" in lines[0]
    code, lines = _run(capsys, "optimize", FIXTURE, tmp_path / "o.tflite", "--report", "/dev/null")
    assert code == 2 and "character device" in lines[0]
    assert _entries(tmp_path) == ["d.tflite"]


# ---- issue 16: inputs must be regular files --------------------------------------------------


def _fifo(tmp_path, name):
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_inputs_are_refused_without_opening(tmp_path, capsys):
    """Opening a FIFO for reading blocks until a writer comes: the check must come first (a
    hang here is caught by the alarm in fuzzing.run_cli)."""
    from fuzzing import run_cli

    model = _fifo(tmp_path, "pipe.tflite")
    h5 = _fifo(tmp_path, "pipe.h5")
    recipe = _fifo(tmp_path, "pipe.toml")
    cfg = _fifo(tmp_path, "pipe.cfg")
    cases = [
        (["inspect", model], 2, model),
        (["optimize", model, tmp_path / "o.tflite"], 2, model),
        (["convert", model, tmp_path / "o.circle"], 2, model),
        (["check", FIXTURE, FIXTURE, "--input", h5], 2, h5),
        (["h5diff", h5, h5], 2, h5),
        (["recipe", "build", recipe, tmp_path / "o.tflite"], 2, recipe),
        (["optimize", "--config", cfg], 2, cfg),
    ]
    for argv, want, named in cases:
        code, _, err = run_cli([str(a) for a in argv], limit=5.0)
        assert code == want, (argv, code, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(named) in lines[0] and "FIFO" in lines[0], (argv, lines)
    assert not (tmp_path / "o.tflite").exists()


def test_device_input_is_refused(capsys):
    code, lines = _run(capsys, "inspect", "/dev/zero")
    assert code == 2 and lines == ["bnfold: error: /dev/zero: is a character device, not a model file"]


# ---- issue 16: signals during a write, stale temporary files ---------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_while_writing_removes_the_temporary_file(signum, tmp_path, capsys, monkeypatch):
    real = writer._Sink.write_buffer

    def signalled(self, buffer):
        os.kill(os.getpid(), signum)
        real(self, buffer)

    monkeypatch.setattr(writer._Sink, "write_buffer", signalled)
    handler = signal.getsignal(signal.SIGTERM)
    code, lines = _run(capsys, "optimize", FOLDED, tmp_path / "o.tflite", "--quiet")
    assert code == 128 + signum and len(lines) == 1 and "interrupted" in lines[0]
    assert _entries(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is handler  # restored after the write


def test_sigterm_kills_a_real_process_cleanly(tmp_path):
    """The whole process: SIGTERM mid-write (held there by a slow write) exits 143 and leaves nothing."""
    import subprocess
    import textwrap
    import time

    script = textwrap.dedent(f"""
        import sys, time
        from bnfold import cli
        from bnfold.io import writer
        real = writer._Sink.write_buffer
        def slow(self, buffer):
            print("writing", flush=True)
            time.sleep(30)
            real(self, buffer)
        writer._Sink.write_buffer = slow
        sys.exit(cli.run(["optimize", {str(FOLDED)!r}, {str(tmp_path / "o.tflite")!r}, "-q"]))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    assert any(n.startswith(".bnfold-") for n in os.listdir(tmp_path))
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143 and time.monotonic() - started < 20
    assert err.strip().splitlines() == ["bnfold: error: interrupted by signal 15"]
    assert _entries(tmp_path) == []


# stale and live temporary files: tests/test_faults.py


# ---- issue 16: conversion writes the schema version each runtime expects ----------------------


@pytest.mark.parametrize("name", ["torch_conv_bn_nchw.circle", "torch_resblock_nchw.circle"])
def test_circle_converted_to_tflite_loads_in_litert(name, tmp_path, capsys):
    """ONE writes Model.version 0; LiteRT refuses any version but 3. The file itself is loaded
    (not re-serialized), and computes what the fixture's reference output says."""
    from bnfold.values import litert

    out = tmp_path / "m.tflite"
    code, _ = _run(capsys, "convert", DATA / name, out)
    assert code == 0 and read_model(str(out)).version == 3
    x = np.load(DATA / name.replace(".circle", ".input.npy"))
    (y,) = litert.invoke(litert.interpreter(out.read_bytes()), [x])
    np.testing.assert_allclose(y, np.load(DATA / name.replace(".circle", ".ref.npy")), rtol=1e-4, atol=1e-4)
    back = tmp_path / "back.circle"
    code, _ = _run(capsys, "convert", out, back)
    assert code == 0 and read_model(str(back)).version == 0  # what ONE's tools write


# ---- issue 16: every bad recipe, config and h5 file is a one-line error, never exit 3 ----------

WHILE_RECIPE = ROOT / "recipes" / "Foundation_While_000.toml"
CONV_RECIPE = ROOT / "recipes" / "Net_Conv_Add_Mul_000.toml"


def _recipe_case(tmp_path, name, text):
    path = tmp_path / f"{name}.toml"
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def _conv_recipe(old=None, new=None, before="", after=""):
    text = CONV_RECIPE.read_text()
    if old is not None:
        assert old in text
        text = text.replace(old, new, 1)
    return before + text + after


BAD_RECIPES = {  # name -> (recipe text, exit code, words the one line must contain)
    "binary": (FIXTURE.read_bytes(), 2, "not UTF-8"),
    "deep_arrays": ("a = " + "[" * 5000 + "]" * 5000 + "\n", 2, "nested too deeply"),
    "deep_tables": ("a = " + "{x=" * 3000 + "1" + "}" * 3000 + "\n", 2, "nested too deeply"),
    "shape_word": (_conv_recipe("shape = [1, 9, 11, 3]", 'shape = [1, "a", 11, 3]'), 2, "must be an integer"),
    "shape_float": (_conv_recipe("shape = [1, 9, 11, 3]", "shape = [1, 9.5, 11, 3]"), 2, "must be an integer"),
    "shape_huge_const": (_conv_recipe("shape = [5]", "shape = [100000, 100000, 100000]"), 2, "absurdly large"),
    "shape_huge_tensor": (
        _conv_recipe("shape = [1, 4, 5, 5]", "shape = [100000, 100000, 100000, 1000]"),
        2,
        "absurdly large",
    ),
    "shape_negative": (_conv_recipe("shape = [1, 4, 5, 5]", "shape = [1, -4, 5, 5]"), 2, "negative dimension"),
    "seed_word": (_conv_recipe(before='seed = "abc"\n'), 2, "seed must be an integer"),
    "seed_negative": (_conv_recipe(before="seed = -1\n"), 2, "seed must not be negative"),
    "signature_unknown_tensor": (
        _conv_recipe(after='\n[[signature]]\nkey = "s"\ninputs = { x = "nope" }\n'),
        2,
        "unknown operand 'nope'",
    ),
    "signature_subgraph_7": (_conv_recipe(after='\n[[signature]]\nkey = "s"\nsubgraph = 7\n'), 2, "subgraph 7"),
    "operand_not_a_table": ("operand = 5\n", 2, "[[operand]] must be a list"),
    "operation_inputs_not_a_list": (
        _conv_recipe('inputs = ["conv", "scale"]', 'inputs = "conv"'),
        2,
        "MUL inputs must be a list",
    ),
    "filler_word": (
        _conv_recipe('{ kind = "gaussian", stddev = 1.0 }', '{ kind = "gaussian", stddev = "x" }'),
        2,
        "filler stddev",
    ),
    "option_word": (_conv_recipe("stride_w = 2", 'stride_w = "two"'), 2, "stride_w"),
    # found by the command-line fuzzer: the writer failed on these (exit 3)
    "option_list": (_conv_recipe("stride_w = 2", "stride_w = [1]"), 2, "field stride_w must be an integer, not [1]"),
    "option_float": (_conv_recipe("stride_w = 2", "stride_w = 1.5"), 2, "field stride_w must be an integer, not 1.5"),
    "option_unknown": (
        _conv_recipe("stride_w = 2", "strid_w = 2"),
        2,
        "Conv2DOptions: unknown key 'strid_w' (did you mean 'stride_w'?)",
    ),
    # found by the recipe fuzzer (tests/fuzzing.py: fuzz_recipes)
    "option_beyond_int32": (
        _conv_recipe("stride_w = 2", "stride_w = 1000000000000"),
        2,
        "Conv2DOptions does not fit its schema",
    ),
    "stddev_negative": (
        _conv_recipe('filler = { kind = "gaussian", stddev = 0.5 }', 'filler = { kind = "gaussian", stddev = -7.5 }'),
        2,
        "stddev must not be negative",
    ),
    "uniform_reversed": (_conv_recipe("low = -2.0, high = 2.0", "low = 2.0, high = -2.0"), 2, "needs low <= high"),
    "version_huge": (
        _conv_recipe('type = "MUL"', 'type = "MUL"\nversion = 1000000000000'),
        2,
        "MUL version must be 1 .. 2^31-1",
    ),
    "signature_table_for_name": (
        _conv_recipe(after='\n[[signature]]\nkey = "s"\noutputs = { y = {} }\n'),
        2,
        "names unknown operand {}",
    ),
    "dimension_beyond_int32": (
        _conv_recipe("shape = [1, 9, 11, 3]", "shape = [2147483648, 0, 11, 3]"),
        2,
        "dimension beyond int32",
    ),
    "output_dash": (_conv_recipe('output = ["ofm"]', 'output = ["-"]'), 2, "unknown operand '-'"),
    # builds, but the reader's semantic check would refuse the model: refused at build time
    "reads_unproduced": (
        _conv_recipe(
            'inputs = ["conv", "scale"]',
            'inputs = ["ghost", "scale"]',
            after='\n[[operand]]\nname = "ghost"\nshape = [1, 4, 5, 5]\n',
        ),
        1,
        "which no operator produces",
    ),
    "cycle": (_conv_recipe('inputs = ["conv", "scale"]', 'inputs = ["ofm", "scale"]'), 1, "has a cycle"),
    "mul_int32_constant": (
        _conv_recipe('name = "scale"\nshape = [1, 1, 1, 5]', 'name = "scale"\ndtype = "INT32"\nshape = [1, 1, 1, 5]'),
        1,
        "MUL) combines FLOAT32",
    ),
    "add_float16_constant": (
        _conv_recipe('name = "shift"\nshape = [1, 1, 1, 5]', 'name = "shift"\ndtype = "FLOAT16"\nshape = [1, 1, 1, 5]'),
        1,
        "ADD) combines FLOAT32",
    ),
    "while_calls_subgraph_0": (
        WHILE_RECIPE.read_text().replace(
            "cond_subgraph_index = 1, body_subgraph_index = 2", "cond_subgraph_index = 0, body_subgraph_index = 0"
        ),
        1,
        "subgraph 0 call itself",
    ),
    "while_body_calls_itself": (
        WHILE_RECIPE.read_text().replace(
            "cond_subgraph_index = 1, body_subgraph_index = 2", "cond_subgraph_index = 1, body_subgraph_index = 1"
        ),
        0,
        "",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_RECIPES))
def test_bad_recipes_fail_in_one_line(name, tmp_path, capsys):
    text, want, words = BAD_RECIPES[name]
    path = _recipe_case(tmp_path, name, text)
    out = tmp_path / "out" / "o.tflite"
    out.parent.mkdir()
    code, lines = _run(capsys, "recipe", "build", path, out)
    if want == 0:  # a WHILE whose cond is also its body is odd but not recursive: it builds
        assert code == 0
        return
    assert code == want and len(lines) == 1, (code, lines)
    assert str(path) in lines[0] and words in lines[0], lines[0]
    assert _entries(out.parent) == []


def test_recipe_directory_is_refused(tmp_path, capsys):
    code, lines = _run(capsys, "recipe", "build", tmp_path, tmp_path / "o.tflite")
    assert code == 2 and lines == [f"bnfold: error: {tmp_path}: is a directory, not a recipe"]


def _while_model_calling(tmp_path, body):
    """Foundation_While_000 with its WHILE's body index rewritten in the object tree, so the file
    itself is what a hostile writer would produce."""
    import flatbuffers

    from bnfold.io.formats import TFLITE

    src = build_recipe("Foundation_While_000", tmp_path)
    record = TFLITE.cls("ModelT").InitFromObj(TFLITE.cls("Model").GetRootAs(src.read_bytes(), 0))
    op = next(
        o
        for o in record.subgraphs[0].operators
        if o.builtinOptions is not None and hasattr(o.builtinOptions, "bodySubgraphIndex")
    )
    op.builtinOptions.condSubgraphIndex = body
    op.builtinOptions.bodySubgraphIndex = body
    builder = flatbuffers.Builder(1024)
    builder.Finish(record.Pack(builder), file_identifier=b"TFL3")
    bad = tmp_path / f"while_{body}.tflite"
    bad.write_bytes(bytes(builder.Output()))
    return bad


def test_while_calling_its_own_subgraph_is_refused_by_the_reader(tmp_path, capsys):
    bad = _while_model_calling(tmp_path, 0)
    code, lines = _run(capsys, "inspect", bad)
    assert code == 1 and len(lines) == 1
    assert str(bad) in lines[0] and "WHILE" in lines[0] and "subgraph 0 call itself" in lines[0]


def test_subgraph_call_cycles_are_refused():
    from bnfold.ir.invariants import validate_model
    from bnfold.recipe.chef import build, load_recipe

    recipe = load_recipe(WHILE_RECIPE)
    model = build(recipe)
    assert validate_model(model, "m") is model  # 0 -> 1, 0 -> 2: no cycle
    body = model.graphs[2]
    cond = model.graphs[1]
    # the body runs a WHILE whose body is subgraph 2 again: 2 -> 2 through an op in subgraph 2
    from bnfold.ir.graph import Options

    i, x = body.inputs[0], body.inputs[1]
    o1, o2 = body.add_tensor("i2", i.dtype, i.shape), body.add_tensor("x2", x.dtype, x.shape)
    body.add_op("WHILE", [i, x], [o1, o2], Options("WhileOptions", condSubgraphIndex=1, bodySubgraphIndex=2))
    with pytest.raises(ModelError, match=r"subgraph 2 operator .*WHILE.*subgraph 2 call itself"):
        validate_model(model, "m")
    del cond


def test_config_interpolation_syntax_is_taken_literally(tmp_path, capsys):
    """`%(name)s` reached configparser's interpolation and exited 3; values are now literal (as
    the one-cmds reader takes them), so it is just a path that does not exist."""
    cfg = tmp_path / "one.cfg"
    cfg.write_text(f"[one-optimize]\ninput_path=%(foo)s\noutput_path={tmp_path / 'o.tflite'}\n")
    code, lines = _run(capsys, "optimize", "--config", cfg)
    assert code == 2 and lines == [f"bnfold: error: {cfg}:2: input_path=%(foo)s: no such file"]


def test_config_directory_is_refused(tmp_path, capsys):
    code, lines = _run(capsys, "optimize", "--config", tmp_path)
    assert code == 2 and lines == [f"bnfold: error: {tmp_path}: is a directory, not a configuration file"]
    code, lines = _run(capsys, "optimize", "--config", tmp_path / ("x" * 300 + ".cfg"))
    assert code == 2 and len(lines) == 1 and "File name too long" in lines[0]


@pytest.mark.parametrize("layout", ["group", "strings", "empty"])
def test_odd_h5_values_never_reach_an_internal_error(layout, tmp_path, capsys):
    """/value/0 a group (exit 3 before; now read as ONE's record-minmax layout), a string or an
    empty dataset: h5diff and check either accept the file or refuse it in one line naming it."""
    import h5py

    path = tmp_path / f"{layout}.h5"
    with h5py.File(path, "w") as f:
        f.create_group("name")
        value = f.create_group("value")
        if layout == "group":
            value.create_group("0")
        elif layout == "strings":
            value.create_dataset("0", data=b"abc")
        else:
            value.create_dataset("0", shape=None, dtype="f4")
    for argv in (["h5diff", path, path], ["check", FIXTURE, FIXTURE, "--input", path]):
        code, lines = _run(capsys, *argv)
        assert code in (0, 1, 2), (argv, code, lines)
        if code:
            assert len(lines) == 1 and str(path) in lines[0], (argv, lines)
    code, lines = _run(capsys, "check", FIXTURE, FIXTURE, "--input", path)
    assert code == 2  # the fixture's input is a [1, 8, 8, 3] float tensor: none of these fits it


# ---- issue 16: the chef builds in linear time --------------------------------------------------


def _conv_bn_chain(blocks: int, c: int = 2) -> dict:
    """A recipe of `blocks` CONV->MUL->ADD blocks in a chain."""
    operands = [{"name": "x0", "shape": [1, 2, 2, c]}]
    operations = []
    for i in range(blocks):
        operands += (
            [
                {"name": f"w{i}", "shape": [c, 1, 1, c], "filler": {"kind": "gaussian"}},
                {"name": f"b{i}", "shape": [c], "filler": {"kind": "gaussian"}},
                {"name": f"s{i}", "shape": [c], "filler": {"kind": "uniform", "low": 0.5, "high": 1.5}},
                {"name": f"t{i}", "shape": [c], "filler": {"kind": "gaussian"}},
            ]
            + [{"name": f"{n}{i}", "shape": [1, 2, 2, c]} for n in ("c", "m")]
            + [{"name": f"x{i + 1}", "shape": [1, 2, 2, c]}]
        )
        operations += [
            {
                "type": "CONV_2D",
                "inputs": [f"x{i}", f"w{i}", f"b{i}"],
                "outputs": [f"c{i}"],
                "options": {"padding": "VALID", "stride_w": 1, "stride_h": 1},
            },
            {"type": "MUL", "inputs": [f"c{i}", f"s{i}"], "outputs": [f"m{i}"]},
            {"type": "ADD", "inputs": [f"m{i}", f"t{i}"], "outputs": [f"x{i + 1}"]},
        ]
    return {"input": ["x0"], "output": [f"x{blocks}"], "operand": operands, "operation": operations}


def _build_and_fold_seconds(blocks: int) -> tuple[float, float]:
    """CPU seconds to build the chain with the chef and to run the default passes over it, each
    checked for what it must produce."""
    import time

    from bnfold import api
    from bnfold.recipe.chef import build

    recipe = _conv_bn_chain(blocks)
    # the collector paused: its full collections walk the whole test process (every object pytest
    # and earlier tests left alive), which made the ratio swing from 2.0 to 3.2 with what ran before
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        model = build(recipe)
        built = time.process_time()
        assert len(model.graphs[0].ops) == 3 * blocks and model.op_counts()["CONV_2D"] == blocks
        report = api.apply_passes(model)
        folded = time.process_time()
    finally:
        gc.enable()
    assert model.op_counts() == {"CONV_2D": blocks} and len(report.folds) == blocks
    return built - started, folded - built


def test_a_deep_graph_builds_and_folds_in_linear_time():
    """Building and folding a CONV->MUL->ADD chain costs in proportion to its length: twice the
    blocks, about twice the CPU time (a lookup or a fold that scanned the whole graph made it 4x:
    19 s for 9,000 operators once). A ratio of CPU times in one process, not a wall-clock limit,
    so a loaded machine does not fail it; scripts/bench.py measures the slope itself."""

    def best_of_two(blocks):
        runs = [_build_and_fold_seconds(blocks) for _ in range(2)]
        return min(r[0] for r in runs), min(r[1] for r in runs)

    small, large = best_of_two(1500), best_of_two(3000)
    assert large[0] < 3 * small[0], f"build: 1500 blocks {small[0]:.2f} s, 3000 blocks {large[0]:.2f} s"
    assert large[1] < 3 * small[1], f"default passes: 1500 blocks {small[1]:.2f} s, 3000 blocks {large[1]:.2f} s"


# ---- issue 16: no numpy warning on stderr in a run that succeeds -------------------------------


def _with_infinite_scale(tmp_path):
    """bn_conv_valid with one channel of its batch-norm scale set to inf and a float32-overflowing
    value in another: folding would produce inf·0 and overflow."""
    from bnfold.io.atomic import save_model

    model = read_model(str(DATA / "bn_conv_valid.tflite"))
    mul = next(op for op in model.graphs[0].ops if op.kind == "MUL")
    scale = next(t for t in mul.inputs if t.is_const)
    data = np.array(scale.data, dtype=np.float32)
    data.flat[0], data.flat[-1] = np.inf, 3e38
    scale.data = data
    path = tmp_path / "inf_scale.tflite"
    save_model(model, str(path), model.format)
    return path


def test_runs_that_succeed_print_no_numpy_warnings(tmp_path):
    """Whole processes (pytest would capture warnings in-process): exit 0, nothing on stderr, and
    the fold that would have overflowed is refused with its reason in the report."""
    import json
    import subprocess

    src = _with_infinite_scale(tmp_path)
    report = tmp_path / "r.json"
    runs = [
        ["optimize", src, tmp_path / "o.tflite", "-q", "--report", report],
        ["optimize", src, tmp_path / "o2.tflite", "-q", "--make_batchnorm_gamma_positive"],
        ["check", src, src, "--backend", "reference", "--samples", "2"],
        ["check", src, src, "--backend", "litert"],
    ]
    for argv in runs:
        proc = subprocess.run(
            [sys.executable, "-W", "always::RuntimeWarning", "-m", "bnfold", *map(str, argv)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0 and proc.stderr == "", (argv, proc.stderr)
    skips = json.loads(report.read_text())["skips"]
    assert any("finite" in s["reason"] for s in skips), skips


@pytest.mark.parametrize(
    "dtype, filler, words",
    [
        ("FLOAT32", '{ kind = "constant", value = 1e40 }', "too large for FLOAT32"),
        ("FLOAT16", '{ kind = "gaussian", stddev = 1e6 }', "too large for FLOAT16"),
        ("INT8", '{ kind = "explicit", values = [1, 2, 300, 4, 5] }', "outside the range of INT8"),
    ],
)
def test_filler_values_that_do_not_fit_their_type_are_refused(dtype, filler, words, tmp_path, capsys):
    text = _conv_recipe(
        'name = "bias"\nshape = [5]\nfiller = { kind = "gaussian", stddev = 0.5 }',
        f'name = "bias"\ndtype = "{dtype}"\nshape = [5]\nfiller = {filler}',
    )
    path = _recipe_case(tmp_path, "overflow", text)
    code, lines = _run(capsys, "recipe", "build", path, tmp_path / "o.tflite")
    assert code == 2 and len(lines) == 1 and words in lines[0] and "'bias'" in lines[0], lines


def test_model_output_never_replaces_the_recipe_or_config_it_came_from(tmp_path, capsys):
    recipe = tmp_path / "r.toml"
    recipe.write_text(CONV_RECIPE.read_text())
    link = tmp_path / "r.tflite"
    link.symlink_to(recipe.name)
    code, lines = _run(capsys, "recipe", "build", recipe, link)
    assert code == 2 and "OUT names a file this run also reads" in lines[0]
    assert recipe.read_text() == CONV_RECIPE.read_text()
    cfg = tmp_path / "one.cfg"
    cfg.write_text(f"[one-optimize]\ninput_path={FIXTURE}\noutput_path={tmp_path / 'c.tflite'}\n")
    (tmp_path / "c.tflite").symlink_to(cfg.name)
    code, lines = _run(capsys, "optimize", "--config", cfg, "-q")
    assert code == 2 and "OUT names a file this run also reads" in lines[0]
    assert cfg.read_text().startswith("[one-optimize]")


def test_found_by_the_command_line_fuzzer(tmp_path, capsys):
    """`recipe test` on a name too long for the file system, `run --output ''`: internal errors
    (exit 3) before."""
    code, lines = _run(capsys, "recipe", "test", tmp_path / ("x" * 300 + ".toml"))
    assert code == 2 and len(lines) == 1 and "File name too long" in lines[0]
    code, lines = _run(capsys, "run", FIXTURE, "--output", "")
    assert code == 2 and lines == ["bnfold: error: --output needs a file name"]


def test_a_replaced_file_keeps_its_permissions(tmp_path, capsys):
    src = _model_copy(tmp_path, "private.tflite")
    src.chmod(0o600)
    report = tmp_path / "r.json"
    report.write_text("{}")
    report.chmod(0o640)
    code, _ = _run(capsys, "optimize", src, "--in-place", "-q", "--report", report)
    assert code == 0
    assert src.stat().st_mode & 0o777 == 0o600 and report.stat().st_mode & 0o777 == 0o640
    assert sum(read_model(str(src)).op_counts().values()) == 1


def test_recipe_test_refuses_a_malformed_expectation(tmp_path, capsys):
    """`[expect] passes = [[]]` reached an internal error in `recipe test` (found by the fuzzer)."""
    path = _recipe_case(tmp_path, "expect", _conv_recipe('passes = ["fuse_batchnorm_with_conv"]', "passes = [[]]"))
    code = cli.run(["recipe", "test", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and err.strip() == "bnfold: error: 1 of 1 recipes failed: expect"
    assert "ERROR expect: recipe expect.passes must be a list of pass names" in out


def test_a_zero_sized_channel_axis_is_refused_not_divided_by(tmp_path, capsys):
    """Found by the file fuzzer: a flattened tensor of shape [1, 0] before a FULLY_CONNECTED made
    the forward fold take a modulo by zero (exit 3)."""
    from bnfold.io.atomic import save_model

    model = read_model(str(build_recipe("Net_Preactivation_NCHW_000", tmp_path)))
    pooled = next(t for t in model.graphs[0].tensors if t.name == "pooled")
    pooled.shape = (1, 0)
    bad = tmp_path / "zero.tflite"
    save_model(model, str(bad), model.format)
    code, lines = _run(capsys, "optimize", bad, tmp_path / "o.tflite", "-q")
    assert code in (0, 1) and len(lines) <= 1 and "internal error" not in " ".join(lines), lines


def test_reduction_axes_of_a_packed_type_are_not_read_as_axes(tmp_path, capsys):
    """Found by the file fuzzer: a MEAN whose axes tensor says INT4 had its raw bytes read as
    axes by the forward fold, which then scaled weights by an empty vector (exit 3)."""
    from bnfold.io.atomic import save_model

    model = read_model(str(build_recipe("Net_Preactivation_BN_000", tmp_path)))
    axes = next(t for t in model.graphs[0].tensors if t.name == "axes")
    axes.dtype = "INT4"
    bad = tmp_path / "int4_axes.tflite"
    save_model(model, str(bad), model.format)
    report = tmp_path / "r.json"
    code, lines = _run(capsys, "optimize", bad, tmp_path / "o.tflite", "-q", "--report", report)
    assert code == 0 and lines == []
    import json

    reasons = [s["reason"] for s in json.loads(report.read_text())["skips"]]
    assert any("int32/int64 constant" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "recipe, damage",
    [
        ("Net_Preactivation_NCHW_000", "axes_out_of_range"),  # MEAN axes [2, -2^31]: taken modulo the rank before
        ("Net_Conv_Reshape_ScalarBN_000", "rank0_conv_output"),  # a conv output of shape []: indexed [-1] before
    ],
)
def test_fuzzer_found_fold_inputs_are_refused(recipe, damage, tmp_path, capsys):
    from bnfold.io.atomic import save_model

    model = read_model(str(build_recipe(recipe, tmp_path)))
    graph = model.graphs[0]
    if damage == "axes_out_of_range":
        axes = next(t for t in graph.tensors if t.name == "axes")
        axes.data = np.array([2, -(2**31)], dtype=np.int32)
    else:
        conv = next(op for op in graph.ops if op.kind == "CONV_2D")
        conv.outputs[0].shape = ()
    bad = tmp_path / f"{damage}.tflite"
    save_model(model, str(bad), model.format)
    code, lines = _run(capsys, "optimize", bad, tmp_path / "o.tflite", "-q")
    assert code in (0, 1) and len(lines) <= 1 and not any("internal error" in line for line in lines), lines


def test_a_transpose_permutation_of_another_type_is_not_followed(tmp_path):
    """Its raw bytes could spell a valid permutation by chance; only int32/int64 are indices."""
    from bnfold.engine.layout import map_axis
    from bnfold.io.formats import TFLITE
    from bnfold.ir.graph import Graph
    from bnfold.ir.model import Model

    graph = Model(TFLITE).add_graph(Graph("g"))
    x, y = graph.add_tensor("x", "FLOAT32", [1, 2, 3, 4]), graph.add_tensor("y", "FLOAT32", [1, 4, 2, 3])
    for dtype, follows in (("INT32", True), ("INT64", True), ("UINT8", False)):
        perm = graph.add_const(f"perm_{dtype}", np.array([0, 3, 1, 2]), dtype)
        op = graph.add_op("TRANSPOSE", [x, perm], [y])
        result = map_axis(op, 3)
        assert (result == 1) if follows else ("int32/int64" in result.reason), (dtype, result)
