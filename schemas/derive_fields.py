"""Derive the verifier's field tables and the tables' layouts from the generated bindings, and
check both for drift.

The Python flatbuffers package has no verifier and the bindings carry no reflection data, but the
accessors flatc generates are regular: each field's accessor reads vtable slot `Offset(4 + 2*slot)`
and then a scalar (`Get(<Type>Flags, o + Pos)`), a string, a vector (`Vector(o)`, element stride
`j * N`), a sub-table (`Indirect` + `obj = X()`) or a union (`Union(obj, o)`). Reading that back
gives, per table, what each slot holds (`field_tables`: the verifier's view, io/validate.py).

The layouts (src/bnfold/io/schema_layout_<format>.py, `layouts`) hold those slot kinds and what reading
and packing the tables without the bindings needs (io/tables.py): each field's object-API name,
scalar type and default, and how the generated Pack writes it, learned by recording Pack
(pack_order.py); and the enums. They are checked in as one Python module per format, because
parsing 700 kB of generated code on every run would cost more than reading the model (and a
module's cached bytecode loads in a fraction of the time json takes to import and parse the same
data); tests/test_schemas.py and
tests/test_plain_path.py re-derive them, so a binding upgrade that moves, retypes or adds a field
fails a test naming that field.

    python schemas/derive_fields.py          # rewrite the schema_layout_<format>.py modules
    python schemas/derive_fields.py --check  # list the drift between the file and the bindings
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
from pathlib import Path

FORMATS = {"tflite": "ai_edge_litert.schema_py_generated", "circle": "circle_schema.v0_10.circle"}
LAYOUTS = {
    fmt: Path(__file__).resolve().parent.parent / "src" / "bnfold" / "io" / f"schema_layout_{fmt}.py" for fmt in FORMATS
}
SCALAR_SIZES = {
    "Bool": 1,
    "Int8": 1,
    "Uint8": 1,
    "Int16": 2,
    "Uint16": 2,
    "Int32": 4,
    "Uint32": 4,
    "Float32": 4,
    "Int64": 8,
    "Uint64": 8,
    "Float64": 8,
}
CLASS_RE = re.compile(r"^class (\w+)\(object\):\n(.*?)(?=^class |^def |\Z)", re.M | re.S)
METHOD_RE = re.compile(r"^    def (\w+)\(self(, j)?\):\n(.*?)(?=^    (?:def |@)|\Z)", re.M | re.S)
ACCESSOR_SUFFIXES = ("Length", "AsNumpy", "IsNone")
ROOT = "Model"
UNIONS = ("BuiltinOptions", "BuiltinOptions2", "QuantizationDetails", "SparseIndexVector")
ENUMS = ("BuiltinOperator", "TensorType") + UNIONS  # the enums bnfold reads and writes by name
UNION_OF_ACCESSOR = {
    "Details": "QuantizationDetails",
    "ArraySegments": "SparseIndexVector",
    "ArrayIndices": "SparseIndexVector",
}  # otherwise the accessor is named after its enum


def _sources(fmt: str) -> str:
    """All generated source of one binding, concatenated."""
    spec = importlib.util.find_spec(FORMATS[fmt])
    if spec.submodule_search_locations:  # circle-schema: one module per type
        return "\n".join(p.read_text() for p in sorted(Path(spec.origin).parent.glob("*.py")))
    return Path(spec.origin).read_text()


def _field(body: str, vector_arg: bool) -> tuple[int, str, str | None] | None:
    """(slot, kind, scalar type) for one accessor body, or None when it is not a field accessor;
    the type ("Int8", "Float32", ...) is that of a scalar or of a scalar vector's elements."""
    m = re.search(r"self\._tab\.Offset\((\d+)\)", body)
    if not m:
        return None
    slot = (int(m.group(1)) - 4) // 2
    obj = re.search(r"obj = (\w+)\(\)", body)
    scalar = re.search(r"number_types\.(\w+)Flags, (?:o|a) ", body)
    if "self._tab.Union(" in body:
        return slot, "U", None  # the enum is named after the accessor
    if vector_arg:
        if "Indirect" in body and obj:
            return slot, "V:" + obj.group(1), None
        if "self._tab.String(a" in body:
            return slot, "S", None
        stride = re.search(r"\* (\d+)\)", body)
        if obj and stride:
            return slot, f"v{stride.group(1)}", None  # vector of structs: only the bytes matter
        if scalar and stride:
            return slot, f"v{SCALAR_SIZES[scalar.group(1)]}", scalar.group(1)
        return None
    if "self._tab.String(o" in body:
        return slot, "s", None
    if "Indirect(o + self._tab.Pos)" in body and obj:
        return slot, "T:" + obj.group(1), None
    if scalar:
        return slot, str(SCALAR_SIZES[scalar.group(1)]), scalar.group(1)
    return None


def derive(fmt: str) -> dict[str, dict[int, tuple[str, str, str | None]]]:
    """{table: {slot: (kind, accessor name, scalar type)}} for every table of one binding."""
    tables: dict[str, dict[int, tuple[str, str, str | None]]] = {}
    for cm in CLASS_RE.finditer(_sources(fmt)):
        name, body = cm.group(1), cm.group(2)
        if name.endswith("T") or "flatbuffers.table.Table" not in body:
            continue
        fields: dict[int, tuple[str, str, str | None]] = {}
        methods = {mm.group(1): mm for mm in METHOD_RE.finditer(body)}
        for method, mm in methods.items():
            if method == "Init" or any(method.endswith(s) and method[: -len(s)] in methods for s in ACCESSOR_SUFFIXES):
                continue  # helpers of another field's accessor (a field named "Length" is real)
            got = _field(mm.group(3), bool(mm.group(2)))
            if got:
                slot, kind, scalar = got
                if kind == "U":
                    kind = "U:" + UNION_OF_ACCESSOR.get(method, method)
                fields.setdefault(slot, (kind, method, scalar))
        tables[name] = fields
    return tables


def encode(fields: dict[int, tuple]) -> str:
    """Slots as one space-separated string, '-' for slots no accessor reads (deprecated fields)."""
    return " ".join(fields[i][0] if i in fields else "-" for i in range(max(fields, default=-1) + 1))


def generated(fmt: str, name: str):
    """The generated class or enum `name` of one binding ("TensorT", "TensorType"), or None."""
    module = FORMATS[fmt]
    if fmt == "circle":  # one module per type, named after the table for its object-API class
        owner = name[:-1] if name.endswith("T") and importlib.util.find_spec(f"{module}.{name[:-1]}") else name
        if not importlib.util.find_spec(f"{module}.{owner}"):
            return None
        return getattr(importlib.import_module(f"{module}.{owner}"), name, None)
    return getattr(importlib.import_module(module), name, None)


def enum_values(fmt: str, name: str) -> dict[str, int]:
    enum = generated(fmt, name)
    return {k: v for k, v in vars(enum).items() if not k.startswith("_") and isinstance(v, int)} if enum else {}


def union_members(fmt: str) -> dict[str, list[str]]:
    """{union enum: its member tables} for the unions bnfold's reader follows."""
    return {union: [k for k, v in members.items() if v] for union in UNIONS if (members := enum_values(fmt, union))}


def reachable(tables: dict, unions: dict[str, list[str]]) -> list[str]:
    """Tables bnfold's reader can reach from Model (options tables through the unions)."""
    seen, todo = set(), [ROOT]
    while todo:
        name = todo.pop()
        if name in seen or name not in tables:
            continue
        seen.add(name)
        for kind, *_ in tables[name].values():
            if kind[:2] in ("T:", "V:"):
                todo.append(kind[2:])
            elif kind.startswith("U:"):
                todo.extend(unions.get(kind[2:], []))
    return sorted(seen)


def field_tables(fmt: str) -> dict[str, str]:
    """{table: slot kinds} for the reachable tables that have fields (the others hold none)."""
    tables = derive(fmt)
    return {name: encode(tables[name]) for name in reachable(tables, union_members(fmt)) if tables[name]}


def drift(fmt: str, stored: dict[str, str]) -> list[str]:
    """One line per field whose stored kind differs from what the installed binding says."""
    tables = derive(fmt)
    derived = field_tables(fmt)
    lines = []
    for name in sorted(set(derived) | set(stored)):
        new, old = derived.get(name, "").split(), stored.get(name, "").split()
        for slot in range(max(len(new), len(old))):
            now = new[slot] if slot < len(new) else "(none)"
            was = old[slot] if slot < len(old) else "(none)"
            if now != was:
                accessor = tables.get(name, {}).get(slot, ("", "deprecated or removed", None))[1]
                lines.append(
                    f"{fmt} {name}.{accessor} (slot {slot}): the binding says {now}, {LAYOUTS[fmt].name} says {was}"
                )
    return lines


def derive_layouts() -> dict:
    """{format: its layouts} as the installed bindings give them (lists, not tuples, as stored)."""
    return json.loads(json.dumps({fmt: layouts(fmt) for fmt in FORMATS}))


def stored_layouts() -> dict:
    """{format: its layouts} as the package holds them."""
    return {fmt: importlib.import_module(f"bnfold.io.{LAYOUTS[fmt].stem}").LAYOUT for fmt in FORMATS}


MODULE = '''"""The {fmt} tables' layouts and enums (io/tables.py), written by schemas/derive_fields.py from the
installed bindings: rerun it, do not edit."""

LAYOUT = {layout!r}
'''


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        from bnfold.io.validate import field_tables as stored  # the slot kinds, as read from LAYOUTS

        lines = [line for fmt in FORMATS for line in drift(fmt, stored()[fmt])]
        if stored_layouts() != derive_layouts():
            lines.append("the stored layouts differ from what the bindings say (rerun this script)")
        print("\n".join(lines) or "the stored layouts match the installed bindings")
        return 1 if lines else 0
    if argv:
        print(__doc__)
        return 2
    for fmt, layout in derive_layouts().items():
        LAYOUTS[fmt].write_text(MODULE.format(fmt=fmt, layout=_sorted(layout)))
        print(f"wrote {LAYOUTS[fmt]}")
    return 0


def _sorted(value):
    """`value` with every dict's keys in order, so that a rewrite changes only what changed."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    return [_sorted(v) for v in value] if isinstance(value, list) else value


def layouts(fmt: str) -> dict:
    """What the reader and writer need to read and build each reachable table without the
    bindings, and the enums they name things by:
    {"enums": {enum: {name: value}}, "tables": {table: {"slots": n, "children": [field, ...],
    "fields": [[field, slot, kind, type, extra], ...]}}}. `fields` are in the order the generated
    Pack adds them and `children` in the order it builds strings, vectors and sub-tables before
    that (learned by recording Pack, pack_order.py); `kind` is the slot's kind as
    `field_tables` gives it, `type` the scalar or vector element type ("Int8", "Float32", ...), `extra`
    a scalar's default (as the object-API class starts it) or a vector's [element size, alignment]."""
    from pack_order import record_pack

    tables = derive(fmt)
    out = {}
    for name in reachable(tables, union_members(fmt)):
        cls = generated(fmt, name + "T")
        if cls is None:
            continue
        recorded, initial = record_pack(cls), vars(cls())
        fields = []
        for field, slot, how, default in recorded.fields:
            kind, _, scalar = tables[name][slot]
            if how not in ("offset", scalar) or (how != "offset" and initial[field] != default):
                raise ValueError(
                    f"{fmt} {name}.{field}: Pack writes {how} (default {default}), the accessor reads "
                    f"{scalar} (the class starts at {initial[field]})"
                )
            fields.append(
                [field, slot, kind, scalar, initial[field] if how != "offset" else recorded.vectors.get(field)]
            )
        out[name] = {"slots": recorded.slots, "children": recorded.children, "fields": fields}
    return {"enums": {enum: enum_values(fmt, enum) for enum in ENUMS}, "tables": out}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
