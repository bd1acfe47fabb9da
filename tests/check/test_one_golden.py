"""ONE's own golden files and h5 names (issues 35 and 36).

gen_golden.py (tools/nnpackage_tool/gen_golden) writes /name attributes as h5py's variable-length
strings (the tensor names, no ":0"), float32 values as big-endian `>f4` and bool and uint8 as `u1`;
onert_run's H5Formatter::dumpOutputs writes no /name, float32 as IEEE_F32BE, int32 and int64
little-endian, uint8 as STD_U8BE and bool as STD_U8LE. Their values are numbers like any other:
`check --input/--expected` exits 0 on the model that made them and `h5diff` against bnfold's
native copy exits 0. When both files name their values, names decide the pairing."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from bnfold import api
from bnfold.cli import run
from bnfold.errors import UsageError
from bnfold.values.h5io import read_h5, write_h5
from conftest import build_recipe

GOLDEN_TYPES = {"float32": ">f4", "uint8": "u1", "bool": "u1", "int32": "int32", "int64": "int64"}
ONERT_TYPES = {"float32": ">f4", "int32": "<i4", "int64": "<i8", "uint8": ">u1", "bool": "<u1", "int8": "<i1"}


def as_gen_golden(src, dst) -> None:
    """`src` (bnfold's native file) rewritten in gen_golden.py's layout."""
    with h5py.File(dst, "w") as f:
        names, values = f.create_group("name"), f.create_group("value")
        for i, (name, value) in enumerate(read_h5(str(src))):
            values.create_dataset(str(i), data=value, dtype=GOLDEN_TYPES[value.dtype.name])
            names.attrs[str(i)] = name.removesuffix(":0")


def as_onert_run(src, dst) -> None:
    """`src` rewritten as onert_run dumps outputs: /value only, its byte orders."""
    with h5py.File(dst, "w") as f:
        values = f.create_group("value")
        for i, (_, value) in enumerate(read_h5(str(src))):
            values.create_dataset(str(i), data=value, dtype=ONERT_TYPES[value.dtype.name])


@pytest.fixture(params=["Net_Conv_Add_Mul_000", "Foundation_ReduceMax_Bool_000"])
def made(request, tmp_path):
    """A model (float32, or bool in and out), its inputs and outputs as bnfold writes them."""
    model = build_recipe(request.param, tmp_path)
    api.run(model, str(tmp_path / "exp.h5"), write_input=str(tmp_path / "in.h5"))
    return str(model), tmp_path


def test_gen_golden_and_onert_run_files_are_read_as_their_numbers(made, capsys):
    model, d = made
    as_gen_golden(d / "in.h5", d / "in_be.h5")
    as_gen_golden(d / "exp.h5", d / "exp_be.h5")
    as_onert_run(d / "exp.h5", d / "exp_onert.h5")
    with h5py.File(d / "exp_be.h5") as f:
        stored = f["value/0"].dtype
    assert stored in (np.dtype(">f4"), np.dtype("u1"))  # the layout really is ONE's
    for expected in ("exp_be.h5", "exp_onert.h5"):
        assert run(["check", model, "--input", str(d / "in_be.h5"), "--expected", str(d / expected)]) == 0
        assert run(["h5diff", str(d / "exp.h5"), str(d / expected)]) == 0
    capsys.readouterr()
    for _, value in read_h5(str(d / "exp_be.h5")):
        assert value.dtype.isnative
    run(["run", model, "--input", str(d / "in_be.h5"), "--output", str(d / "again.h5")])
    with h5py.File(d / "again.h5") as f:  # what bnfold writes stays native
        assert f["value/0"].dtype.isnative


def test_h5diff_matches_named_values_by_name_and_a_name_without_partner_differs(tmp_path, capsys):
    a, b = np.arange(4, dtype=np.float32), np.ones(3, dtype=np.float32)
    write_h5(str(tmp_path / "a.h5"), [("x", a), ("y", b)])
    write_h5(str(tmp_path / "swapped.h5"), [("y", b), ("x", a)])
    write_h5(str(tmp_path / "other.h5"), [("x", a), ("z", b)])
    assert run(["h5diff", str(tmp_path / "a.h5"), str(tmp_path / "swapped.h5")]) == 0
    capsys.readouterr()
    assert run(["h5diff", str(tmp_path / "a.h5"), str(tmp_path / "other.h5")]) == 1
    out = capsys.readouterr().out
    assert f"FAIL (only in {tmp_path / 'a.h5'})" in out and f"FAIL (only in {tmp_path / 'other.h5'})" in out
    assert run(["h5diff", str(tmp_path / "a.h5"), str(tmp_path / "other.h5"), "--by-position"]) == 0
    result = api.h5diff(str(tmp_path / "a.h5"), str(tmp_path / "other.h5"))
    assert [o.name for o in result.failing] == ["y:0", "z:0"]


def test_an_input_file_naming_another_models_inputs_is_refused_naming_both(tmp_path, capsys):
    model = str(build_recipe("Net_Conv_Add_Mul_000", tmp_path))
    ((name, value),) = read_h5(str(_inputs(model, tmp_path)))
    write_h5(str(tmp_path / "other.h5"), [("someone_else", value)])
    for argv in (["run", model, "--output", str(tmp_path / "o.h5")], ["check", model, model]):
        assert run([*argv, "--input", str(tmp_path / "other.h5")]) == 2
        err = capsys.readouterr().err
        assert err == f"bnfold: error: {tmp_path / 'other.h5'} names 'someone_else:0'; {model}'s inputs are 'ifm'\n"
    with pytest.raises(UsageError, match="names 'someone_else:0'"):
        api.check(model, model, inputs=[str(tmp_path / "other.h5")])
    with h5py.File(tmp_path / "unnamed.h5", "w") as f:  # no /name: by position, as ONE's drivers do
        f.create_group("value").create_dataset("0", data=value)
    assert run(["check", model, model, "--input", str(tmp_path / "unnamed.h5")]) == 0


def test_an_expected_file_naming_other_outputs_is_refused(tmp_path, capsys):
    model = str(build_recipe("Net_Conv_Add_Mul_000", tmp_path))
    inputs = _inputs(model, tmp_path)
    api.run(model, str(tmp_path / "exp.h5"), inputs=[str(inputs)])
    ((_, value),) = read_h5(str(tmp_path / "exp.h5"))
    write_h5(str(tmp_path / "renamed.h5"), [("not_ofm", value)])
    assert run(["check", model, "--input", str(inputs), "--expected", str(tmp_path / "renamed.h5")]) == 2
    assert "names 'not_ofm:0'" in capsys.readouterr().err


def _inputs(model: str, tmp_path):
    path = tmp_path / "in.h5"
    if not path.exists():
        api.run(model, str(tmp_path / "scratch.h5"), write_input=str(path))
    return path
