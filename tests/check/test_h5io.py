"""h5 files in ONE's layout: /name string attributes "0", "1", ... and /value datasets "0", "1", ..."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from bnfold.check.h5io import read_h5, write_h5
from bnfold.errors import ModelError, UsageError


def test_layout_is_ones_exactly(tmp_path):
    values = [("serving_default_x:0", np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)),
              ("count", np.array([[7, -3]], dtype=np.int32)),
              ("mask", np.array([True, False, True])),
              ("scalar", np.float32(2.5))]
    path = tmp_path / "input.h5"
    write_h5(str(path), values)
    with h5py.File(path, "r") as f:
        assert sorted(f.keys()) == ["name", "value"]
        assert isinstance(f["name"], h5py.Group) and isinstance(f["value"], h5py.Group)
        assert sorted(f["name"].attrs.keys()) == ["0", "1", "2", "3"]
        assert len(f["name"]) == 0  # names are attributes, not datasets
        assert sorted(f["value"].keys()) == ["0", "1", "2", "3"]
        for i, (name, array) in enumerate(values):
            attr = f["name"].attrs[str(i)]
            assert (attr.decode() if isinstance(attr, bytes) else attr) == name
            ds = f["value"][str(i)]
            assert isinstance(ds, h5py.Dataset)
            assert ds.shape == np.shape(array) and ds.dtype == np.asarray(array).dtype
            assert np.array_equal(ds[()], array)
        assert h5py.check_string_dtype(f["name"].attrs.get_id("0").dtype).length is None  # variable length


def test_round_trip(tmp_path):
    values = [("a", np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)), ("b", np.arange(5, dtype=np.int64))]
    path = str(tmp_path / "x.h5")
    write_h5(path, values)
    back = read_h5(path)
    assert [n for n, _ in back] == ["a", "b"]
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
    with pytest.raises(UsageError, match="file not found"):
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
