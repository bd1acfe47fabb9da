"""Flatbuffer file -> IR.

The file is memory-mapped read-only and read through the generated bindings' table accessors,
fetching only what the IR models: per tensor its name, type, shape, buffer and quantization, per
operator its code, tensor indices and options. The object API unpacks a table in full only where
it holds something more (a field the IR does not model, such as sparsity or custom options), and
that object becomes the IR object's `record`, which the writer writes back; most tables have
nothing more, so reading costs a few accessor calls per tensor and operator rather than an
object-API unpack of every table. Which vtable slots hold modeled fields is asked of the
generated accessors themselves (`_modeled_slots`), never written down here.

Every Buffer's bytes stay a read-only numpy view of the mapping (inline vectors and offset
buffers alike), and each Buffer remembers where its bytes sit in the file so the writer can copy
them file to file. The format comes from the file identifier, never from the extension.
"""

from __future__ import annotations

import mmap
import os
import struct

import numpy as np

from ..errors import ModelError
from ..ir.const import Buffer
from ..ir.graph import Graph, Options, Tensor
from ..ir.model import Metadata, Model, OpCode, Signature
from ..ir.check import check_model
from .formats import MODELED_FIELDS, Format, format_from_identifier
from .paths import require_regular_file
from .validate import validate

# What a corrupt flatbuffer makes the generated unpacking code raise.
_DECODE_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError, KeyError, AttributeError,
                  UnicodeDecodeError, RecursionError, MemoryError)
_I32 = struct.Struct("<i").unpack_from
_U16 = struct.Struct("<H").unpack_from


class Source:
    """The input file, kept open and mapped for the life of the model."""

    def __init__(self, path: str, file, mapping: mmap.mmap):
        self.path = path
        self.file = file
        self.mapping = mapping
        self.size = len(mapping)
        self.array = np.frombuffer(mapping, dtype=np.uint8)
        self._base = self.array.ctypes.data
        self.offset_layout = False  # True when some buffer's bytes sit after the flatbuffer

    def offset_of(self, view: np.ndarray) -> int:
        return view.ctypes.data - self._base

    def fileno(self) -> int:
        return self.file.fileno()


def open_source(path: str) -> Source:
    require_regular_file(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise ModelError("no such file", path) from None
    except IsADirectoryError:
        raise ModelError("is a directory, not a model file", path) from None
    except OSError as e:
        raise ModelError(f"cannot open: {e.strerror}", path) from None
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
        return check_model(_Lift(fmt, source).model(), path)
    except ModelError:
        raise
    except _DECODE_ERRORS as e:
        raise ModelError(f"malformed {fmt.name} flatbuffer ({type(e).__name__}: {e})", path) from None


def _text(raw) -> str | None:
    return None if raw is None else raw.decode("utf-8", "surrogateescape")


class _Hide:
    """A table accessor whose named vectors and sub-tables read as absent, so the object API's
    unpack of it skips them: the Model's and SubGraph's big vectors, which the reader lifts
    itself, and the sub-tables of a Tensor or Operator that it lifts its own, cheaper way."""

    def __init__(self, accessor, vectors: tuple[str, ...] = (), tables: tuple[str, ...] = ()):
        self._accessor = accessor
        self._absent = {name + "IsNone": True for name in vectors} | {name: None for name in tables}

    def __getattr__(self, name):
        if name in self._absent:
            value = self._absent[name]
            return lambda: value
        return getattr(self._accessor, name)


class _SlotProbe:
    """Stands in for a flatbuffers Table under a generated accessor and records which vtable
    entry the accessor reads: how the reader learns a field's slot from the bindings."""

    def __init__(self):
        self.asked: list[int] = []

    def Offset(self, vtable_offset: int) -> int:
        self.asked.append(vtable_offset)
        return 0  # "absent": the accessor returns its default without reading further


def _slot_of(accessor_cls, field: str) -> int:
    """The vtable offset of object-API field `field` (e.g. "shapeSignature") of a table."""
    method = field[0].upper() + field[1:]
    accessor = getattr(accessor_cls, method + "IsNone", None) or getattr(accessor_cls, method)
    probe = _SlotProbe()
    table = accessor_cls.__new__(accessor_cls)
    table._tab = probe
    accessor(table)
    return probe.asked[0]


class _Plain:
    """Tells, per vtable, whether a table of one kind holds only fields the IR models."""

    def __init__(self, fmt: Format, table: str):
        cls = fmt.cls(table)
        self.modeled = frozenset(_slot_of(cls, field) for field in MODELED_FIELDS[table + "T"])
        self.by_vtable: dict[int, bool] = {}

    def __call__(self, buf, pos: int) -> bool:
        vtable = pos - _I32(buf, pos)[0]
        plain = self.by_vtable.get(vtable)
        if plain is None:
            size = _U16(buf, vtable)[0]
            slots = struct.unpack_from(f"<{(size - 4) // 2}H", buf, vtable + 4)
            plain = self.by_vtable[vtable] = all(off == 0 or 4 + 2 * i in self.modeled for i, off in enumerate(slots))
        return plain


def _vector(value) -> np.ndarray | None:
    """A generated `XAsNumpy()` result: None when the vector is absent (the accessor returns 0)."""
    return value if isinstance(value, np.ndarray) else None


class _Lift:
    """One read: the file's tables, lifted into the IR."""

    def __init__(self, fmt: Format, source: Source):
        self.fmt = fmt
        self.source = source
        self.path = source.path
        self.buf = source.mapping
        self.root = fmt.cls("Model").GetRootAs(source.mapping, 0)
        self.plain_tensor = _Plain(fmt, "Tensor")
        self.plain_operator = _Plain(fmt, "Operator")
        self.empty_tables: dict[int, bool] = {}

    def model(self) -> Model:
        fmt, root, path = self.fmt, self.root, self.path
        record = fmt.cls("ModelT").InitFromObj(_Hide(root, vectors=("Subgraphs", "Buffers")))
        buffers = [self._buffer(root.Buffers(i), i) for i in range(root.BuffersLength())]
        model = Model(fmt, buffers=buffers, description=record.description, version=record.version, record=record,
                      source=self.source)
        self.model_ = model
        for oc in record.operatorCodes or []:
            code = fmt.decode_opcode(oc)
            if code not in fmt.op_names:
                raise ModelError(f"unknown {fmt.name} operator code {code}", path)
            model.opcodes.append(OpCode(fmt.op_names[code], oc.version, oc.customCode, record=oc))
        for g_index in range(root.SubgraphsLength()):
            self._graph(root.Subgraphs(g_index), g_index)
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

    def _buffer(self, b, index: int) -> Buffer:
        source = self.source
        offset = b.Offset()
        if offset > 1:  # weights stored after the flatbuffer (the >2 GB layout)
            size = b.Size()
            if offset + size > source.size:
                raise ModelError(f"buffer {index} points outside the file (offset {offset}, size {size}, file {source.size} bytes)",
                                 source.path)
            source.offset_layout = True
            return Buffer(source.array[offset:offset + size], source=offset)
        data = _vector(b.DataAsNumpy())
        if data is None:
            return Buffer()
        return Buffer(data, source=source.offset_of(data) if data.size else None)

    def _unpack(self, table: str, accessor):
        """The object-API record of one table; no unpacking for a table with no fields at all
        (empty options and quantization tables are common)."""
        tab = accessor._tab
        pos = tab.Pos
        vtable = pos - _I32(self.buf, pos)[0]
        empty = self.empty_tables.get(vtable)
        if empty is None:
            size = _U16(self.buf, vtable)[0]
            empty = self.empty_tables[vtable] = not any(struct.unpack_from(f"<{(size - 4) // 2}H", self.buf, vtable + 4))
        cls = self.fmt.cls(table + "T")
        return cls() if empty else cls.InitFromObj(accessor)

    # ---- subgraphs -----------------------------------------------------------------------
    def _graph(self, sg, g_index: int) -> None:
        fmt, path = self.fmt, self.path
        record = fmt.cls("SubGraphT").InitFromObj(_Hide(sg, vectors=("Tensors", "Operators")))
        # the IR holds the tensors and operators; the record only says whether the vectors were there
        record.tensors = None if sg.TensorsIsNone() else []
        record.operators = None if sg.OperatorsIsNone() else []
        graph = self.model_.add_graph(Graph(_text(record.name), record=record))
        where = f"subgraph {g_index}"
        for t_index in range(sg.TensorsLength()):
            graph.tensors.append(self._tensor(sg.Tensors(t_index), f"{where} tensor {t_index}"))
        tensors = graph.tensors

        def tensor_at(index, what, optional=False):
            index = int(index)
            if optional and index == -1:
                return None
            if not 0 <= index < len(tensors):
                raise ModelError(f"{where} {what} refers to tensor {index}, but the subgraph has {len(tensors)}", path)
            return tensors[index]

        for o_index in range(sg.OperatorsLength()):
            self._operator(graph, sg.Operators(o_index), f"{where} operator {o_index}", tensor_at)
        graph.inputs = [tensor_at(i, "input") for i in (record.inputs if record.inputs is not None else [])]
        graph.outputs = [tensor_at(i, "output") for i in (record.outputs if record.outputs is not None else [])]

    def _tensor(self, t, where: str) -> Tensor:
        quantization = t.Quantization()
        if quantization is not None:
            quantization = self._unpack("QuantizationParameters", quantization)
        if self.plain_tensor(self.buf, t._tab.Pos):
            record = None
            name, code, buffer = t.Name(), t.Type(), t.Buffer()
            shape, signature = _vector(t.ShapeAsNumpy()), _vector(t.ShapeSignatureAsNumpy())
        else:  # fields beyond the IR's (the converter's has_rank, sparsity, ...): unpack them all
            record = self.fmt.cls("TensorT").InitFromObj(_Hide(t, tables=("Quantization",)))
            record.quantization = quantization
            name, code, buffer, shape, signature = record.name, record.type, record.buffer, record.shape, record.shapeSignature
        if record is None and (name is None or shape is None):
            record = self.fmt.cls("TensorT")()  # the writer then knows these were absent, not empty
            record.name, record.type, record.buffer, record.shape, record.quantization = name, code, buffer, shape, quantization
        dtype = self.fmt.dtype_names.get(code)
        if dtype is None:
            raise ModelError(f"{where} has unknown type {code}", self.path)
        return Tensor(_text(name) or "", dtype, () if shape is None else shape.tolist(), self._buffer_at(buffer, where),
                      shape_signature=None if signature is None else signature.tolist(), quantization=quantization,
                      record=record)

    def _operator(self, graph: Graph, op, where: str, tensor_at) -> None:
        model = self.model_
        index = op.OpcodeIndex()
        if not 0 <= index < len(model.opcodes):
            raise ModelError(f"{where} has operator code index {index} out of range", self.path)
        inputs, outputs, inter = (_vector(op.InputsAsNumpy()), _vector(op.OutputsAsNumpy()),
                                  _vector(op.IntermediatesAsNumpy()))
        record = None
        if (any(v is not None and v.size == 0 for v in (inputs, outputs, inter))
                or not self.plain_operator(self.buf, op._tab.Pos)):
            # fields beyond the IR's: keep them all (the options are lifted apart)
            record = self.fmt.cls("OperatorT").InitFromObj(_Hide(op, tables=("BuiltinOptions",)))
            if record.largeCustomOptionsSize > 0:
                raise ModelError(f"{where} stores custom options outside the flatbuffer, which bnfold does not support", self.path)
        ins = [tensor_at(i, where, optional=True) for i in (inputs if inputs is not None else ())]
        outs = [tensor_at(i, where) for i in (outputs if outputs is not None else ())]
        ir_op = graph.add_op(model.opcodes[index], ins, outs, self._options(op), record=record)
        if inter is not None:
            ir_op.intermediates = tuple(tensor_at(i, where) for i in inter)

    def _options(self, op) -> Options | None:
        table = op.BuiltinOptions()
        name = self.fmt.options_names.get(op.BuiltinOptionsType()) if table is not None else None
        if name is None or name == "NONE":
            return None
        accessor = self.fmt.cls(name)()
        accessor.Init(table.Bytes, table.Pos)
        return Options(name, **vars(self._unpack(name, accessor)))

    # ---- signatures ----------------------------------------------------------------------
    def _signature(self, sd, s_index: int) -> Signature:
        graphs = self.model_.graphs
        if not 0 <= sd.subgraphIndex < len(graphs):
            raise ModelError(f"signature {s_index} refers to subgraph {sd.subgraphIndex}, but the model has {len(graphs)}", self.path)
        graph = graphs[sd.subgraphIndex]

        def named(maps):
            out = []
            for m in maps or []:
                if not 0 <= m.tensorIndex < len(graph.tensors):
                    raise ModelError(f"signature {s_index} names tensor {m.tensorIndex}, but its subgraph has {len(graph.tensors)}", self.path)
                out.append((m.name, graph.tensors[m.tensorIndex]))
            return out

        sig = Signature(sd.signatureKey, graph, named(sd.inputs), named(sd.outputs), record=sd)
        graph.pinned.update(t for _, t in sig.inputs + sig.outputs)
        return sig
