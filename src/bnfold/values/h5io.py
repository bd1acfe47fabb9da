"""input.h5 / expected.h5 in ONE's layout, exactly as ONE's TestDataGenerator writes them.

    /name   group; attributes "0", "1", ... hold the tensor names: scalar fixed-length ASCII
            strings as long as the name (C_S1, null-terminated padding), ":0" appended to a
            name without a colon
    /value  group; datasets "0", "1", ... hold the data in the tensor's shape and native type
            (uint8, int8, int16, int32, int64, float16, float32, float64; bool as HDF5's native
            bool, an 8-bit unsigned integer)

One such file holds one sample: the values of a subgraph's inputs (or outputs), in order.
Reading also accepts variable-length /name strings (what bnfold wrote before, and ONE's
gen_golden.py), files without /name (onert_run's dumps), h5py's enum bools, and ONE's
record-minmax layout, several samples in one file:

    /value/<record>/<input>   datasets; records "0", "1", ..., inputs "0", "1", ... in each

Values are read as their numbers in native byte order, whatever order the file stores
(gen_golden.py writes float32 as big-endian `>f4`, onert_run IEEE_F32BE); bool stored as `u1`
0/1 is a uint8 here and read as bool where a model wants bool (values/diff.py). Files bnfold
writes are native.

A file names its values when /name has an attribute for every value (`has_names`); then values
are matched to a model's tensors, or to another file's values, by name (":0" ignored), and a
name without a partner is refused or is a difference (values/diff.py: match_names); a file
without names is matched by position, as ONE's drivers do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numpy as np

from ..errors import ModelError, UsageError
from ..io.atomic import atomic_file
from ..io.paths import open_input

Named = list[tuple[str, np.ndarray]]


def ones_name(name: str) -> str:
    """The name as TestDataGenerator writes it: ":0" appended when it has no colon."""
    return name if ":" in name else f"{name}:0"


def write_h5(path: str, named: Named) -> None:
    """Write (name, array) pairs in ONE's layout, atomically (io/atomic.py). The HDF5 file is
    made in memory and written as bytes: a write that fails (full disk, file-size limit) then
    fails in Python, where atomic.py cleans up, and not inside HDF5, which crashes when it
    closes a file whose write failed (h5py 3.16, HDF5 2.0: a segmentation fault)."""
    import h5py

    with h5py.File(os.path.basename(path) or "out.h5", "w", driver="core", backing_store=False) as f:
        names, values = f.create_group("name"), f.create_group("value")
        for i, (name, array) in enumerate(named):
            _write_name(names, str(i), ones_name(name))
            _write_value(values, str(i), np.asarray(array))
        f.flush()
        image = f.id.get_file_image()
    with atomic_file(path, "wb", UsageError) as out:
        out.write(image)


def _write_name(group, key: str, name: str) -> None:
    """A scalar fixed-length string attribute of exactly the name's bytes (H5T_C_S1 sized to it)."""
    import h5py

    data = name.encode("utf-8")
    string = h5py.h5t.C_S1.copy()
    string.set_size(max(len(data), 1))
    if not name.isascii():
        string.set_cset(h5py.h5t.CSET_UTF8)
    attr = h5py.h5a.create(group.id, key.encode(), string, h5py.h5s.create(h5py.h5s.SCALAR))
    attr.write(np.array(data, dtype=f"S{max(len(data), 1)}"), mtype=string)


def _write_value(group, key: str, array: np.ndarray) -> None:
    """A dataset of the array's native type; bool as native hbool (uint8 0/1), as ONE writes it."""
    if array.dtype == np.bool_:
        array = array.astype(np.uint8)
    group.create_dataset(key, data=array)


@contextlib.contextmanager
def _open(path: str):
    import h5py

    with open_input(path, "an h5 file") as raw:
        try:
            f = h5py.File(raw, "r")
        except OSError as e:
            raise ModelError(f"not an HDF5 file ({str(e).splitlines()[0]})", path) from None
        with f:
            yield f


def _numbered(group, path: str, where: str) -> list[str]:
    """Keys of `group` that must be "0", "1", ..., in index order."""
    keys = sorted(group.keys(), key=lambda k: (0, int(k)) if k.isdigit() else (1, k))
    if keys != [str(i) for i in range(len(keys))]:
        raise ModelError(f"not in ONE's layout: {where} members must be named 0, 1, ...", path)
    return keys


def _read_array(node, path: str, where: str) -> np.ndarray:
    import h5py

    if not isinstance(node, h5py.Dataset):
        raise ModelError(f"not in ONE's layout: {where} is not a dataset", path)
    try:
        value = node[()]
    except (OSError, TypeError, ValueError) as e:
        raise ModelError(f"cannot read {where}: {str(e).splitlines()[0]}", path) from None
    value = np.asarray(value)
    if value.dtype.kind == "O":  # variable-length strings
        value = value.astype(str)
    if not value.dtype.isnative:  # ONE's gen_golden.py and onert_run store float32 big-endian
        value = value.astype(value.dtype.newbyteorder("="))
    return value


def _name(names, key: str) -> str:
    value = names.get(key, key)
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0] if value.size else key
    if isinstance(value, bytes):
        value = value.decode(errors="replace").rstrip("\0")
    return str(value)


def _layout(f, path: str) -> str:
    """ "one" (one sample) or "records" (record-minmax: /value/<record>/<input>)."""
    import h5py

    values = f.get("value")
    if not isinstance(values, h5py.Group):
        raise ModelError("not in ONE's layout: no /value group", path)
    members = [values.get(k) for k in values.keys()]
    if members and all(isinstance(m, h5py.Group) for m in members):
        return "records"
    if all(isinstance(m, h5py.Dataset) for m in members):
        return "one"
    raise ModelError("not in ONE's layout: /value mixes groups and datasets", path)


def read_h5(path: str) -> Named:
    """(name, array) pairs from a one-sample file in ONE's layout, in index order."""
    samples = list(read_samples(path))
    if len(samples) != 1:
        raise ModelError(f"holds {len(samples)} samples (record-minmax layout); one expected", path)
    return samples[0]


def read_samples(path: str) -> Iterator[Named]:
    """Every sample of a file, one at a time: one for ONE's layout, one per record for
    record-minmax files (named by position: that layout has no /name)."""
    import h5py

    with _open(path) as f:
        layout = _layout(f, path)
        values = f["value"]
        if layout == "one":
            names = f["name"].attrs if isinstance(f.get("name"), h5py.Group) else {}
            yield [
                (_name(names, k), _read_array(values[k], path, f"/value/{k}"))
                for k in _numbered(values, path, "/value")
            ]
            return
        for record in _numbered(values, path, "/value"):
            group = values[record]
            where = f"/value/{record}"
            yield [(k, _read_array(group[k], path, f"{where}/{k}")) for k in _numbered(group, path, where)]


def has_names(path: str) -> bool:
    """Whether the file names its values: ONE's one-sample layout with a /name attribute for every
    /value member (record-minmax files and onert_run's dumps have none)."""
    import h5py

    with _open(path) as f:
        names = f.get("name")
        if _layout(f, path) != "one" or not isinstance(names, h5py.Group):
            return False
        return all(key in names.attrs for key in f["value"].keys())


def count_samples(path: str) -> int:
    """How many samples read_samples(path) yields, without reading the data."""
    with _open(path) as f:
        return len(f["value"]) if _layout(f, path) == "records" else 1
