"""What a generated object-API Pack does, learned by running it against a recording builder.

bnfold's writer builds the tables the IR models with flatbuffers.Builder directly and must lay
out the bytes exactly as the generated `XT.Pack` does: which strings, vectors and sub-tables it
builds first and in what order, how many slots it starts the table with, in which order it adds
the fields, with which builder call (the scalar type) and which default, and how it starts each
vector (element size and alignment). Rather than assume flatc's habits, derive_fields.py runs
every Pack once with each field set to a marker and this recorder in place of the builder.
"""

from __future__ import annotations

from typing import NamedTuple


class _Mark:
    """A field's value while Pack is recorded: it serves as a scalar, a string, a one-element
    vector (of itself) and a table, so every builder call shows the field it is made for."""

    def __init__(self, field: str):
        self.field = field

    def __len__(self) -> int:
        return 1

    def __getitem__(self, i: int):
        if i:
            raise IndexError(i)
        return self

    def Pack(self, builder) -> object:
        return builder.PackChild(self)


OFFSETS = 1 << 40  # what the recorder returns where a builder returns an offset: this plus a serial number


class Recorded(NamedTuple):
    slots: int  # StartObject's argument
    children: list[str]  # fields built before the table, in order
    fields: list[tuple]  # (field, slot, "offset" or the scalar type, default), in the order added
    vectors: dict[str, list[int]]  # field -> [element size, alignment] as Pack starts its vector


class _Recorder:
    """Stands in for a flatbuffers.Builder: logs each call with the field it serves."""

    def __init__(self):
        self.calls: list[tuple[str, tuple, str | None]] = []
        self.field_of: dict[int, str] = {}
        self.current: str | None = None

    def __getattr__(self, method: str):
        def call(*args):
            for a in args:
                if isinstance(a, _Mark):
                    self.current = a.field
                elif isinstance(a, int) and a in self.field_of:
                    self.current = self.field_of[a]
            self.calls.append((method, args, self.current))
            result = OFFSETS + len(self.calls)
            self.field_of[result] = self.current
            return result

        return call


def record_pack(cls) -> Recorded:
    """Run `cls().Pack` (an object-API class) with every field a marker, and read off its layout."""
    obj = cls()
    names = list(vars(obj))
    for name in names:
        setattr(obj, name, _Mark(name))
    rec = _Recorder()
    obj.Pack(rec)
    started = next(i for i, (m, _, _) in enumerate(rec.calls) if m == "StartObject")
    children: list[str] = []
    vectors: dict[str, list[int]] = {}
    start_vector = None
    for method, args, field in rec.calls[:started]:
        if field is not None and field not in children and method != "StartVector":
            children.append(field)
        if method == "StartVector":
            start_vector = list(args[0::2])  # (element size, count, alignment) -> [size, alignment]
        elif method == "EndVector":
            vectors[field] = start_vector
    fields = []
    for method, args, _ in rec.calls[started + 1 :]:
        if method == "EndObject":
            break
        slot, value, default = args
        if method == "PrependUOffsetTRelativeSlot":
            fields.append((rec.field_of[value], slot, "offset", None))
        else:
            fields.append((value.field, slot, method[len("Prepend") : -len("Slot")], default))
    if sorted(f[0] for f in fields) != sorted(names):
        raise ValueError(f"{cls.__name__}.Pack adds {[f[0] for f in fields]}, the class has {names}")
    return Recorded(rec.calls[started][1][0], children, fields, vectors)
