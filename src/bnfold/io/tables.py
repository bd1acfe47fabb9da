"""Tables read and built without the generated bindings.

schemas/derive_fields.py learns from the bindings, once, where each field of each table sits and
how the generated object-API `Pack` writes it (the order it builds strings, vectors and sub-tables
in, the order and builder call it adds each field with, each scalar's default, each vector's
element size and alignment), and enums' names; the result is one derived module per format
(schema_layout_tflite.py, schema_layout_circle.py) that tests re-derive, so a binding upgrade
cannot go unnoticed. With it this module reads a table into a `Record` and packs a Record with
flatbuffers.Builder into exactly the bytes the object API's Pack writes. A Record looks like the
object API's object for the same table (class name "TensorT", the same fields, values and
defaults), so the writer packs either kind, one inside the other, and io/transcode.py converts
either kind. The bindings themselves (17-23 ms to import) are left to the tables that hold
something the IR does not model (io/reader.py).
"""

from __future__ import annotations

import importlib
import struct
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from flatbuffers import Builder

# The schema's scalar types as flatbuffers' number_types has them (each one's struct format; its
# numpy type is its name in lower case), written here so that reading a model does not import
# flatbuffers (3 ms), which only packing needs; tests/test_plain_path.py compares the two
SCALAR_FORMATS = {
    "Bool": "?",
    "Uint8": "<B",
    "Int8": "<b",
    "Uint16": "<H",
    "Int16": "<h",
    "Uint32": "<I",
    "Int32": "<i",
    "Uint64": "<Q",
    "Int64": "<q",
    "Float32": "<f",
    "Float64": "<d",
}

SCALAR, STRING, VECTOR, STRINGS, TABLE, TABLES, UNION = range(7)
_I32 = struct.Struct("<i").unpack_from
_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from


class Field:
    """One field of a table: `name` (the object API's), `voffset` (its entry in the vtable, in
    bytes), `kind`, and how it is stored: a scalar's struct, default and builder call, a vector's
    numpy dtype, element size, alignment and builder call, a table's or union's name."""

    __slots__ = (
        "name",
        "slot",
        "voffset",
        "kind",
        "arg",
        "default",
        "struct",
        "bounds",
        "dtype",
        "size",
        "align",
        "type",
    )

    def __init__(self, name: str, slot: int, kind: str, type_: str | None, extra):
        self.name, self.slot, self.voffset, self.type = name, slot, 4 + 2 * slot, type_
        self.arg = ""  # TABLE, TABLES, UNION: the table (or union enum) it holds
        self.default = None
        self.struct: struct.Struct | None = None  # SCALAR
        self.dtype: np.dtype | None = None  # VECTOR
        self.size = self.align = 0
        if kind.isdigit():
            if type_ is None:
                raise ValueError(f"field {name}: a scalar without a type")
            self.kind, self.default, self.struct = SCALAR, extra, struct.Struct(SCALAR_FORMATS[type_])
            self.size, self.bounds = self.struct.size, scalar_bounds(type_)
            return
        self.kind = {"s": STRING, "S": STRINGS, "T": TABLE, "V": TABLES, "U": UNION}.get(kind[0], VECTOR)
        if self.kind in (TABLE, TABLES, UNION):
            self.arg = kind[2:]
        if self.kind in (VECTOR, STRINGS, TABLES):
            self.size, self.align = extra
        if self.kind == VECTOR:
            if type_ is None:  # a vector of structs: no table bnfold reads has one
                raise ValueError(f"field {name}: vectors of structs are not supported")
            self.dtype = np.dtype(type_.lower()).newbyteorder("<")


def scalar_bounds(type_: str) -> tuple | None:
    """The values a scalar of `type_` may take when packed (None: any float)."""
    dtype = np.dtype(type_.lower())
    if dtype.kind == "b":
        return (False, True)
    return (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)) if dtype.kind in "iu" else None


class Record:
    """A table's fields under the object API's names, read or built without the bindings; its
    subclasses (one per table, named like the object API's: "TensorT") know their `table`."""

    table: Table

    if TYPE_CHECKING:  # the fields are the schema's, set per table at run time

        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self):
        self.__dict__.update(self.table.defaults)

    def Pack(self, builder: Builder) -> int:
        return pack(self, builder)

    def __copy__(self) -> Record:
        copied = self.__class__.__new__(self.__class__)
        copied.__dict__.update(self.__dict__)
        return copied


class Table:
    """One table's layout, and its Record class."""

    def __init__(self, layout: Layout, name: str, spec: dict):
        self.layout, self.name, self.slots = layout, name, spec["slots"]
        self.fields = [Field(*f) for f in spec["fields"]]  # in the order Pack adds them
        self.by_name = {f.name: f for f in self.fields}
        self.by_slot = {f.slot: f for f in self.fields}
        self.children = [self.by_name[n] for n in spec["children"]]  # in the order Pack builds them
        self.defaults = {f.name: f.default for f in self.fields}
        self.record: type[Record] = type(name + "T", (Record,), {"table": self})


class Layout:
    """Every table's layout and the enums of one format (Format.layout)."""

    def __init__(self, spec: dict):
        self.enums: dict[str, dict[str, int]] = spec["enums"]
        self._specs = spec["tables"]
        self._tables: dict[str, Table] = {}

    def table(self, name: str) -> Table:
        found = self._tables.get(name)
        if found is None:
            found = self._tables[name] = Table(self, name, self._specs[name])
        return found

    def has_table(self, name: str) -> bool:
        return name in self._specs

    def kinds(self, name: str) -> str | None:
        """The kind of each vtable slot of table `name` ("-" for a slot no field holds: deprecated),
        as io/validate.py reads them; None for a table with no fields (or none of that name)."""
        spec = self._specs.get(name)
        if not spec or not spec["fields"]:
            return None
        by_slot = {slot: kind for _, slot, kind, _, _ in spec["fields"]}
        return " ".join(by_slot.get(slot, "-") for slot in range(spec["slots"]))

    def table_names(self) -> list[str]:
        return list(self._specs)

    @cached_property
    def members(self) -> dict[str, dict[int, str]]:
        """{union enum: {type code: member table}}, without NONE."""
        return {
            enum: {code: name for name, code in self.enums[enum].items() if code}
            for enum in ("BuiltinOptions", "BuiltinOptions2", "QuantizationDetails", "SparseIndexVector")
            if enum in self.enums
        }


@cache
def layout(format_name: str) -> Layout:
    # a Python module per format (schemas/derive_fields.py writes them): its cached bytecode loads
    # in ~1 ms, where importing json and parsing the same data took ~4 ms of every run
    return Layout(importlib.import_module(f"{__package__}.schema_layout_{format_name}").LAYOUT)


def unpack(table: Table, buf, pos: int, skip: frozenset[str] = frozenset()) -> Record:
    """The Record of the table at `pos`: what the object API's InitFromObj makes of it (numpy
    views for scalar vectors, bytes for strings, None for what is absent). Fields in `skip` are
    left at their default (the caller reads them its own way)."""
    record = table.record.__new__(table.record)
    values = record.__dict__
    values.update(table.defaults)
    vtable = pos - _I32(buf, pos)[0]
    size = _U16(buf, vtable)[0]
    for f in table.fields:
        if f.voffset >= size:
            continue
        off = _U16(buf, vtable + f.voffset)[0]
        if not off or f.name in skip:
            continue
        at = pos + off
        if f.kind == SCALAR:
            assert f.struct is not None  # every SCALAR field has one (Field)
            values[f.name] = f.struct.unpack_from(buf, at)[0]
            continue
        target = at + _U32(buf, at)[0]
        if f.kind == STRING:
            values[f.name] = _string(buf, target)
        elif f.kind == VECTOR:
            values[f.name] = np.frombuffer(buf, f.dtype, _U32(buf, target)[0], target + 4)
        elif f.kind == TABLE:
            values[f.name] = unpack(table.layout.table(f.arg), buf, target)
        elif f.kind == UNION:
            member = table.layout.members[f.arg].get(values[table.by_slot[f.slot - 1].name])
            values[f.name] = None if member is None else unpack(table.layout.table(member), buf, target)
        else:
            items = [target + 4 + 4 * i for i in range(_U32(buf, target)[0])]
            items = [at + _U32(buf, at)[0] for at in items]
            if f.kind == STRINGS:
                values[f.name] = [_string(buf, at) for at in items]
            else:
                member_table = table.layout.table(f.arg)
                values[f.name] = [unpack(member_table, buf, at) for at in items]
    return record


def _string(buf, at: int) -> bytes:
    return bytes(buf[at + 4 : at + 4 + _U32(buf, at)[0]])


def pack(record: Record, builder: Builder) -> int:
    """Write `record` as the object API's Pack would write the same values, byte for byte."""
    table, values = record.table, record.__dict__
    offsets = {}
    for f in table.children:
        value = values[f.name]
        if value is not None:
            offsets[f.name] = _child(f, value, builder)
    builder.StartObject(table.slots)
    for f in table.fields:
        if f.kind == SCALAR:
            assert f.struct is not None  # every SCALAR field has one (Field)
            value = values[f.name]
            if value != f.default or builder.forceDefaults:
                if f.bounds is not None and not f.bounds[0] <= value <= f.bounds[1]:
                    raise TypeError(f"bad number {value} for type {f.struct.format}")  # as Builder.PrependSlot
                _place_scalar(builder, f.slot, f.struct, f.size, value)
        elif f.name in offsets:
            builder.PrependUOffsetTRelativeSlot(f.slot, offsets[f.name], 0)
    return builder.EndObject()


def _child(f: Field, value, builder: Builder) -> int:
    """A string, vector or sub-table, built before its table as the generated Pack builds it."""
    if f.kind == STRING:
        return builder.CreateString(value)
    if f.kind == TABLE or f.kind == UNION:
        return value.Pack(builder)
    if f.kind == VECTOR:
        if type(value) is np.ndarray:
            return builder.CreateNumpyVector(value)
        from flatbuffers import Builder  # packing only: reading needs no flatbuffers

        prepend = getattr(Builder, f"Prepend{f.type}")
        builder.StartVector(f.size, len(value), f.align)
        for i in reversed(range(len(value))):
            prepend(builder, value[i])
        return builder.EndVector()
    if f.kind == STRINGS:
        items = [builder.CreateString(value[i]) for i in range(len(value))]
    else:
        items = [value[i].Pack(builder) for i in range(len(value))]
    return builder.offset_vector(items)  # as StartVector(4, n, 4), PrependUOffsetTRelative each, EndVector


def _place_scalar(builder: Builder, slot: int, packer: struct.Struct, width: int, value) -> None:
    """Prepend<Type>Slot for a value already known to differ from its default and fit its type."""
    builder.Prep(width, 0)
    head = builder.head - width
    packer.pack_into(builder.Bytes, head, value)
    builder.head = head
    builder.current_vtable[slot] = len(builder.Bytes) - head
