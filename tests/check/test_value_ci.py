"""The value check a CI can trust: validated options, inputs that must match the model, ONE's h5
files as TestDataGenerator writes them, `run` + `check --expected`, `recipe test`, bounded work."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import numpy as np
import pytest
from test_check_cli import broken_copy

from bnfold.cli import run
from bnfold.io.reader import read_model
from bnfold.values import diff
from bnfold.values.h5io import read_h5, write_h5
from conftest import DATA, RECIPES, TEST_RECIPES, build_recipe

MODEL = str(DATA / "bn_conv_valid.tflite")


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bnfold: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "args",
    [
        ["--rtol", "-1"],
        ["--rtol", "nan"],
        ["--atol", "inf"],
        ["--atol", "x"],
        ["--samples", "0"],
        ["--samples", "1000000000"],
        ["--seed", "-1"],
        ["--seed", str(2**40)],
        ["--timeout", "0"],
        ["--timeout", "-5"],
    ],
)
def test_numeric_options_are_validated_as_usage_errors(args, capsys):
    assert run(["check", MODEL, MODEL, *args]) == 2
    one_line_error(capsys)


def test_optimize_and_h5diff_tolerances_are_validated(tmp_path, capsys):
    assert run(["optimize", MODEL, str(tmp_path / "o.tflite"), "--check", "1", "--rtol", "-1e-5"]) == 2
    assert run(["optimize", MODEL, str(tmp_path / "o.tflite"), "--check", "0"]) == 2
    assert run(["h5diff", "a.h5", "b.h5", "-d", "nan"]) == 2
    assert not list(tmp_path.iterdir())


def input_name() -> str:
    return read_model(MODEL).graphs[0].inputs[0].name


def test_input_of_another_dtype_or_shape_is_refused_naming_the_input(tmp_path, capsys):
    shape = read_model(MODEL).graphs[0].inputs[0].shape
    ints, wide, wrong = (str(tmp_path / n) for n in ("ints.h5", "wide.h5", "shape.h5"))
    write_h5(ints, [(input_name(), np.ones(shape, np.int32))])
    write_h5(wide, [(input_name(), np.full(shape, 1e300))])
    write_h5(wrong, [(input_name(), np.ones((1, 2), np.float32))])
    assert run(["check", MODEL, MODEL, "--input", ints]) == 2
    err = one_line_error(capsys)
    assert repr(input_name()) in err and "int32" in err and "--cast" in err
    assert run(["check", MODEL, MODEL, "--input", ints, "--cast"]) == 0
    capsys.readouterr()
    assert run(["check", MODEL, MODEL, "--input", wide, "--cast"]) == 2  # 1e300 would become inf
    assert "do not fit" in one_line_error(capsys)
    assert run(["check", MODEL, MODEL, "--input", wrong, "--cast"]) == 2
    assert "shape" in one_line_error(capsys)


def write_like_test_data_generator(path, named):
    """An h5 file written the way ONE's TestDataGenerator writes one, with h5py's low-level API:
    H5T_C_S1 names sized to the string, ":0" appended, native dtypes."""
    with h5py.File(path, "w") as f:
        names, values = f.create_group("name"), f.create_group("value")
        for i, (name, array) in enumerate(named):
            name = name if ":" in name else name + ":0"
            string = h5py.h5t.C_S1.copy()
            string.set_size(len(name))
            attr = h5py.h5a.create(names.id, str(i).encode(), string, h5py.h5s.create(h5py.h5s.SCALAR))
            attr.write(np.array(name.encode(), dtype=f"S{len(name)}"), mtype=string)
            values.create_dataset(str(i), data=array)


def test_ci_workflow_run_then_check_against_stored_outputs(tmp_path, capsys):
    """A CI keeps the model's input.h5 / expected.h5; the optimized model is checked against them
    without the original; a changed model fails with exit 1."""
    graph = read_model(MODEL).graphs[0]
    inp, expected = str(tmp_path / "input.h5"), str(tmp_path / "expected.h5")
    x = np.random.default_rng(5).normal(0, 2, graph.inputs[0].shape).astype(np.float32)
    write_like_test_data_generator(inp, [(graph.inputs[0].name, x)])
    assert run(["run", MODEL, "--input", inp, "--output", expected]) == 0
    ((name, y),) = read_h5(expected)
    assert name.split(":")[0] == graph.outputs[0].name.split(":")[0] and y.shape == graph.outputs[0].shape
    opt = str(tmp_path / "opt.tflite")
    assert run(["optimize", MODEL, opt, "-q"]) == 0
    assert run(["check", opt, "--input", inp, "--expected", expected]) == 0
    assert "1 sample(s)" in capsys.readouterr().out
    bad = str(broken_copy(MODEL, tmp_path / "bad.tflite"))
    assert run(["check", bad, "--input", inp, "--expected", expected]) == 1
    assert run(["check", opt, "--expected", expected]) == 2  # --expected needs its --input
    assert run(["check", opt, opt, "--input", inp, "--expected", expected]) == 2


def test_record_minmax_file_is_a_list_of_samples(tmp_path, capsys):
    graph = read_model(MODEL).graphs[0]
    records = tmp_path / "minmax.h5"
    rng = np.random.default_rng(0)
    with h5py.File(records, "w") as f:
        for r in range(3):
            f.create_group(f"value/{r}").create_dataset(
                "0", data=rng.normal(size=graph.inputs[0].shape).astype(np.float32)
            )
    out = tmp_path / "out.h5"
    assert run(["check", MODEL, MODEL, "--input", str(records), "--write-expected", str(out)]) == 0
    assert "3 sample(s)" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.glob("out.*.h5")) == ["out.0.h5", "out.1.h5", "out.2.h5"]
    assert run(["run", MODEL, "--input", str(records), "--output", str(tmp_path / "r.h5")]) == 0
    for i in range(3):
        assert np.array_equal(read_h5(str(tmp_path / f"r.{i}.h5"))[0][1], read_h5(str(tmp_path / f"out.{i}.h5"))[0][1])


def test_h5diff_matches_by_name_compares_complex_and_rejects_malformed_files(tmp_path, capsys):
    a, b, c, bad = (str(tmp_path / n) for n in ("a.h5", "b.h5", "c.h5", "bad.h5"))
    write_h5(a, [("p", np.float32([1, 2])), ("q", np.complex64([1 + 1j]))])
    write_like_test_data_generator(b, [("q", np.complex64([1 + 1j])), ("p", np.float32([1, 2]))])  # other order
    write_h5(c, [("p", np.float32([1, 2])), ("q", np.complex64([1 + 2j]))])
    assert run(["h5diff", a, b]) == 0
    assert run(["h5diff", a, c]) == 1
    assert "q:0" in one_line_error(capsys)
    with h5py.File(bad, "w") as f:
        f.create_group("value/0")
        f["value"].create_dataset("1", data=np.zeros(2))
    assert run(["h5diff", a, bad]) == 1
    assert "mixes groups and datasets" in one_line_error(capsys)


def test_samples_are_generated_one_at_a_time():
    """Sample i+1 does not exist before sample i has been run, compared and handed on."""
    model = read_model(MODEL)
    events = []

    def inputs():
        for i, sample in enumerate(diff.iter_random_inputs(model.graphs[0], 3)):
            events.append(("made", i))
            yield sample

    diff.check_models(model, model, inputs=inputs(), on_sample=lambda i, x, y: events.append(("done", i)))
    assert events == [("made", 0), ("done", 0), ("made", 1), ("done", 1), ("made", 2), ("done", 2)]


def test_while_loop_cap_and_timeout_stop_with_exit_4(tmp_path, capsys, monkeypatch):
    from bnfold.reference import kernels

    loop = str(build_recipe("Foundation_While_000", tmp_path))
    monkeypatch.setattr(kernels, "MAX_WHILE_ITERATIONS", 1)
    assert run(["check", loop, loop, "--backend", "reference"]) == 4
    assert "did not stop after 1 iterations" in one_line_error(capsys)
    assert run(["check", MODEL, MODEL, "--timeout", "1e-9"]) == 4
    assert "timeout" in one_line_error(capsys)


def test_recipe_test_command_one_line_per_recipe_and_junit(tmp_path, capsys):
    report = tmp_path / "report.xml"
    recipes = [str(RECIPES / "Net_Conv_Add_Mul_000.toml"), str(RECIPES / "Neg_Conv_BN_NonConst_000.toml")]
    assert run(["recipe", "test", *recipes, "--junit", str(report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[:2]] == [
        ["PASS", "Net_Conv_Add_Mul_000"],
        ["PASS", "Neg_Conv_BN_NonConst_000"],
    ]
    assert lines[2] == "2 passed, 0 failed, 0 unverified"
    suite = ET.parse(report).getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "2" and suite.get("failures") == "0"
    assert [c.get("name") for c in suite.iter("testcase")] == ["Net_Conv_Add_Mul_000", "Neg_Conv_BN_NonConst_000"]


def test_recipe_test_counts_a_recipe_nothing_runs_apart_and_answers_4(tmp_path, capsys):
    """Could not verify is not a difference (issue 36): exit 4, `UNVERIFIED`, a JUnit <skipped>;
    a failure beside it still makes the run exit 1."""
    shipped, good = str(TEST_RECIPES / "Shipped_000.toml"), str(RECIPES / "Net_Conv_Add_Mul_000.toml")
    report = tmp_path / "r.xml"
    assert run(["recipe", "test", shipped, good, "--junit", str(report)]) == 4
    out, err = capsys.readouterr()
    assert out.startswith("UNVERIFIED Shipped_000: no backend runs the model")
    assert out.splitlines()[-1] == "1 passed, 0 failed, 1 unverified"
    assert err.strip() == "bnfold: error: 1 of 2 recipes could not be verified: Shipped_000"
    suite = ET.parse(report).getroot()
    assert (suite.get("skipped"), suite.get("errors"), suite.get("failures")) == ("1", "0", "0")
    assert suite.find("testcase/skipped") is not None
    broken = tmp_path / "Broken_000.toml"
    broken.write_text(Path(good).read_text().replace('passes = ["fuse_batchnorm_with_conv"]', "passes = []"))
    assert run(["recipe", "test", shipped, str(broken)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "0 passed, 1 failed, 1 unverified"


def test_recipe_test_fails_a_recipe_whose_rules_break(tmp_path, capsys):
    text = (RECIPES / "Net_Conv_Add_Mul_000.toml").read_text()
    broken = tmp_path / "Broken_000.toml"
    broken.write_text(text.replace('passes = ["fuse_batchnorm_with_conv"]', "passes = []"))  # the fold never runs
    report = tmp_path / "r.xml"
    assert run(["recipe", "test", str(broken), "--junit", str(report)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL  Broken_000: ") and "expected" in out
    assert ET.parse(report).getroot().find("testcase/failure") is not None


def resnet_with_negative_scales(tmp_path):
    """resnet_v2_mini with the batch-norm scales of two channels of every other MUL negated (a
    real converter's ResNet where some BNs have negative gammas, the others fold exactly)."""
    from bnfold.io.atomic import save_model

    model = read_model(str(DATA / "resnet_v2_mini.tflite"))
    muls = [op for op in model.graphs[0].ops if op.kind == "MUL"]
    for op in muls[::2]:
        const = next((t for t in op.inputs if t is not None and t.is_const), None)
        if const is not None and const.data.size > 2:
            gamma = const.data.copy()
            gamma.reshape(-1)[:2] *= -1
            const.data = gamma
    model.changed = True
    path = tmp_path / "resnet_negative.tflite"
    save_model(model, str(path), model.format)
    return str(path)


def test_exact_folds_pass_the_check_and_the_lossy_gamma_rewrite_is_refused(tmp_path, capsys):
    src = resnet_with_negative_scales(tmp_path)
    exact, lossy = str(tmp_path / "exact.tflite"), str(tmp_path / "lossy.tflite")
    assert run(["optimize", src, exact, "--check", "3"]) == 0
    worst = float(capsys.readouterr().out.split("scaled err ")[1].split(",")[0])
    assert worst < 1e-6  # room to spare below rtol = 1e-5
    assert (
        run(
            [
                "optimize",
                src,
                lossy,
                "--check",
                "3",
                "--make_batchnorm_gamma_positive",
                "--fuse_preactivation_batchnorm",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.endswith("FAIL")]
    assert rows and all(float(r[-2]) > 1e-3 for r in rows)  # scaled err: far beyond the tolerance
    assert not (tmp_path / "lossy.tflite").exists()


def test_integers_compare_exactly_and_native_bools_match_numpy_bools():
    big = np.array([2**62, -(2**62)], np.int64)
    assert not diff.compare("i", big, big + np.int64([1, 0])).passed  # 2**62 + 1 is the same float64
    assert diff.compare("i", big, big.copy()).passed
    assert diff.compare("b", np.array([True, False]), np.array([1, 0], np.uint8)).passed  # hbool as written
    assert not diff.compare("b", np.array([True, False]), np.array([1, 1], np.uint8)).passed


def test_bool_outputs_round_trip_through_hbool_files(tmp_path, capsys):
    from bnfold.io.atomic import save_model
    from bnfold.recipe.chef import build

    recipe = {
        "input": ["x", "y"],
        "output": ["z"],
        "operand": [
            {"name": "x", "shape": [2, 5]},
            {"name": "y", "shape": [2, 5]},
            {"name": "z", "shape": [2, 5], "dtype": "BOOL"},
        ],
        "operation": [{"type": "LESS", "inputs": ["x", "y"], "outputs": ["z"]}],
    }
    model = build(recipe)
    path, inp, out = str(tmp_path / "less.tflite"), str(tmp_path / "in.h5"), str(tmp_path / "out.h5")
    save_model(model, path, model.format)
    assert run(["check", path, path, "--write-input", inp]) == 0
    assert run(["run", path, "--input", inp, "--output", out]) == 0
    with h5py.File(out, "r") as f:
        assert f["value/0"].dtype == np.uint8  # HDF5's native bool, as ONE writes it
    assert run(["check", path, "--input", inp, "--expected", out]) == 0


def test_h5diff_compares_strings_and_integers(tmp_path, capsys):
    a, b, c = (str(tmp_path / n) for n in ("a.h5", "b.h5", "c.h5"))
    for path, word, count in ((a, "cat", 7), (b, "cat", 7), (c, "cap", 8)):
        with h5py.File(path, "w") as f:
            values = f.create_group("value")
            values.create_dataset("0", data=np.array([word.encode()]))
            values.create_dataset("1", data=np.array([count], np.int64))
    assert run(["h5diff", a, b]) == 0
    assert run(["h5diff", a, c]) == 1
    err = one_line_error(capsys)
    assert "2 of 2 tensors" in err
    assert run(["h5diff", a, c, "-d", "1"]) == 1  # the integers are within 1, the strings still differ
    assert "1 of 2 tensors" in one_line_error(capsys)


def test_run_writes_random_inputs_and_outputs_like_test_data_generator(tmp_path, capsys):
    inp, out = str(tmp_path / "in.h5"), str(tmp_path / "out.h5")
    assert run(["run", MODEL, "--samples", "2", "--seed", "4", "--write-input", inp, "--output", out]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.0.h5", "in.1.h5", "out.0.h5", "out.1.h5"]
    want = diff.random_inputs(read_model(MODEL).graphs[0], 2, seed=4)
    for i in range(2):
        assert np.array_equal(read_h5(str(tmp_path / f"in.{i}.h5"))[0][1], want[i][0])
    files = [str(tmp_path / f"{kind}.{i}.h5") for kind in ("in", "out") for i in range(2)]
    assert (
        run(["check", MODEL, "--input", files[0], "--input", files[1], "--expected", files[2], "--expected", files[3]])
        == 0
    )
    assert "2 sample(s)" in capsys.readouterr().out
    assert run(["run", MODEL, "--input", files[0], "--write-input", inp, "--output", out]) == 2


def test_float16_weight_folds_are_checked_at_float16_precision(tmp_path, capsys):
    src = str(build_recipe("Quant_Fp16_Conv_BN_000", tmp_path))
    out = str(tmp_path / "o.tflite")
    assert run(["optimize", src, out, "--check", "3"]) == 0
    text = capsys.readouterr().out
    assert "within rtol=0.01 " in text
    scaled = float(text.split("scaled err ")[1].split(",")[0])
    assert 1e-5 < scaled < 1e-3  # one more float16 rounding: beyond float32's tolerance, within float16's
    assert run(["optimize", src, str(tmp_path / "strict.tflite"), "--check", "3", "--rtol", "1e-5"]) == 1
    assert not (tmp_path / "strict.tflite").exists()
