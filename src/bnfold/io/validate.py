"""Checks run on a model file before and after anything trusts it.

Python's flatbuffers package has no verifier: the generated accessors add whatever offset the file
holds and read there, so a corrupt file makes them read garbage (strings are silently truncated),
raise deep inside the bindings, or allocate out of all proportion to the file. `validate(data,
fmt, path)` runs before anything reads the tables and does the flatbuffers Verifier's job; what is
well-formed as a flatbuffer but not as a model is checked after lifting, by ir/invariants.py.

Every table the reader can reach from the root (Model, OperatorCode, SubGraph, Tensor,
quantization, sparsity, Operator and every builtin-options table, Buffer, Metadata, SignatureDef,
TensorMap) has its vtable, inline fields, strings, vectors and sub-table offsets bounds-checked
against the file. The walk is iterative (an explicit stack; the schema has no recursive tables
anyway) and its work is bounded: every table visited counts 4 bytes and every vector or string its
length, and a legitimate file, whose objects do not overlap, cannot describe more bytes than it
has. A file that does (offsets shared or aimed at each other to multiply the work) is rejected as
an absurd structure before anything is allocated.

The field tables say what each vtable slot of each table holds, per format; they are read from the
tables' layouts (derived modules, io/schema_layout_<format>.py, read by io/tables.py), which schemas/derive_fields.py
derives from the generated bindings and tests re-derive, so a binding upgrade that changes the
schema cannot go unnoticed. Kinds: "1"/"2"/"4"/"8" a
scalar of that many bytes, "s" a string, "vN" a vector of N-byte elements (scalars or structs), "S"
a vector of strings, "T:X" a table X, "V:X" a vector of tables X, "U:E" a union of enum E (its type
is the slot before), "-" a deprecated slot nothing reads. Tables with no fields are left out: they
are checked structurally (vtable and inline size) like every other table. A field past the slots
the binding knows, or a union member it does not know, is refused: the object API would not read
it, so a rewrite would silently drop it.
"""

from __future__ import annotations

import struct
from functools import cache

from ..errors import ModelError
from .tables import SCALAR, STRING, STRINGS, TABLE, TABLES, UNION, VECTOR, layout

SLACK = 1024  # bytes of structure allowed beyond the file size before a file counts as absurd

_EXTRA, _OUTSIDE = 7, 8  # what a vtable alone shows wrong (_shape), beside io/tables.py's kinds (0 to 6)
_U8 = struct.Struct("<B").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_VT_HEAD = struct.Struct("<HH").unpack_from


class _Malformed(Exception):
    """Raised inside the walk; turned into one ModelError by validate()."""


class _Unknown(_Malformed):
    """Sound, but holding a field or union member the binding does not know."""


def _compile(spec: str) -> tuple:
    """(slot, kind, inline width, argument) for each slot a spec string describes, by slot."""
    fields: list[tuple[int, int, int, object]] = []  # the argument: a width, a table name, or None
    for slot, token in enumerate(spec.split()):
        if token == "-":
            continue
        if token.isdigit():
            fields.append((slot, SCALAR, int(token), None))
        elif token == "s":
            fields.append((slot, STRING, 4, None))
        elif token == "S":
            fields.append((slot, STRINGS, 4, None))
        elif token[0] == "v":
            fields.append((slot, VECTOR, 4, int(token[1:])))
        else:
            kind = {"T": TABLE, "V": TABLES, "U": UNION}[token[0]]
            fields.append((slot, kind, 4, token[2:]))
    return tuple(fields)


def field_tables() -> dict[str, dict[str, str]]:
    """{format name: {table: slot kinds}} for the tables that have fields, as derived from the
    bindings bnfold pins (schemas/derive_fields.py compares them with the installed ones)."""
    return {
        name: {t: k for t in layout(name).table_names() if (k := layout(name).kinds(t)) is not None}
        for name in ("tflite", "circle")
    }


@cache
def _known(fmt_name: str, table: str) -> tuple[int, tuple]:
    """The number of slots the binding knows in `table` and its compiled fields (compiled when a
    file first holds such a table: a model uses a few of the schema's ~100 tables)."""
    spec = layout(fmt_name).kinds(table)
    return (0, ()) if spec is None else (len(spec.split()), _compile(spec))


def validate(data, fmt, path: str) -> None:
    """Bounds-check the whole reachable structure of a flatbuffer; raise ModelError if it is not sound."""
    size = len(data)
    (root,) = _U32(data, 0)
    if root < 8 or root + 4 > size:
        raise ModelError(
            f"root table offset {root} is outside the file ({size} bytes); the file is truncated or not a flatbuffer",
            path,
        )
    try:
        _walk(data, size, root, fmt.name, fmt.layout.members)
    except _Unknown as e:
        from importlib import metadata  # only for this message: ~30 ms to import

        binding = f"{fmt.binding} {metadata.version(fmt.binding)}"
        raise ModelError(
            f"{e}, newer than the {fmt.name} schema bnfold reads ({binding}); a rewrite would drop it", path
        ) from None
    except _Malformed as e:
        raise ModelError(f"malformed {fmt.name} flatbuffer: {e}", path) from None


def _walk(buf, size: int, root: int, fmt_name: str, unions: dict) -> None:
    """Visit every table reachable from the root, iteratively, within a work budget of the file size."""
    budget = size + SLACK
    shapes: dict[tuple[int, str], tuple[int, tuple]] = {}
    stack = [(root, "Model")]
    while stack:
        pos, name = stack.pop()
        budget -= 4
        if budget < 0:
            raise _Malformed(
                "absurd structure: it describes more data than the file holds (shared or overlapping offsets)"
            )
        if pos + 4 > size:
            raise _Malformed(f"{name} at byte {pos} is outside the file")
        vt = pos - _I32(buf, pos)[0]
        shape = shapes.get((vt, name))
        if shape is None:
            shape = shapes[vt, name] = _shape(buf, size, pos, vt, name, _known(fmt_name, name))
        inline, checks = shape
        if inline < 4 or pos + inline > size:
            raise _Malformed(f"{name} at byte {pos} has an inline size ({inline}) outside the file")
        for slot, off, kind, arg in checks:
            if kind == _EXTRA:
                raise _Unknown(f"{name} at byte {pos} has field {slot}")
            if kind == _OUTSIDE:
                raise _Malformed(f"{name} at byte {pos}: field {slot} lies outside the table")
            at = pos + off
            target = at + _U32(buf, at)[0]
            if target + 4 > size:
                raise _Malformed(f"{name} at byte {pos}: field {slot} points outside the file ({target})")
            if kind == TABLE:
                stack.append((target, arg))
            elif kind == UNION:
                enum, type_off = arg
                code = _U8(buf, pos + type_off)[0] if type_off else 0
                member = unions[enum].get(code)
                if member is not None:
                    stack.append((target, member))
                elif code:
                    raise _Unknown(f"{name} at byte {pos} has a {enum} of type {code}")
            else:
                count = _U32(buf, target)[0]
                item = arg if kind == VECTOR else 1 if kind == STRING else 4
                end = target + 4 + count * item
                if end > size:
                    raise _Malformed(
                        f"{name} at byte {pos}: field {slot} ({count} elements) runs past the end of the file"
                    )
                budget -= 4 + count * item
                if kind == TABLES or kind == STRINGS:
                    _elements(buf, size, target, count, kind, arg, stack)
    return None


def _shape(buf, size: int, pos: int, vt: int, name: str, known: tuple[int, tuple]) -> tuple[int, tuple]:
    """What every table of kind `name` with the vtable at `vt` needs checked, worked out once per
    vtable (tables of one shape share it): its inline size, and in slot order (slot, offset in the
    table, kind, argument) of each present field that points elsewhere. What the vtable alone shows
    wrong (a field the binding does not know, a field outside the inline size) is a check of kind
    _EXTRA or _OUTSIDE, raised in its turn like the others."""
    if vt < 0 or vt + 4 > size or vt & 1:
        raise _Malformed(f"{name} at byte {pos} has its vtable outside the file ({vt})")
    vt_size, inline = _VT_HEAD(buf, vt)
    if vt_size < 4 or vt_size & 1 or vt + vt_size > size:
        raise _Malformed(f"{name} at byte {pos} has a corrupt vtable (size {vt_size})")
    slots = struct.unpack_from(f"<{(vt_size - 4) // 2}H", buf, vt + 4)
    nslots = len(slots)
    n_known, fields = known
    checks: list[tuple[int, int, int, object]] = []
    extra = next((s for s in range(n_known, nslots) if slots[s]), None)
    if extra is not None:
        checks.append((extra, 0, _EXTRA, None))
    for slot, kind, width, arg in fields:
        if slot >= nslots:
            break
        off = slots[slot]
        if off == 0:
            continue
        if off + width > inline:
            checks.append((slot, off, _OUTSIDE, None))
        elif kind == UNION:
            checks.append((slot, off, kind, (arg, slots[slot - 1] if slot >= 1 else 0)))
        elif kind != SCALAR:
            checks.append((slot, off, kind, arg))
    return inline, tuple(checks)


def _elements(buf, size: int, start: int, count: int, kind: int, arg, stack: list) -> None:
    """Queue the tables of a vector of tables, or check each string of a vector of strings."""
    first = start + 4
    for i, rel in enumerate(struct.unpack_from(f"<{count}I", buf, first)):
        target = first + 4 * i + rel
        if kind == TABLES:
            stack.append((target, arg))
        elif target + 4 > size or target + 4 + _U32(buf, target)[0] > size:
            raise _Malformed(f"string {i} of a vector at byte {start} runs past the end of the file")
