"""Derive the verifier's field tables (src/bnfold/io/validate.py) from the generated bindings.

The Python flatbuffers package has no verifier and the bindings carry no reflection data, but the
accessors flatc generates are regular: each field's accessor reads vtable slot `Offset(4 + 2*slot)`
and then a scalar (`Get(<Type>Flags, o + Pos)`), a string, a vector (`Vector(o)`, element stride
`j * N`), a sub-table (`Indirect` + `obj = X()`) or a union (`Union(obj, o)`). Reading that back
gives, per table, what each slot holds. The result is embedded in validate.py (parsing 700 kB of
generated code on every run would cost more than the verification itself); tests/test_robustness.py
re-derives it to catch schema drift when a binding is upgraded.

    python scripts/derive_schema_fields.py            # prints the tables as Python literals
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

SCALAR_SIZES = {"Bool": 1, "Int8": 1, "Uint8": 1, "Int16": 2, "Uint16": 2, "Int32": 4, "Uint32": 4, "Float32": 4,
                "Int64": 8, "Uint64": 8, "Float64": 8}
CLASS_RE = re.compile(r"^class (\w+)\(object\):\n(.*?)(?=^class |^def |\Z)", re.M | re.S)
METHOD_RE = re.compile(r"^    def (\w+)\(self(, j)?\):\n(.*?)(?=^    (?:def |@)|\Z)", re.M | re.S)
ACCESSOR_SUFFIXES = ("Length", "AsNumpy", "IsNone")
ROOTS = ("Model",)
UNIONS = ("BuiltinOptions", "BuiltinOptions2", "QuantizationDetails", "SparseIndexVector")


def _sources(fmt: str) -> str:
    """All generated source of one binding, concatenated."""
    if fmt == "tflite":
        path = Path(importlib.util.find_spec("ai_edge_litert").origin).parent / "schema_py_generated.py"
        return path.read_text()
    pkg = Path(importlib.util.find_spec("circle_schema.v0_10.circle").origin).parent
    return "\n".join(p.read_text() for p in sorted(pkg.glob("*.py")))


def _field(body: str, vector_arg: bool) -> tuple[int, str] | None:
    """(slot, kind) for one accessor body, or None when it is not a field accessor."""
    m = re.search(r"self\._tab\.Offset\((\d+)\)", body)
    if not m:
        return None
    slot = (int(m.group(1)) - 4) // 2
    obj = re.search(r"obj = (\w+)\(\)", body)
    scalar = re.search(r"number_types\.(\w+)Flags, (?:o|a) ", body)
    if "self._tab.Union(" in body:
        return slot, "U"  # enum filled in from the UnPack creator call
    if vector_arg:
        if "Indirect" in body and obj:
            return slot, "V:" + obj.group(1)
        if "self._tab.String(a" in body:
            return slot, "S"
        stride = re.search(r"\* (\d+)\)", body)
        if obj and stride:
            return slot, f"v{stride.group(1)}"  # vector of structs: only the bytes matter
        if scalar and stride:
            return slot, f"v{SCALAR_SIZES[scalar.group(1)]}"
        return None
    if "self._tab.String(o" in body:
        return slot, "s"
    if "Indirect(o + self._tab.Pos)" in body and obj:
        return slot, "T:" + obj.group(1)
    if scalar:
        return slot, str(SCALAR_SIZES[scalar.group(1)])
    return None


def derive(fmt: str) -> dict[str, dict[int, str]]:
    """{table: {slot: kind}} for every table of one binding."""
    tables: dict[str, dict[int, str]] = {}
    for cm in CLASS_RE.finditer(_sources(fmt)):
        name, body = cm.group(1), cm.group(2)
        if name.endswith("T") or "flatbuffers.table.Table" not in body:
            continue
        fields: dict[int, str] = {}
        methods = {mm.group(1): mm for mm in METHOD_RE.finditer(body)}
        for method, mm in methods.items():
            vector_arg, mbody = bool(mm.group(2)), mm.group(3)
            if method == "Init" or any(method.endswith(s) and method[:-len(s)] in methods for s in ACCESSOR_SUFFIXES):
                continue  # helpers of another field's accessor (a field named "Length" is real)
            got = _field(mbody, vector_arg)
            if got:
                slot, kind = got
                if kind == "U":
                    kind = "U:" + _union_enum(method)
                fields.setdefault(slot, kind)
        tables[name] = fields
    return tables


def _union_enum(method: str) -> str:
    return {"Details": "QuantizationDetails", "ArraySegments": "SparseIndexVector",
            "ArrayIndices": "SparseIndexVector"}.get(method, method)


def encode(fields: dict[int, str]) -> str:
    """Slots as one space-separated string, '-' for slots no accessor reads."""
    if not fields:
        return ""
    return " ".join(fields.get(i, "-") for i in range(max(fields) + 1))


def reachable(tables: dict[str, dict[int, str]], union_members: dict[str, list[str]]) -> list[str]:
    """Tables bnfold's reader can reach from Model (options tables through the unions)."""
    seen, todo = [], list(ROOTS)
    while todo:
        name = todo.pop()
        if name in seen or name not in tables:
            continue
        seen.append(name)
        for kind in tables[name].values():
            if kind[:2] in ("T:", "V:"):
                todo.append(kind[2:])
            elif kind.startswith("U:"):
                todo.extend(union_members.get(kind[2:], []))
    return sorted(seen)


def union_members(fmt: str) -> dict[str, list[str]]:
    if fmt == "tflite":
        schema = importlib.import_module("ai_edge_litert.schema_py_generated")
        enums = {u: getattr(schema, u) for u in UNIONS}
    else:
        enums = {u: getattr(importlib.import_module(f"circle_schema.v0_10.circle.{u}"), u) for u in UNIONS
                 if importlib.util.find_spec(f"circle_schema.v0_10.circle.{u}")}
    return {u: [k for k, v in vars(e).items() if not k.startswith("_") and isinstance(v, int) and v != 0]
            for u, e in enums.items()}


def field_tables(fmt: str) -> dict[str, str]:
    tables = derive(fmt)
    return {name: encode(tables[name]) for name in reachable(tables, union_members(fmt))}


def main() -> int:
    tflite, circle = field_tables("tflite"), field_tables("circle")
    print("TFLITE_TABLES = {")
    for k, v in tflite.items():
        print(f"    {k!r}: {v!r},")
    print("}")
    print("CIRCLE_DIFF = {  # Circle tables that differ from TFLite's")
    for k, v in circle.items():
        if tflite.get(k) != v:
            print(f"    {k!r}: {v!r},")
    print("}")
    print("CIRCLE_ABSENT =", sorted(k for k in tflite if k not in circle))
    return 0


if __name__ == "__main__":
    sys.exit(main())
