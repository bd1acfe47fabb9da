"""bnfold.optimize: the library entry point (a path or bytes in; bytes and a report out)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bnfold
from bnfold.engine import registry
from bnfold.errors import UsageError
from bnfold.io.reader import read_model
from bnfold.values import DEFAULT_ATOL, DEFAULT_RTOL
from conftest import DATA, build_recipe, fixture_input, run_litert


def counts_of(data: bytes, tmp_path, name="m.tflite"):
    path = tmp_path / name
    path.write_bytes(data)
    return dict(read_model(str(path)).op_counts())


def test_path_in_default_passes(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    data, report = bnfold.optimize(str(src))
    assert data[4:8] == b"TFL3"
    assert counts_of(data, tmp_path) == {"CONV_2D": 1}
    assert report["passes"] == registry.default_passes()
    assert report["operators"] == {"before": {"CONV_2D": 1, "MUL": 1, "ADD": 1}, "after": {"CONV_2D": 1}}
    json.dumps(report)  # a plain value


def test_results_say_what_they_hold(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    result = bnfold.optimize(str(src), check=1)
    assert repr(result) == f"Optimized(tflite {str(src)!r}: 1 fold, 3 -> 1 operators, check passed)"
    assert repr(bnfold.optimize(src.read_bytes())) == "Optimized(tflite '<bytes>': 1 fold, 3 -> 1 operators)"
    assert (
        repr(bnfold.inspect(str(src), leftovers=True)) == "Inspection(tflite, 3 operators, 2 candidates, 0 transposes)"
    )
    ran = bnfold.run(str(src), str(tmp_path / "out.h5"))
    assert repr(ran) == f"Ran(outputs={[str(tmp_path / 'out.h5')]!r}, inputs=[], backend={ran.backend!r})"


def test_check_and_h5diff_take_none_as_the_default_tolerance(tmp_path):
    """None for rtol/atol/delta was a TypeError deep in the comparison (mypy: float | None passed
    where Tolerance needs a float); it means the default, as optimize's None does."""
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    result = bnfold.check(str(src), str(src), rtol=None, atol=None)
    assert result.passed and (result.tolerance.rtol, result.tolerance.atol) == (DEFAULT_RTOL, DEFAULT_ATOL)
    h5 = str(tmp_path / "out.h5")
    bnfold.run(str(src), h5)
    same = bnfold.h5diff(h5, h5, rtol=None, atol=None)
    assert same.passed and (same.tolerance.rtol, same.tolerance.atol) == (DEFAULT_RTOL, DEFAULT_ATOL)
    with pytest.raises(UsageError, match="rtol must be a finite number >= 0"):
        bnfold.check(str(src), str(src), rtol=-1.0)


def test_bytes_in_with_one_keywords(tmp_path):
    data = build_recipe("Net_Conv_Add_Mul_000", tmp_path).read_bytes()
    result = bnfold.optimize(data, fuse_activation_function=True)  # only what is named runs
    assert result.report["passes"] == ["fuse_activation_function"]
    assert counts_of(result.data, tmp_path) == {"CONV_2D": 1, "MUL": 1, "ADD": 1}
    assert result.report["input"]["path"] == "<bytes>" and result.report["input"]["bytes"] == len(data)
    o1 = bnfold.optimize(data, O1=True)
    assert counts_of(o1.data, tmp_path) == {"CONV_2D": 1}


def test_values_are_unchanged_and_save_records_the_output(tmp_path):
    name = "resnet_v2_mini.tflite"
    result = bnfold.optimize(DATA / name, check=2)
    assert result.report["check"]["passed"] and result.report["check"]["samples"] == 2
    out = tmp_path / "opt.circle"
    result.save(str(out))
    assert result.report["output"]["format"] == "circle" and read_model(str(out)).format.name == "circle"
    x = fixture_input(name)
    ref = np.load(DATA / "resnet_v2_mini.ref.npy")
    opt_tflite = tmp_path / "opt.tflite"
    opt_tflite.write_bytes(result.data)
    np.testing.assert_allclose(run_litert(opt_tflite, [x])[0], ref, rtol=1e-4, atol=1e-4)
    assert sum(result.report["operators"]["after"].values()) < sum(result.report["operators"]["before"].values())


def test_passes_as_a_list_or_a_comma_string(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    a = bnfold.optimize(src, ["fuse_batchnorm_with_conv"])
    b = bnfold.optimize(src, "fuse_batchnorm_with_conv,")
    assert a.data == b.data and a.report["passes"] == b.report["passes"] == ["fuse_batchnorm_with_conv"]


def test_unknown_and_unimplemented_names(tmp_path):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    with pytest.raises(UsageError, match="did you mean fuse_batchnorm_with_conv"):
        bnfold.optimize(src, fuse_batchnorm_with_cnv=True)
    result = bnfold.optimize(src, verbose=True, fuse_batchnorm_with_conv=True)
    assert result.report["ignored_options"] == ["verbose"]
    with pytest.raises(UsageError, match="strict mode"):
        bnfold.optimize(src, verbose=True, strict=True)


def test_the_library_replaces_no_file_the_cli_would_refuse_to(tmp_path):
    """bnfold.optimize(p).save(p) replaced the input silently; a missing directory was a
    ModelError (exit 1's class) and a non-string pass name an AttributeError (issue 36)."""
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    before = src.read_bytes()
    result = bnfold.optimize(src)
    with pytest.raises(UsageError, match=r"output is the input file; pass --in-place \(in_place=True\)"):
        result.save(src)
    with pytest.raises(UsageError, match="output is the input file"):
        bnfold.api.save(bnfold.load(src), str(src))
    assert src.read_bytes() == before
    with pytest.raises(UsageError, match="output directory .* does not exist"):
        result.save(tmp_path / "missing" / "o.tflite")
    for passes in (["fuse_batchnorm_with_conv", 3], 3):
        with pytest.raises(UsageError, match="must be"):
            bnfold.optimize(src, passes=passes)
    assert result.save(src, in_place=True).written and src.read_bytes() != before
    assert sum(bnfold.load(src).op_counts().values()) == 1


def test_one_input_file_may_be_given_as_a_string(tmp_path):
    """inputs="in.h5" was read as the files "i", "n", ... ('i: no such file')."""
    src = str(build_recipe("Net_Conv_Add_Mul_000", tmp_path))
    inputs, expected = str(tmp_path / "in.h5"), str(tmp_path / "exp.h5")
    bnfold.run(src, expected, write_input=inputs)
    assert bnfold.check(src, inputs=inputs, expected=expected).passed
    assert bnfold.run(src, str(tmp_path / "again.h5"), inputs=tmp_path / "in.h5").outputs == [
        str(tmp_path / "again.h5")
    ]
    with pytest.raises(UsageError, match="a path or a list of paths"):
        bnfold.check(src, src, inputs=3)


def test_samples_or_seed_with_input_files_are_refused_as_on_the_command_line(tmp_path):
    """The input files are the samples: samples=5 beside them was ignored (the CLI refused it)."""
    src = str(build_recipe("Net_Conv_Add_Mul_000", tmp_path))
    inputs, expected = str(tmp_path / "in.h5"), str(tmp_path / "exp.h5")
    bnfold.run(src, expected, write_input=inputs, samples=1, seed=3)
    for extra, named in (({"samples": 5}, "samples is"), ({"seed": 3}, "seed is"), ({"samples": 1, "seed": 0}, "are")):
        with pytest.raises(UsageError, match=f"{named} for random inputs"):
            bnfold.check(src, src, inputs=inputs, **extra)
        with pytest.raises(UsageError, match=f"{named} for random inputs"):
            bnfold.run(src, str(tmp_path / "again.h5"), inputs=inputs, **extra)
    assert bnfold.check(src, src, inputs=inputs).samples == 1
    assert bnfold.check(src, inputs=inputs, expected=expected).passed
