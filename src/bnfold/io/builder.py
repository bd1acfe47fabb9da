"""flatbuffers.Builder with its hot paths in fewer Python calls, writing the same bytes.

Packing a model's tables is a few hundred thousand builder calls on a big graph, and the
package's Builder spends most of its time in layers of small methods (Prep -> Pad, Prepend ->
Place -> enforce_number -> encode.Write, one PrependVOffsetT per vtable entry). This subclass
does the same steps with the same results (alignment, padding, growth, vtable sharing, range
checks) in fewer calls; everything else, and the object API's own Pack, runs the inherited code
on the same state. tests/test_plain_path.py packs models with both and compares the bytes.
"""

from __future__ import annotations

import struct

import numpy as np
from flatbuffers import builder as fb

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_ZEROS = bytes(16)


class Builder(fb.Builder):
    # The state fb.Builder keeps (flatbuffers has no types), as this subclass uses it.
    Bytes: bytearray
    head: int
    minalign: int
    nested: bool
    objectEnd: int
    vectorNumElems: int | None  # while a vector is open
    current_vtable: list[int] | None  # while a table is open
    vtables: dict[tuple[int, ...], int]

    def Prep(self, size: int, additional_bytes: int) -> None:
        if size > self.minalign:
            self.minalign = size
        head = self.head
        align = (head - len(self.Bytes) - additional_bytes) & (size - 1)
        needed = align + size + additional_bytes
        while head < needed:
            old = len(self.Bytes)
            self.GrowByteBuffer()
            head += len(self.Bytes) - old
        if align:
            self.Bytes[head - align : head] = _ZEROS[:align] if align <= 16 else bytes(align)
            head -= align
        self.head = head

    def StartObject(self, numfields: int) -> None:
        if self.nested:
            raise fb.IsNestedError()
        self.current_vtable = [0] * numfields
        self.objectEnd = len(self.Bytes) - self.head
        self.nested = True

    def StartVector(self, elemSize: int, numElems: int, alignment: int) -> int:
        if self.nested:
            raise fb.IsNestedError()
        self.nested = True
        self.vectorNumElems = numElems
        self.Prep(4, elemSize * numElems)
        self.Prep(alignment, elemSize * numElems)
        return len(self.Bytes) - self.head

    def PrependUOffsetTRelative(self, off: int) -> None:
        self.Prep(4, 0)
        offset = len(self.Bytes) - self.head
        if off > offset:
            raise fb.OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
        self.head -= 4
        _U32.pack_into(self.Bytes, self.head, offset - off + 4)

    def PrependUOffsetTRelativeSlot(self, slot: int, off: int, default: int) -> None:
        if off != default or self.forceDefaults:
            self.PrependUOffsetTRelative(off)
            assert self.current_vtable is not None  # a slot is only set in an open table
            self.current_vtable[slot] = len(self.Bytes) - self.head

    def CreateString(self, s, encoding: str = "utf-8", errors: str = "strict") -> int:
        if self.nested:
            raise fb.IsNestedError()
        if isinstance(s, str):
            s = s.encode(encoding, errors)
        elif not isinstance(s, (bytes, bytearray)):
            raise TypeError("non-string passed to CreateString")
        n = len(s)
        self.Prep(4, n + 1)
        head = self.head - n - 1
        self.Bytes[head : head + n + 1] = s + b"\0"  # the bytes and their NUL
        head -= 4
        _U32.pack_into(self.Bytes, head, n)
        self.head = head
        return len(self.Bytes) - head

    def CreateNumpyVector(self, x) -> int:
        if not isinstance(x, np.ndarray) or x.dtype.kind not in "biuf" or x.ndim > 1:
            return super().CreateNumpyVector(x)  # its refusal
        payload = (x if x.dtype.str[0] == "<" else x.byteswap()).tobytes()
        self.StartVector(x.itemsize, x.size, x.dtype.alignment)
        head = self.head - len(payload)
        self.Bytes[head : self.head] = payload
        self.head = head
        self.vectorNumElems = x.size
        return self.EndVector()

    def offset_vector(self, offsets: list[int]) -> int:
        """A vector of uoffsets to `offsets` (tables or strings written before), as StartVector,
        PrependUOffsetTRelative for each from the last and EndVector write it."""
        n = len(offsets)
        self.StartVector(4, n, 4)
        end, head = len(self.Bytes), self.head
        if any(off > end - head + 4 * i for i, off in enumerate(reversed(offsets))):
            raise fb.OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
        start = head - 4 * n
        struct.pack_into(f"<{n}I", self.Bytes, start, *[end - start - 4 * i - off for i, off in enumerate(offsets)])
        self.head = start
        return self.EndVector()

    def EndVector(self, numElems=None) -> int:
        if numElems is not None:
            return super().EndVector(numElems)
        if not self.nested:
            raise fb.IsNotNestedError()
        self.nested = False
        self.head -= 4
        _U32.pack_into(self.Bytes, self.head, self.vectorNumElems)
        self.vectorNumElems = None
        return len(self.Bytes) - self.head

    def EndObject(self) -> int:
        """The table's vtable, shared with an equal one written before (as WriteVtable does)."""
        if not self.nested:
            raise fb.IsNotNestedError()
        self.nested = False
        self.Prep(4, 0)
        self.head -= 4  # the offset to the vtable, written below
        object_offset = len(self.Bytes) - self.head
        entries = self.current_vtable
        assert entries is not None  # nested: StartObject made it
        used = len(entries)
        while used and not entries[used - 1]:
            used -= 1
        fields = [object_offset - e if e else 0 for e in entries[:used]]
        object_size = object_offset - self.objectEnd
        key = (*reversed(fields), object_size)
        found = self.vtables.get(key)
        if found is None:
            size = 2 * (used + 2)
            self.Prep(2, size - 2)
            head = self.head - size
            struct.pack_into(f"<{used + 2}H", self.Bytes, head, size, object_size, *fields)
            self.head = head
            found = self.vtables[key] = len(self.Bytes) - head
        _I32.pack_into(self.Bytes, len(self.Bytes) - object_offset, found - object_offset)
        self.current_vtable = None
        return object_offset
