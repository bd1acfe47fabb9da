"""Constant data: buffers that stay zero-copy views of the input until something replaces them.

A `Buffer` never changes its bytes. A pass that wants different weights assigns a new array to a
tensor (`Tensor.data = ...`), which gives that tensor a fresh Buffer; every other tensor that
referenced the old Buffer keeps it. That is the whole copy-on-write rule, and it is why a shared
filter can never be corrupted by a fold.
"""

from __future__ import annotations

import numpy as np

# TensorType name -> numpy dtype, for the types whose bytes numpy can interpret directly.
NUMPY_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(kind)
    for name, kind in {
        "FLOAT32": "<f4",
        "FLOAT16": "<f2",
        "FLOAT64": "<f8",
        "INT8": "i1",
        "INT16": "<i2",
        "INT32": "<i4",
        "INT64": "<i8",
        "UINT8": "u1",
        "UINT16": "<u2",
        "UINT32": "<u4",
        "UINT64": "<u8",
        "BOOL": "?",
        "COMPLEX64": "<c8",
        "COMPLEX128": "<c16",
    }.items()
}


class Buffer:
    """Raw bytes of one flatbuffer Buffer entry.

    `data` is a 1-D uint8 array (often a read-only view of the memory-mapped input) or None
    when the entry has no data vector at all. `source` is the byte offset of that data in the
    input file while the bytes are the input's own, which lets the writer copy them file to file
    without touching them in Python.
    """

    __slots__ = ("data", "source")

    def __init__(self, data: np.ndarray | None = None, source: int | None = None):
        self.data = data
        self.source = source

    @classmethod
    def from_array(cls, array: np.ndarray) -> Buffer:
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        raw.flags.writeable = False
        return cls(raw)

    @property
    def nbytes(self) -> int:
        return 0 if self.data is None else int(self.data.size)

    def __repr__(self) -> str:
        where = f" @{self.source}" if self.source is not None else ""
        return f"Buffer({self.nbytes} bytes{where})"
