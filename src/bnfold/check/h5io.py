"""input.h5 / expected.h5 in ONE's layout (what ONE's test-data generator writes and h5diff reads).

    /name   group; string attributes "0", "1", ... hold the tensor names
    /value  group; datasets "0", "1", ... hold the data, in the tensor's own shape and dtype

One file holds one sample: the values of a subgraph's inputs (or outputs), in order. Names are
written as the tensors are named (ONE's generator appends ":0" to names without a colon; bnfold
keeps them unchanged) and are informational: tensors are matched by position, as ONE does.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ModelError, UsageError


def _string_dtype(text: str):
    import h5py

    return h5py.string_dtype("ascii" if text.isascii() else "utf-8")


def write_h5(path: str, named: list[tuple[str, np.ndarray]]) -> None:
    """Write (name, array) pairs in ONE's layout; atomic (temporary file + rename)."""
    import h5py

    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError("directory does not exist", path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with h5py.File(tmp, "w") as f:
            names, values = f.create_group("name"), f.create_group("value")
            for i, (name, array) in enumerate(named):
                names.attrs.create(str(i), name, dtype=_string_dtype(name))
                values.create_dataset(str(i), data=np.asarray(array))
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise UsageError(f"cannot write: {e.strerror or e}", path) from None


def read_h5(path: str) -> list[tuple[str, np.ndarray]]:
    """(name, array) pairs from a file in ONE's layout, in index order."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise UsageError("file not found", path) from None
    except OSError as e:
        raise ModelError(f"not an HDF5 file ({str(e).splitlines()[0]})", path) from None
    with f:
        if not isinstance(f.get("value"), h5py.Group):
            raise ModelError("not in ONE's layout: no /value group", path)
        values = f["value"]
        names = f["name"].attrs if isinstance(f.get("name"), h5py.Group) else {}
        count = len(values)
        if sorted(values.keys(), key=_index) != [str(i) for i in range(count)]:
            raise ModelError("not in ONE's layout: /value datasets must be named 0, 1, ...", path)
        out = []
        for i in range(count):
            name = names.get(str(i), str(i))
            if isinstance(name, bytes):
                name = name.decode(errors="replace")
            out.append((str(name), np.asarray(values[str(i)][()])))
        return out


def _index(key: str):
    return (0, int(key)) if key.isdigit() else (1, key)
