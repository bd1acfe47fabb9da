"""h5 files in ONE's layout: /name string attributes "0", "1", ... and /value datasets "0", "1", ..."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from bnfold.errors import ModelError, UsageError
from bnfold.values.h5io import read_h5, write_h5


def test_layout_is_what_ones_test_data_generator_writes(tmp_path):
    values = [
        ("serving_default_x:0", np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)),
        ("count", np.array([[7, -3]], dtype=np.int32)),
        ("mask", np.array([True, False, True])),
        ("scalar", np.float32(2.5)),
    ]
    path = tmp_path / "input.h5"
    write_h5(str(path), values)
    with h5py.File(path, "r") as f:
        assert sorted(f.keys()) == ["name", "value"]
        assert isinstance(f["name"], h5py.Group) and isinstance(f["value"], h5py.Group)
        assert sorted(f["name"].attrs.keys()) == ["0", "1", "2", "3"]
        assert len(f["name"]) == 0  # names are attributes, not datasets
        assert sorted(f["value"].keys()) == ["0", "1", "2", "3"]
        for i, (name, array) in enumerate(values):
            want = name if ":" in name else name + ":0"  # TestDataGenerator appends ":0"
            attr = f["name"].attrs.get_id(str(i))
            string = attr.get_type()
            assert isinstance(string, h5py.h5t.TypeStringID) and not string.is_variable_str()
            assert string.get_size() == len(want) and string.get_cset() == h5py.h5t.CSET_ASCII
            assert string.get_strpad() == h5py.h5t.STR_NULLTERM and attr.shape == ()  # H5T_C_S1, scalar
            assert f["name"].attrs[str(i)] == want.encode()
            ds = f["value"][str(i)]
            assert isinstance(ds, h5py.Dataset) and ds.shape == np.shape(array)
            native = np.uint8 if np.asarray(array).dtype == np.bool_ else np.asarray(array).dtype  # hbool
            assert ds.dtype == native and np.array_equal(ds[()], np.asarray(array).astype(native))


def test_reads_names_of_every_layout_and_record_minmax_samples(tmp_path):
    from bnfold.values.h5io import count_samples, read_samples

    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:  # bnfold's earlier layout: variable-length UTF-8 names
        f.create_group("name").attrs.create("0", "x", dtype=h5py.string_dtype("utf-8"))
        f.create_group("value").create_dataset("0", data=np.ones(2, np.float32))
    assert read_h5(str(path))[0][0] == "x"
    records = tmp_path / "minmax.h5"
    with h5py.File(records, "w") as f:  # record-minmax: /value/<record>/<input>
        for r in range(3):
            g = f.create_group(f"value/{r}")
            g.create_dataset("0", data=np.full((2,), r, np.float32))
            g.create_dataset("1", data=np.full((1,), 10 * r, np.int32))
    assert count_samples(str(records)) == 3
    samples = list(read_samples(str(records)))
    assert [[v.tolist() for _, v in s] for s in samples] == [[[r, r], [10 * r]] for r in range(3)]
    with pytest.raises(ModelError, match="3 samples"):
        read_h5(str(records))


def test_round_trip(tmp_path):
    values = [
        ("a", np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)),
        ("b", np.arange(5, dtype=np.int64)),
    ]
    path = str(tmp_path / "x.h5")
    write_h5(path, values)
    back = read_h5(path)
    assert [n for n, _ in back] == ["a:0", "b:0"]  # as ONE names them
    for (_, want), (_, got) in zip(values, back):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_reads_a_file_written_by_another_tool(tmp_path):
    path = tmp_path / "one.h5"
    with h5py.File(path, "w") as f:  # the way ONE's generator writes it: fixed order, ":0" names
        names, values = f.create_group("name"), f.create_group("value")
        for i in (1, 0):
            names.attrs[str(i)] = f"t{i}:0"
            values.create_dataset(str(i), data=np.full((2,), i, np.float32))
    back = read_h5(str(path))
    assert [n for n, _ in back] == ["t0:0", "t1:0"]
    assert [v.tolist() for _, v in back] == [[0, 0], [1, 1]]


def test_errors_are_one_line(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        read_h5(str(tmp_path / "missing.h5"))
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(ModelError, match="not an HDF5 file"):
        read_h5(str(tmp_path / "text.h5"))
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.create_dataset("data", data=np.zeros(3))
    with pytest.raises(ModelError, match="no /value group"):
        read_h5(str(tmp_path / "other.h5"))
    with h5py.File(tmp_path / "gap.h5", "w") as f:
        f.create_group("value").create_dataset("1", data=np.zeros(3))
    with pytest.raises(ModelError, match="named 0, 1"):
        read_h5(str(tmp_path / "gap.h5"))
    with h5py.File(tmp_path / "mixed.h5", "w") as f:
        f.create_group("value/0")
        f["value"].create_dataset("1", data=np.zeros(3))
    with pytest.raises(ModelError, match="mixes groups and datasets"):
        read_h5(str(tmp_path / "mixed.h5"))
