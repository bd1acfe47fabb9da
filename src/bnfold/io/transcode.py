"""Copying record trees between the TFLite and Circle formats.

Both bindings are generated from near-identical schemas, so a record of table X (the object API's
`XT` or io/tables.py's record of the same name) in one format has a same-named table in the other
with the same field names; the copy is made of the target's io/tables.py records. Two things need
care:
- union fields (`details`/`detailsType`, ...): the type number is looked up by the value's class
  name in the target's union enum, since the two schemas number some members differently;
- fields only one format has: dropped when they hold their default value, refused otherwise
  (`NotRepresentable`), so a conversion never silently loses information; a field the two name
  differently (Circle's BatchMatMulOptions.adjoint_lhs is TFLite's adj_x) is `RENAMED`.
"""

from __future__ import annotations

import numpy as np

from .tables import Record

# union value field -> the union enum that numbers its type field ("<field>Type")
UNION_ENUMS = {
    "details": "QuantizationDetails",
    "arraySegments": "SparseIndexVector",
    "arrayIndices": "SparseIndexVector",
    "builtinOptions": "BuiltinOptions",
    "builtinOptions2": "BuiltinOptions2",
}

# fields the two schemas name differently: (table, name in one format) -> name in the other
RENAMED = {
    ("BatchMatMulOptions", "adjX"): "adjointLhs",  # TFLite's adj_x is Circle's adjoint_lhs
    ("BatchMatMulOptions", "adjY"): "adjointRhs",
    ("BatchMatMulOptions", "adjointLhs"): "adjX",
    ("BatchMatMulOptions", "adjointRhs"): "adjY",
}


def counterpart(table: str, field: str, record) -> str:
    """The name `field` of `table` has in `record`'s format (itself unless RENAMED says otherwise)."""
    if hasattr(record, field):
        return field
    return RENAMED.get((table, field), field)


# deprecated fields that carry no meaning and may be dropped whatever they hold
DROPPABLE = {("SubGraphT", "deprecatedDataFormat"), ("SubGraphT", "dataFormat")}


class NotRepresentable(Exception):
    """A value the target format has no place for."""


def _is_record(value) -> bool:
    return isinstance(value, Record) or (hasattr(value, "Pack") and hasattr(type(value), "InitFromObj"))


def transcode(value, target, shallow=frozenset()):
    """Deep-copy `value` into the classes of `target` (an io.formats.Format).

    Top-level fields named in `shallow` are copied by reference, untranslated: the caller
    replaces them (the writer rebuilds everything the IR models)."""
    if isinstance(value, list):
        return [transcode(v, target) for v in value]
    if value is None or isinstance(value, (int, float, str, bytes, bool, np.ndarray, np.generic)):
        return value
    if not _is_record(value):
        raise NotRepresentable(f"unexpected value of type {type(value).__name__}")
    name = type(value).__name__
    if not target.layout.has_table(name[:-1]):
        raise NotRepresentable(f"{name[:-1]} does not exist in {target.name}")
    out = target.record(name[:-1])
    defaults = type(value)()
    for field, item in vars(value).items():
        if field in shallow:
            setattr(out, field, item)
            continue
        field = counterpart(name[:-1], field, out)
        if not hasattr(out, field):
            if (name, field) in DROPPABLE or same_value(item, getattr(defaults, field, None)):
                continue
            raise NotRepresentable(f"{name[:-1]}.{field} has no counterpart in {target.name}")
        if field in UNION_ENUMS and item is not None:
            member = type(item).__name__[:-1]
            enum = target.layout.enums[UNION_ENUMS[field]]
            if member not in enum:
                raise NotRepresentable(f"{member} does not exist in {target.name}")
            setattr(out, field + "Type", enum[member])
        if field.endswith("Type") and field[:-4] in UNION_ENUMS:
            continue  # set together with its value above
        setattr(out, field, transcode(item, target))
    return out


def same_value(a, b) -> bool:
    """Field equality that also holds for numpy vectors (the object API stores some vectors as arrays)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(a, b)
    return a == b
