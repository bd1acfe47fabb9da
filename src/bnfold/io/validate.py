"""Checks run on a file before anything trusts its offsets.

Python's flatbuffers package has no verifier, so the reader relies on the generated code raising
on out-of-range reads; these checks catch what it would not (see docs/design.md).
"""

from __future__ import annotations

import struct

from ..errors import ModelError


def validate(data, fmt, path: str) -> None:
    size = len(data)
    (root,) = struct.unpack_from("<I", data, 0)
    if root < 8 or root + 4 > size:
        raise ModelError(f"root table offset {root} is outside the file ({size} bytes); the file is truncated or not a flatbuffer", path)
