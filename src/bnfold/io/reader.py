"""Flatbuffer file -> IR.

The file is memory-mapped read-only and read straight from its bytes, fetching only what the IR
models: per tensor its name, type, shape, buffer and quantization, per operator its code, tensor
indices and options. Where each field sits and how it is stored comes from the layouts derived
from the generated bindings (io/tables.py), never written down here, so the plain path does not
import the bindings. A tensor or operator holding something more (a field the IR does not model)
keeps all of its fields in its `record`, which the writer writes back: an io/tables.py record
where those fields are scalars, strings or vectors of scalars (has_rank, custom options), the
bindings' object-API unpack where they are sub-tables (sparsity, variant tensors). Most tables
have nothing more, so reading costs a few struct reads per tensor and operator.

Every Buffer's bytes stay a read-only numpy view of the mapping (inline vectors and offset
buffers alike), and each Buffer remembers where its bytes sit in the file so the writer can copy
them file to file. The format comes from the file identifier, never from the extension.
"""

from __future__ import annotations

import functools
import mmap
import os
import struct

import numpy as np

from ..errors import ModelError
from ..ir.const import Buffer
from ..ir.graph import Graph, Options, Tensor
from ..ir.invariants import mark_sound, validate_model
from ..ir.model import Metadata, Model, OpCode, Signature, Source
from .formats import MODELED_FIELDS, Format, format_from_identifier
from .gcpause import paused_gc
from .paths import open_input
from .tables import SCALAR, STRING, TABLE, UNION, VECTOR, unpack
from .validate import validate

# What a corrupt flatbuffer makes the generated unpacking code raise.
_DECODE_ERRORS = (
    struct.error,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    KeyError,
    AttributeError,
    UnicodeDecodeError,
    RecursionError,
    MemoryError,
)
_I32 = struct.Struct("<i").unpack_from
_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from


def open_source(path: str) -> Source:
    f = open_input(path, "a model file")
    size = os.fstat(f.fileno()).st_size
    if size < 8:
        f.close()
        raise ModelError(f"file too short to be a model ({size} bytes)", path)
    try:
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        f.close()
        raise ModelError(f"cannot map file: {e}", path) from None
    return Source(path, f, mapping)


def read_model(path: str) -> Model:
    source = open_source(path)
    fmt = format_from_identifier(bytes(source.mapping[4:8]), path)
    validate(source.mapping, fmt, path)
    try:
        with paused_gc():
            model = validate_model(_Lift(fmt, source).model(), path)
    except ModelError:
        raise
    except _DECODE_ERRORS as e:
        raise ModelError(f"malformed {fmt.name} flatbuffer ({type(e).__name__}: {e})", path) from None
    mark_sound(model)  # what is written unchanged need not be checked again (ir/invariants.py: gate)
    return model


def _text(raw) -> str | None:
    return None if raw is None else raw.decode("utf-8", "surrogateescape")


class _Hide:
    """A table accessor whose named sub-tables read as absent, so the object API's unpack of it
    skips them: those of a Tensor or Operator that the reader lifts its own, cheaper way."""

    def __init__(self, accessor, tables: tuple[str, ...]):
        self._accessor = accessor
        self._absent = {name: None for name in tables}

    def __getattr__(self, name):
        if name in self._absent:
            value = self._absent[name]
            return lambda: value
        return getattr(self._accessor, name)


class _Fields:
    """Reads chosen fields of one kind of table straight from the file's bytes: scalars with
    struct, vectors as numpy views, strings as bytes, sub-tables and unions as the position of
    their table. Layout (slot, kind, type, default) comes from the derived layouts (io/tables.py);
    each vtable is decoded once. What it returns equals what the accessors return (None for an
    absent vector, string or table)."""

    def __init__(self, fmt: Format, table: str, fields: tuple[str, ...], positions: frozenset[str] = frozenset()):
        self.plan = _field_plan(fmt, table, fields, positions)
        self.defaults = [default for _, _, _, default in self.plan]
        self.by_vtable: dict[int, tuple] = {}

    def read(self, buf, pos: int) -> list:
        vtable = pos - _I32(buf, pos)[0]
        present = self.by_vtable.get(vtable)
        if present is None:
            present = self.by_vtable[vtable] = self._present(buf, vtable)
        out = self.defaults.copy()
        for i, off, kind, how in present:
            at = pos + off
            if kind == "scalar":
                out[i] = how(buf, at)[0]
                continue
            target = at + _U32(buf, at)[0]
            if kind == "table":
                out[i] = target
            elif kind == "string":
                out[i] = bytes(buf[target + 4 : target + 4 + _U32(buf, target)[0]])
            else:
                out[i] = np.frombuffer(buf, how, _U32(buf, target)[0], target + 4)
        return out

    def _present(self, buf, vtable: int) -> tuple:
        """(index, offset in the table, how it is read, unpacker or dtype) of each chosen field a
        vtable holds: what every table sharing it reads."""
        size = _U16(buf, vtable)[0]
        present = []
        for i, (slot, kind, how, _) in enumerate(self.plan):
            off = _U16(buf, vtable + slot)[0] if slot < size else 0
            if off:
                present.append((i, off, kind, how.unpack_from if kind == "scalar" else how))
        return tuple(present)


PLAIN, SCALARS, FLAT, OTHER = range(4)  # what a table holds beyond the IR's fields (_Plain)
_HOW = {SCALAR: "scalar", STRING: "string", VECTOR: "vector", TABLE: "table", UNION: "table"}


@functools.cache  # per format, table and fields: once per process, not once per file read
def _field_plan(fmt: Format, table: str, fields: tuple[str, ...], positions: frozenset[str]) -> tuple:
    """(vtable offset, how it is read, struct or dtype, default) of each field, from the layout;
    the fields in `positions` are read as where their vector, string or table starts."""
    by_name = fmt.layout.table(table).by_name
    return tuple(
        (
            f.voffset,
            "table" if f.name in positions else _HOW[f.kind],
            f.struct if f.kind == SCALAR else f.dtype,
            f.default,
        )
        for f in (by_name[name] for name in fields)
    )


class _Plain:
    """Tells, per vtable, what a table of one kind holds: only fields the IR models (PLAIN);
    more, but only scalars (SCALARS: the converter's has_rank and is_variable on every tensor),
    which `extras` reads straight from the bytes; more, but only scalars, strings and vectors of
    scalars (FLAT: custom options, the empty mutating_variable_inputs ONE's exporters write),
    read into a record of io/tables.py; or sub-tables the IR does not model (OTHER: sparsity,
    variant tensors, ...), which the bindings' object API unpacks."""

    def __init__(self, fmt: Format, table: str):
        self.modeled, self.extra_names, flat = _table_layout(fmt, table)
        self.extras = _Fields(fmt, table, self.extra_names)
        self.scalar = self.modeled | {slot for slot, _, _, _ in self.extras.plan}
        self.flat = self.scalar | flat
        self.by_vtable: dict[int, int] = {}

    def __call__(self, buf, pos: int) -> int:
        vtable = pos - _I32(buf, pos)[0]
        kind = self.by_vtable.get(vtable)
        if kind is None:
            size = _U16(buf, vtable)[0]
            slots = struct.unpack_from(f"<{(size - 4) // 2}H", buf, vtable + 4)
            present = {4 + 2 * i for i, off in enumerate(slots) if off}
            kind = self.by_vtable[vtable] = (
                PLAIN
                if present <= self.modeled
                else SCALARS
                if present <= self.scalar
                else FLAT
                if present <= self.flat
                else OTHER
            )
        return kind

    def read_extras(self, buf, pos: int) -> dict:
        return dict(zip(self.extra_names, self.extras.read(buf, pos)))


@functools.cache
def _table_layout(fmt: Format, table: str) -> tuple[frozenset[int], tuple[str, ...], frozenset[int]]:
    """The vtable offsets of the fields the IR models, the names of the other scalar fields, and
    the vtable offsets of the other strings and vectors of scalars."""
    fields = fmt.layout.table(table).fields
    modeled = MODELED_FIELDS[table + "T"]
    extra = tuple(f.name for f in fields if f.name not in modeled and f.kind == SCALAR)
    flat = frozenset(f.voffset for f in fields if f.name not in modeled and f.kind in (STRING, VECTOR))
    return frozenset(f.voffset for f in fields if f.name in modeled), extra, flat


@functools.cache
def _scalar_options_fields(fmt: Format, name: str) -> tuple[str, ...] | None:
    """The fields of options table `name` when they are all scalars (nearly all are), else None."""
    fields = fmt.layout.table(name).fields
    return tuple(f.name for f in fields) if all(f.kind == SCALAR for f in fields) else None


class _Lift:
    """One read: the file's tables, lifted into the IR."""

    def __init__(self, fmt: Format, source: Source):
        self.fmt = fmt
        self.source = source
        self.path = source.path
        self.buf = source.mapping
        self.root = _U32(source.mapping, 0)[0]
        self.plain_tensor = _Plain(fmt, "Tensor")
        self.tensor_fields = _Fields(
            fmt, "Tensor", ("name", "type", "buffer", "shape", "shapeSignature", "quantization")
        )
        self.operator_fields = _Fields(
            fmt,
            "Operator",
            ("opcodeIndex", "inputs", "outputs", "intermediates", "builtinOptionsType", "builtinOptions"),
        )
        self.buffer_fields = _Fields(fmt, "Buffer", ("offset", "size", "data"), positions=frozenset({"data"}))
        self.options_fields: dict[str, tuple | None] = {}
        self.plain_operator = _Plain(fmt, "Operator")
        self.empty_tables: dict[int, bool] = {}

    def model(self) -> Model:
        fmt, root, path = self.fmt, self.root, self.path
        record = unpack(fmt.layout.table("Model"), self.buf, root, skip=frozenset({"subgraphs", "buffers"}))
        buffers = [self._buffer(pos, i) for i, pos in enumerate(self._positions(root, "Model", "buffers") or ())]
        model = Model(
            fmt,
            buffers=buffers,
            description=record.description,
            version=record.version,
            record=record,
            source=self.source,
        )
        self.model_ = model
        for oc in record.operatorCodes or []:
            code = fmt.decode_opcode(oc)
            if code not in fmt.op_names:
                raise ModelError(f"unknown {fmt.name} operator code {code}", path)
            model.opcodes.append(OpCode(fmt.op_names[code], oc.version, oc.customCode, record=oc))
        for g_index, pos in enumerate(self._positions(root, "Model", "subgraphs") or ()):
            self._graph(pos, g_index)
        for s_index, sd in enumerate(record.signatureDefs or []):
            model.signatures.append(self._signature(sd, s_index))
        for m in record.metadata or []:
            model.metadata.append(Metadata(m.name, self._buffer_at(m.buffer, "metadata"), record=m))
        if record.metadataBuffer is not None:
            model.metadata_buffer = [self._buffer_at(int(i), "metadata_buffer") for i in record.metadataBuffer]
        return model

    def _buffer_at(self, index: int, what: str) -> Buffer:
        buffers = self.model_.buffers
        if not 0 <= index < len(buffers):
            raise ModelError(f"{what} refers to buffer {index}, but the model has {len(buffers)}", self.path)
        return buffers[index]

    def _positions(self, pos: int, table: str, field: str) -> list[int] | None:
        """Where each table of the vector of tables `field` of a `table` at `pos` starts; None
        when the vector is absent."""
        buf = self.buf
        vtable = pos - _I32(buf, pos)[0]
        voffset = self.fmt.layout.table(table).by_name[field].voffset
        o = _U16(buf, vtable + voffset)[0] if voffset < _U16(buf, vtable)[0] else 0
        if not o:
            return None
        start = pos + o + _U32(buf, pos + o)[0] + 4
        count = _U32(buf, start - 4)[0]
        relative = np.frombuffer(buf, "<u4", count, start).astype(np.int64)
        return (relative + np.arange(start, start + 4 * count, 4, dtype=np.int64)).tolist()

    def _accessor(self, table: str, pos: int):
        """The generated accessor of a table (imports the bindings: only for what the IR does not model)."""
        accessor = self.fmt.cls(table)()
        accessor.Init(self.buf, pos)
        return accessor

    def _buffer(self, pos: int, index: int) -> Buffer:
        source = self.source
        offset, size, data_at = self.buffer_fields.read(self.buf, pos)
        if offset > 1:  # weights stored after the flatbuffer (the >2 GB layout)
            if offset + size > source.size:
                raise ModelError(
                    f"buffer {index} points outside the file (offset {offset}, size {size}, file {source.size} bytes)",
                    source.path,
                )
            source.offset_layout = True
            return Buffer(source.array[offset : offset + size], source=offset)
        if data_at is None:
            return Buffer()
        start = data_at + 4
        end = start + _U32(self.buf, data_at)[0]
        return Buffer(source.array[start:end], source=start if end > start else None)

    def _unpack(self, table: str, pos: int):
        """The record of one table; made without reading for a table with no fields at all
        (empty options and quantization tables are common)."""
        vtable = pos - _I32(self.buf, pos)[0]
        empty = self.empty_tables.get(vtable)
        if empty is None:
            size = _U16(self.buf, vtable)[0]
            empty = self.empty_tables[vtable] = not any(
                struct.unpack_from(f"<{(size - 4) // 2}H", self.buf, vtable + 4)
            )
        layout = self.fmt.layout.table(table)
        return layout.record() if empty else unpack(layout, self.buf, pos)

    # ---- subgraphs -----------------------------------------------------------------------
    def _graph(self, pos: int, g_index: int) -> None:
        fmt, path = self.fmt, self.path
        record = unpack(fmt.layout.table("SubGraph"), self.buf, pos, skip=frozenset({"tensors", "operators"}))
        tensor_positions = self._positions(pos, "SubGraph", "tensors")
        operator_positions = self._positions(pos, "SubGraph", "operators")
        # the IR holds the tensors and operators; the record only says whether the vectors were there
        record.tensors = None if tensor_positions is None else []
        record.operators = None if operator_positions is None else []
        graph = self.model_.add_graph(Graph(_text(record.name), record=record))
        where = f"subgraph {g_index}"
        for t_index, t_pos in enumerate(tensor_positions or ()):
            graph.tensors.append(self._tensor(t_pos, f"{where} tensor {t_index}"))
        tensors = graph.tensors

        def tensor_at(index, what, optional=False):
            index = int(index)
            if optional and index == -1:
                return None
            if not 0 <= index < len(tensors):
                raise ModelError(f"{where} {what} refers to tensor {index}, but the subgraph has {len(tensors)}", path)
            return tensors[index]

        for o_index, o_pos in enumerate(operator_positions or ()):
            self._operator(graph, o_pos, f"{where} operator {o_index}", tensor_at)
        graph.inputs = [tensor_at(i, "input") for i in (record.inputs if record.inputs is not None else [])]
        graph.outputs = [tensor_at(i, "output") for i in (record.outputs if record.outputs is not None else [])]

    def _tensor(self, pos: int, where: str) -> Tensor:
        name, code, buffer, shape, signature, quantization = self.tensor_fields.read(self.buf, pos)
        if quantization is not None:
            quantization = self._unpack("QuantizationParameters", quantization)
        record = None
        kind = self.plain_tensor(self.buf, pos)
        if kind == OTHER:  # fields beyond the IR's (sparsity, variant tensors, ...): keep them all
            record = self.fmt.cls("TensorT").InitFromObj(_Hide(self._accessor("Tensor", pos), tables=("Quantization",)))
            record.quantization = quantization
        elif kind == FLAT:
            record = unpack(self.fmt.layout.table("Tensor"), self.buf, pos, skip=frozenset({"quantization"}))
            record.quantization = quantization
        elif kind == SCALARS or name is None or shape is None:  # (absent name or shape: not empty, the writer knows)
            record = self.fmt.record("Tensor")
            record.name, record.type, record.buffer, record.shape = name, code, buffer, shape
            record.shapeSignature, record.quantization = signature, quantization
            if kind == SCALARS:
                vars(record).update(self.plain_tensor.read_extras(self.buf, pos))
        dtype = self.fmt.dtype_names.get(code)
        if dtype is None:
            raise ModelError(f"{where} has unknown type {code}", self.path)
        return Tensor(
            _text(name) or "",
            dtype,
            () if shape is None else shape.tolist(),
            self._buffer_at(buffer, where),
            shape_signature=None if signature is None else signature.tolist(),
            quantization=quantization,
            record=record,
        )

    def _operator(self, graph: Graph, pos: int, where: str, tensor_at) -> None:
        model = self.model_
        index, inputs, outputs, inter, options_type, options = self.operator_fields.read(self.buf, pos)
        if not 0 <= index < len(model.opcodes):
            raise ModelError(f"{where} has operator code index {index} out of range", self.path)
        record = None
        kind = self.plain_operator(self.buf, pos)
        if (
            kind == OTHER
        ):  # sub-tables beyond the IR's (builtin_options_2): keep them all (the options are lifted apart)
            record = self.fmt.cls("OperatorT").InitFromObj(
                _Hide(self._accessor("Operator", pos), tables=("BuiltinOptions",))
            )
        elif kind != PLAIN or any(v is not None and v.size == 0 for v in (inputs, outputs, inter)):
            record = unpack(self.fmt.layout.table("Operator"), self.buf, pos, skip=frozenset({"builtinOptions"}))
        if record is not None and record.largeCustomOptionsSize > 0:
            raise ModelError(
                f"{where} stores custom options outside the flatbuffer, which bnfold does not support", self.path
            )
        ins = [tensor_at(i, where, optional=True) for i in (inputs.tolist() if inputs is not None else ())]
        outs = [tensor_at(i, where) for i in (outputs.tolist() if outputs is not None else ())]
        ir_op = graph.add_op(model.opcodes[index], ins, outs, self._options(options_type, options), record=record)
        if inter is not None:
            ir_op.intermediates = tuple(tensor_at(i, where) for i in inter.tolist())

    def _options(self, code: int, pos: int | None) -> Options | None:
        name = self.fmt.options_names.get(code) if pos is not None else None
        if name is None or name == "NONE" or pos is None:
            return None
        reader = self._options_reader(name)
        if reader is None:
            return Options(name, **vars(self._unpack(name, pos)))
        fields, values = reader
        return Options(name, **dict(zip(fields, values.read(self.buf, pos))))

    def _options_reader(self, name: str):
        """(field names, _Fields) for an options table whose fields are all scalars (nearly all
        are), read straight from the bytes; None for the others, which are unpacked whole."""
        if name not in self.options_fields:
            fields = _scalar_options_fields(self.fmt, name)
            self.options_fields[name] = None if fields is None else (fields, _Fields(self.fmt, name, fields))
        return self.options_fields[name]

    # ---- signatures ----------------------------------------------------------------------
    def _signature(self, sd, s_index: int) -> Signature:
        graphs = self.model_.graphs
        if not 0 <= sd.subgraphIndex < len(graphs):
            raise ModelError(
                f"signature {s_index} refers to subgraph {sd.subgraphIndex}, but the model has {len(graphs)}", self.path
            )
        graph = graphs[sd.subgraphIndex]

        def named(maps):
            out = []
            for m in maps or []:
                if not 0 <= m.tensorIndex < len(graph.tensors):
                    raise ModelError(
                        f"signature {s_index} names tensor {m.tensorIndex}, but its subgraph has {len(graph.tensors)}",
                        self.path,
                    )
                out.append((m.name, graph.tensors[m.tensorIndex]))
            return out

        sig = Signature(sd.signatureKey, graph, named(sd.inputs), named(sd.outputs), record=sd)
        graph.pinned.update(t for _, t in sig.inputs + sig.outputs)
        return sig
