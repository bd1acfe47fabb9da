"""`bnfold check`, `bnfold h5diff` and `bnfold optimize --check`: a model against itself differs by
exactly 0; one changed weight fails with a non-zero exit that names the output."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bnfold import api
from bnfold.cli import run
from bnfold.errors import CannotVerify, UsageError
from bnfold.io.atomic import save_model
from bnfold.io.reader import read_model
from bnfold.values import diff
from bnfold.values.h5io import read_h5, write_h5
from conftest import DATA, FIXTURES


def broken_copy(src, dst):
    """`src` with one weight of its first convolution changed by +1, written through the IR."""
    model = read_model(str(src))
    op = next(op for g in model.graphs for op in g.ops if op.kind in ("CONV_2D", "DEPTHWISE_CONV_2D"))
    weights = op.inputs[1].data.copy()
    weights.flat[0] += 1.0
    op.inputs[1].data = weights
    model.changed = True
    save_model(model, str(dst), model.format)
    return dst


def output_names(path):
    return [t.name for t in read_model(str(path)).graphs[0].outputs]


def table_rows(text):
    """output name -> (max abs err, max rel err, scaled err, result) from the printed table."""
    rows = {}
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 5 and parts[-1] in ("ok", "FAIL"):
            rows[" ".join(parts[:-4])] = (float(parts[-4]), float(parts[-3]), float(parts[-2]), parts[-1])
    return rows


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_against_itself_is_exactly_equal(name, capsys):
    path = str(DATA / name)
    assert run(["check", path, path, "--samples", "2"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert sorted(rows) == sorted(output_names(path))
    assert all(row == (0.0, 0.0, 0.0, "ok") for row in rows.values())


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_against_broken_copy_fails_and_names_the_output(name, tmp_path, capsys):
    src = DATA / name
    bad = broken_copy(src, tmp_path / name)
    result = diff.check_models(read_model(str(src)), read_model(str(bad)))
    failing = [o.name for o in result.failing]
    assert failing, "one changed weight must change some output"
    assert run(["check", str(src), str(bad)]) == 1
    captured = capsys.readouterr()
    rows = table_rows(captured.out)
    assert [n for n, r in rows.items() if r[3] == "FAIL"] == failing
    assert all(rows[n][0] > 1e-3 for n in failing)
    error = captured.err.strip()
    assert error.count("\n") == 0 and error.startswith("bnfold: error: ")
    assert all(n in error for n in failing)


def test_reference_backend_on_circle_and_same_inputs_both_ways(tmp_path, capsys):
    path = str(DATA / "torch_resblock_nchw.circle")
    inp, exp_ref, exp_rt = (str(tmp_path / n) for n in ("in.h5", "ref.h5", "rt.h5"))
    assert (
        run(
            [
                "check",
                path,
                path,
                "--backend",
                "reference",
                "--seed",
                "9",
                "--write-input",
                inp,
                "--write-expected",
                exp_ref,
            ]
        )
        == 0
    )
    assert "backend reference" in capsys.readouterr().out
    assert run(["check", path, path, "--backend", "litert", "--input", inp, "--write-expected", exp_rt]) == 0
    capsys.readouterr()
    # the written input is normal(0, 2) data of the input's shape; the two backends agree on it
    ((name, x),) = read_h5(inp)
    model = read_model(path)
    assert name == model.graphs[0].inputs[0].name and x.shape == model.graphs[0].inputs[0].shape
    assert 1.5 < x.std() < 2.5 and x.min() < 0
    assert run(["h5diff", exp_ref, exp_rt]) == 0
    assert run(["h5diff", exp_ref, exp_rt, "-d", "0"]) == 1 or np.array_equal(
        read_h5(exp_ref)[0][1], read_h5(exp_rt)[0][1]
    )


def test_samples_write_one_file_each_and_seed_is_reproducible(tmp_path):
    path = str(DATA / "bn_conv_valid.tflite")
    assert run(["check", path, path, "--samples", "3", "--seed", "4", "--write-input", str(tmp_path / "in.h5")]) == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["in.0.h5", "in.1.h5", "in.2.h5"]
    again = diff.random_inputs(read_model(path).graphs[0], 3, seed=4)
    for i in range(3):
        assert np.array_equal(read_h5(str(tmp_path / f"in.{i}.h5"))[0][1], again[i][0])
    assert not np.array_equal(again[0][0], again[1][0])


def test_integer_and_bool_inputs_span_their_range():
    from bnfold.ir.graph import Tensor

    rng = np.random.default_rng(0)
    i8 = diff.random_input(Tensor("a", "INT8", [4000]), rng)
    u8 = diff.random_input(Tensor("b", "UINT8", [4000]), rng)
    b = diff.random_input(Tensor("c", "BOOL", [1000]), rng)
    i32 = diff.random_input(Tensor("d", "INT32", [1000]), rng)
    assert i8.dtype == np.int8 and i8.min() == -128 and i8.max() == 127
    assert u8.dtype == np.uint8 and u8.min() == 0 and u8.max() == 255
    assert b.dtype == np.bool_ and 300 < b.sum() < 700
    assert i32.min() < -(2**30) and i32.max() > 2**30


def test_compare_judges_the_error_against_the_outputs_largest_magnitude():
    tol = diff.Tolerance(1e-5, 1e-5)
    a = np.array([100.0, -2.0, 0.0], np.float32)
    near_zero = diff.compare("y", a, a + np.float32([0, 0, 5e-4]), tol)  # 5e-4 <= 1e-5 + 1e-5 * 100
    assert near_zero.passed and near_zero.max_rel == np.inf
    assert near_zero.scaled == pytest.approx(5e-6, rel=1e-3)
    beyond = diff.compare("y", a, a + np.float32([0, 0, 2e-3]), tol)
    assert not beyond.passed and beyond.scaled == pytest.approx(2e-5, rel=1e-3)
    zero = np.zeros(3, np.float32)
    assert diff.compare("z", zero, zero + np.float32(1e-5), tol).passed  # atol alone for an all-zero output
    assert not diff.compare("z", zero, zero + np.float32(2e-5), tol).passed


def test_compare_integers_nan_inf_complex_bool_strings():
    tol = diff.Tolerance(1.0, 1.0)
    assert not diff.compare("n", np.array([3], np.int32), np.array([4], np.int32), tol).passed
    assert diff.compare(
        "n", np.array([3], np.int32), np.array([4], np.int32), diff.Tolerance(0, 1.0, exact_integers=False)
    ).passed
    assert diff.compare("nan", np.float32([np.nan, 1]), np.float32([np.nan, 1]), diff.Tolerance(0, 0)).passed
    assert not diff.compare("nan", np.float32([np.nan, 1]), np.float32([0, 1]), tol).passed
    assert diff.compare("inf", np.float32([np.inf, 1]), np.float32([np.inf, 1]), diff.Tolerance(0, 0)).passed
    assert not diff.compare("inf", np.float32([np.inf, 1]), np.float32([-np.inf, 1]), tol).passed
    c = diff.compare("c", np.complex64([1 + 1j]), np.complex64([1 + 2j]), diff.Tolerance(1e-5, 1e-5))
    assert not c.passed and c.max_abs == pytest.approx(1.0)
    assert diff.compare("c", np.complex64([1 + 1j]), np.complex64([1 + 1j]), diff.Tolerance(0, 0)).passed
    assert not diff.compare("b", np.array([True, False]), np.array([True, True]), tol).passed
    assert diff.compare("s", np.array([b"ab"]), np.array([b"ab"]), tol).passed
    assert not diff.compare("s", np.array([b"ab"]), np.array([b"ac"]), tol).passed
    assert diff.compare("s", np.zeros((2, 3)), np.zeros((3, 2)), tol).problem == "shape [2, 3] vs [3, 2]"


def test_h5diff_delta_is_absolute_only(tmp_path, capsys):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    write_h5(a, [("y", np.float32([100.0, 1.0]))])
    write_h5(b, [("y", np.float32([100.0005, 1.0]))])
    assert run(["h5diff", a, b]) == 0  # 5e-4 <= 1e-5 + 1e-5 * 100
    assert run(["h5diff", a, b, "-d", "1e-4"]) == 1
    assert "y" in capsys.readouterr().err
    assert run(["h5diff", a, b, "-d", "1e-3"]) == 0


def test_optimize_check_passes_and_writes(tmp_path, capsys):
    out = tmp_path / "out.tflite"
    assert run(["optimize", str(DATA / "resnet_v2_mini.tflite"), str(out), "--check", "2"]) == 0
    assert "check: 2 sample(s)" in capsys.readouterr().out and out.exists()


def test_check_options_without_check_are_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "out.tflite"
    for extra in (["--check-mode", "local"], ["--rtol", "1e-3"], ["--atol", "1e-3"]):
        assert run(["optimize", str(DATA / "resnet_v2_mini.tflite"), str(out), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--check N" in err[0] and not out.exists()
    with pytest.raises(UsageError, match="check=N"):
        api.optimize(str(DATA / "resnet_v2_mini.tflite"), check_mode="local")


def test_optimize_check_failure_writes_no_model_but_its_report(tmp_path, capsys, monkeypatch):
    real = api.apply_passes

    def breaking_optimize(model, passes=None, target=None, writes=None, **how):  # a "pass" that changes one weight
        report = real(model, passes, target, writes, **how)
        t = next(op for op in model.graphs[0].ops if op.kind == "CONV_2D").inputs[1]
        w = t.data.copy()
        w.flat[0] += 1.0
        t.data = w
        return report

    monkeypatch.setattr(api, "apply_passes", breaking_optimize)
    out, report = tmp_path / "out.tflite", tmp_path / "r.json"
    src = DATA / "bn_conv_valid.tflite"
    assert run(["optimize", str(src), str(out), "--check", "1", "--report", str(report)]) == 1
    captured = capsys.readouterr()
    assert list(tmp_path.iterdir()) == [report]  # the report a CI job needs then, and no model
    name = output_names(src)[0]
    assert "FAIL" in captured.out and name in captured.err and captured.err.count("\n") == 1
    check = json.loads(report.read_text())["check"]
    assert check["passed"] is False and name in check["verdict"] and check["verdict"] in captured.err
    printed = [line for line in captured.out.splitlines() if line]
    table_at = printed.index(check["table"][0])  # after what the passes did (the operator table first)
    assert printed[0].startswith("operator ") and printed[table_at : table_at + len(check["table"])] == check["table"]


def test_check_errors_are_one_line_with_exit_codes(tmp_path, capsys):
    a = str(DATA / "bn_conv_valid.tflite")
    b = str(DATA / "resnet_v2_mini.tflite")
    assert run(["check", a, b]) == 2
    assert run(["check", a, a, "--input", str(tmp_path / "none.h5")]) == 2
    assert run(["check", a, a, "--backend", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("bnfold: error: ") for line in err)
    assert a in err[0] and b in err[0]  # models that cannot take the same inputs: both files named


def test_reference_backend_names_the_operator_it_cannot_run(tmp_path, capsys):
    from bnfold.recipe.chef import build

    recipe = {
        "input": ["x"],
        "output": ["z"],
        "operand": [{"name": "x", "shape": [2, 3]}, {"name": "y", "shape": [2, 3]}, {"name": "z", "shape": [2, 3]}],
        "operation": [
            {"type": "RELU", "inputs": ["x"], "outputs": ["y"]},
            {"type": "FLOOR", "inputs": ["y"], "outputs": ["z"]},
        ],
    }
    path = tmp_path / "floor.tflite"
    save_model(build(recipe), str(path), read_model(str(DATA / "bn_conv_valid.tflite")).format)
    assert run(["check", str(path), str(path), "--backend", "reference"]) == 4  # could not verify
    assert capsys.readouterr().err == "bnfold: error: reference interpreter cannot run FLOOR\n"
    assert run(["check", str(path), str(path)]) == 0  # auto: LiteRT runs it


def test_console_script_exit_codes(tmp_path):
    src = DATA / "conv_relu_bn.tflite"
    bad = broken_copy(src, tmp_path / "bad.tflite")
    exe = [sys.executable, "-m", "bnfold"]
    same = subprocess.run(exe + ["check", str(src), str(src)], capture_output=True, text=True)
    differ = subprocess.run(exe + ["check", str(src), str(bad)], capture_output=True, text=True)
    assert same.returncode == 0, same.stderr
    assert differ.returncode == 1 and output_names(src)[0] in differ.stderr and "Traceback" not in differ.stderr


def test_auto_uses_the_reference_interpreter_where_litert_cannot_run(tmp_path, capsys):
    from conftest import build_recipe

    circle_only = build_recipe("Foundation_InstanceNorm_000", tmp_path)  # INSTANCE_NORM: Circle only
    assert run(["check", str(circle_only), str(circle_only)]) == 0
    assert "backend reference" in capsys.readouterr().out
    assert run(["check", str(circle_only), str(circle_only), "--backend", "litert"]) == 4
    assert capsys.readouterr().err.startswith("bnfold: error: ")


def test_depthwise_without_bias_never_reaches_litert():
    from bnfold.recipe.chef import build
    from bnfold.values.backend import Backends

    recipe = {
        "input": ["x"],
        "output": ["y"],
        "operand": [
            {"name": "x", "shape": [1, 4, 5, 3]},
            {"name": "w", "shape": [1, 2, 2, 3], "filler": {"kind": "gaussian"}},
            {"name": "y", "shape": [1, 4, 5, 3]},
        ],
        "operation": [
            {
                "type": "DEPTHWISE_CONV_2D",
                "inputs": ["x", "w"],
                "outputs": ["y"],
                "options": {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1},
            }
        ],
    }
    model = build(recipe)  # LiteRT 2.3 would crash the process (segmentation fault) on this
    assert [r.backend for r in Backends([model, model]).runners] == ["reference", "reference"]
    with pytest.raises(CannotVerify, match="without a bias input"):
        Backends([model], "litert")
