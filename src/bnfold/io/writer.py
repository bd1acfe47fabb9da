"""IR -> flatbuffer file, in one pass over the output.

The tables (operator codes, subgraphs, tensors, operators, signatures, metadata) are packed into a
small builder, byte for byte as the bindings' object API packs them: io/tables.py's records for
what the IR models, the object API's own for the tables read with fields it does not model.
Buffer *bytes* never go through the builder: each Buffer table gets a placeholder field, and after
the tables are finished the data region is streamed behind them and the placeholders are patched:

    [ root | tables ... | pad | len | data0 | pad | len | data1 | ... ]     standard layout
    [ root | tables ... | pad | data0 | pad | data1 | ... ]                  offset-buffer layout

In the standard layout the patched field is the data vector's uoffset (vectors may live anywhere
after the field that points at them); in the offset layout it is Buffer.offset, with Buffer.size
set. Data is 16-byte aligned (the schema's force_align). Unchanged buffers are copied file to file
in the kernel (io/copier.py: in a thread beside the writer), so neither their bytes nor the
input's pages pass through Python.

The standard layout is used unless asked otherwise or the file would reach 2 GB.
"""

from __future__ import annotations

import copy
import os
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple, NoReturn

import numpy as np

from ..errors import ModelError
from ..ir.const import Buffer
from ..ir.invariants import gate
from ..ir.model import Model
from .atomic import atomic_file
from .copier import Copier, copy_range
from .formats import MODELED_FIELDS, Format
from .gcpause import paused_gc
from .transcode import NotRepresentable, counterpart, same_value, transcode

if TYPE_CHECKING:
    import flatbuffers

TWO_GB = 2**31 - 1
DATA_ALIGN = 16
# Buffer table slots (same in both schemas): data:[ubyte] (force_align 16), offset:ulong, size:ulong.
BUFFER_FIELDS, SLOT_DATA, SLOT_OFFSET, SLOT_SIZE = 3, 0, 1, 2
BUFFER_LOCATION = b"buffer_location"  # metadata the TFLite converter writes in the offset layout
OUTSIDE = b"outside flatbuffers"


def _align(n: int, a: int = DATA_ALIGN) -> int:
    return (n + a - 1) // a * a


class _BufferSlot:
    """Stands in for a BufferT during Pack: writes the table with a field to patch later."""

    def __init__(self, buffer: Buffer, external: bool):
        self.buffer = buffer
        self.external = external and buffer.nbytes > 0
        self.field: int | None = None  # distance of the patch field from the end of the builder

    def Pack(self, builder: flatbuffers.Builder) -> int:
        builder.StartObject(BUFFER_FIELDS)
        if self.external:
            builder.PrependUint64Slot(SLOT_SIZE, self.buffer.nbytes, 0)
            builder.PrependUint64Slot(SLOT_OFFSET, 1, 0)  # non-default placeholder, patched later
            self.field = builder.Offset()
        elif self.buffer.has_data:
            builder.Prep(4, 0)
            builder.PlaceUOffsetT(0)
            builder.Slot(SLOT_DATA)
            self.field = builder.Offset()
        return builder.EndObject()


class _Shared:
    """Stands in for a record during Pack: a table equal to one already written (an
    empty quantization table, the options of every identical ADD) is written once and referenced
    from each place that holds it. Flatbuffers allow a table to be referenced many times; the
    builder's per-table cost is most of the writing time on op-heavy graphs."""

    def __init__(self, record):
        self.record = record
        self.offset = None

    def Pack(self, builder: flatbuffers.Builder) -> int:
        if self.offset is None:
            self.offset = self.record.Pack(builder)
        return self.offset


_SHAREABLE = frozenset({int, float, bool, type(None)})


def _share_key(record):
    """A key equal for tables with equal fields, or None when a field is not a plain scalar."""
    fields = vars(record)
    values = tuple(fields.values())
    types = tuple(map(type, values))
    if not _SHAREABLE.issuperset(types):
        return None
    if float in types:  # compared by their bytes: -0.0 is not 0.0 here
        values = tuple(struct.pack("<d", v) if type(v) is float else v for v in values)
    # the table by its name: a record of io/tables.py and the object API's alike
    return type(record).__name__, tuple(fields), types, values


class WriteInfo(NamedTuple):
    path: str
    format: str
    external: bool
    size: int
    unchanged: bool = False  # the output is the input's bytes (copied, or left in place)
    written: bool = True  # False when the output is the input file itself, left untouched


def save_model(
    model: Model, path: str, fmt: Format, *, external: bool = False, keep_unchanged: bool = False
) -> WriteInfo:
    """Write `model` to `path` atomically (io/atomic.py: a temporary file beside it, then rename).

    With `keep_unchanged`, a model no pass changed that would be written in its own format and
    layout is not re-serialized: the output is a copy of the input's bytes (byte-identical, which
    keeps caches and content-addressed stores valid), and nothing at all is written when the
    output is the input file."""
    source = model.source if keep_unchanged and is_unchanged(model, fmt, external) else None  # to copy as it is
    if source is not None and _same_file(source.path, path):
        return WriteInfo(path, fmt.name, source.offset_layout, source.size, unchanged=True, written=False)
    if source is None:
        gate(model, path)  # the last gate: before any file (even a temporary one) exists
    try:
        with atomic_file(path) as out:
            if source is not None:
                _Sink(out, source).copy_all()
                info = WriteInfo(path, fmt.name, source.offset_layout, source.size, unchanged=True)
            else:
                info = serialize(model, out, fmt, external=external)
    except ModelError as e:
        if e.path is None:
            e.path = path
        raise
    return info._replace(path=path)


def is_unchanged(model: Model, fmt: Format, external: bool) -> bool:
    """True when writing `model` would only reproduce its input file: nothing changed it, the
    format is the input's, and the layout asked for (offset buffers or not) is the input's."""
    source = model.source
    if source is None or model.changed or fmt is not model.format:
        return False
    wants_offsets = external or source.size >= TWO_GB
    return wants_offsets == source.offset_layout


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def serialize(model: Model, out, fmt: Format, *, external: bool = False) -> WriteInfo:
    """Write the model to the open binary file `out` (`save_model` and `Optimized.data` put the
    model through the output gate, ir/invariants.py: check_output, first)."""
    with paused_gc():
        return _serialize(model, out, fmt, external)


def _serialize(model: Model, out, fmt: Format, external: bool) -> WriteInfo:
    plan = _Plan(model, fmt)
    data_bytes = sum(_align(b.nbytes) + DATA_ALIGN for b in plan.buffers)
    if not external and data_bytes + plan.tables_estimate >= TWO_GB:
        external = True  # a standard flatbuffer cannot address this much
    plan.set_layout(external)
    from .builder import Builder  # only serializing needs flatbuffers (3 ms): a copied model does not

    builder = Builder(plan.tables_guess)
    slots = [_BufferSlot(b, external and not plan.is_metadata(b)) for b in plan.buffers]
    root = plan.model_record(slots).Pack(builder)
    builder.Finish(root, file_identifier=fmt.identifier)
    tables_size = builder.Offset()
    head = builder.Head()
    # lay out the data region and patch the placeholders; inline data vectors come before every
    # offset buffer, so their 32-bit uoffsets stay inside the first 2 GB whatever the model's size
    cursor = tables_size
    pieces: list[tuple[int, bytes | None, Buffer]] = []  # (where, length prefix, data) in file order
    inline_end = tables_size
    for slot in sorted(slots, key=lambda s: s.external):  # stable: file order within each group
        if slot.field is None:
            continue
        field_pos = tables_size - slot.field
        if slot.external:
            start = _align(cursor)
            struct.pack_into("<Q", builder.Bytes, head + field_pos, start)
            pieces.append((start, None, slot.buffer))
        else:
            start = _align(cursor + 4)
            struct.pack_into("<I", builder.Bytes, head + field_pos, start - 4 - field_pos)
            pieces.append((start, struct.pack("<I", slot.buffer.nbytes), slot.buffer))
        cursor = start + slot.buffer.nbytes
        if not slot.external:
            inline_end = cursor
    if inline_end >= TWO_GB or (not external and cursor >= TWO_GB):
        raise ModelError("model does not fit a 2 GB flatbuffer; write it with --external-buffers")
    with _Sink(out, model.source) as sink:
        sink.copy_behind(
            [
                (buffer.source, buffer.nbytes, at)
                for at, _, buffer in pieces
                if buffer.source is not None and sink.copied(buffer)
            ]
        )
        sink.write(memoryview(builder.Bytes)[head:])
        for start, prefix, buffer in pieces:
            sink.pad_to(start - (4 if prefix else 0))
            if prefix:
                sink.write(prefix)
            sink.write_buffer(buffer)
        sink.flush()
    return WriteInfo("", fmt.name, external, sink.position)


class _Sink:
    """Sequential output that computes folded weights (a Buffer's pending Scaled) block by block
    into one reused scratch array, while a background copier (io/copier.py) copies the unchanged
    input bytes file to file into their places: a `with` block, whose end waits for the copier.
    An output that is not a seekable file (io.BytesIO, a pipe) gets the copied bytes written."""

    COPY_THRESHOLD = 1 << 16
    # folded weights are computed in blocks of this many bytes: 64 KB blocks took twice as long (the
    # ufunc costs per call); 256 KB to 2 MB within noise of each other and of computing them whole
    SCRATCH = 1 << 20

    def __init__(self, out, source):
        self.out = out
        self.source = source
        self.position = 0
        self.pending = bytearray()
        self.scratch: np.ndarray | None = None
        self.copier: Copier | None = None
        self.base = 0  # the output file's offset at position 0

    def __enter__(self) -> _Sink:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if self.copier is not None:
            self.copier.finish(cancel=kind is not None)

    def copied(self, buffer: Buffer) -> bool:
        """Whether the buffer's bytes are to be copied from the input file rather than written."""
        return buffer.nbytes >= self.COPY_THRESHOLD and buffer.source is not None and self.source is not None

    def copy_behind(self, copies: list[tuple[int, int, int]]) -> None:
        """Have a background copier copy these (input offset, size, position) while the rest is
        written, when the output is a seekable file and the kernel copies; otherwise write_buffer
        writes their bytes in sequence."""
        dst = self._output_fd()
        if not copies or dst is None or not hasattr(os, "copy_file_range") or not self.out.seekable():
            return
        self.base = self.out.tell()
        jobs = [(offset, n, self.base + position) for offset, n, position in copies]
        self.copier = Copier(self.source.fileno(), dst, memoryview(self.source.array), jobs)

    def write(self, data) -> None:
        self.pending += data
        self.position += len(data)
        if len(self.pending) >= 1 << 20:
            self.flush()

    def pad_to(self, position: int) -> None:
        if position > self.position:
            self.write(bytes(position - self.position))

    def flush(self) -> None:
        if self.pending:
            self.out.write(self.pending)
            self.pending = bytearray()

    def skip(self, n: int) -> None:
        """Move past `n` bytes the copier writes."""
        self.flush()
        self.position += n
        self.out.seek(self.base + self.position)

    def write_buffer(self, buffer: Buffer) -> None:
        n = buffer.nbytes
        if self.copier is not None and self.copied(buffer):
            self.skip(n)
            return
        pieces: Iterable[memoryview]
        if buffer.pending is not None:
            if self.scratch is None:
                self.scratch = np.empty(self.SCRATCH, np.uint8)
            pieces = buffer.pending.chunks(self.scratch)
        else:
            data = buffer.data  # None only for a buffer of no bytes
            pieces = () if data is None else (data.data,)
        if n >= 1 << 20:
            self.flush()
            for piece in pieces:
                self.out.write(piece)
            self.position += n
        else:
            for piece in pieces:
                self.write(piece)

    def copy_all(self) -> None:
        """The whole input file, file to file, in sequence (io/copier.py says why)."""
        self.out.flush()
        dst = self._output_fd()
        done = 0 if dst is None else copy_range(self.source.fileno(), dst, 0, self.source.size)
        self.out.write(memoryview(self.source.array[done:]))
        self.position = self.source.size

    def _output_fd(self) -> int | None:
        try:
            return self.out.fileno()
        except (OSError, ValueError):  # no file: io.BytesIO (api.optimize's bytes) and the like
            return None


class _Plan:
    """Index assignment and record building for one write."""

    def __init__(self, model: Model, fmt: Format):
        self.model = model
        self.fmt = fmt
        self.same = fmt is model.format
        self.buffers = self._collect_buffers()
        self.buffer_index = {id(b): i for i, b in enumerate(self.buffers)}
        self.opcodes = self._collect_opcodes()
        self.opcode_index = {id(oc): i for i, oc in enumerate(self.opcodes)}
        self.metadata = list(model.metadata)
        self.shared: dict[tuple, _Shared] = {}
        n_tensors = sum(len(g.tensors) for g in model.graphs)
        n_ops = sum(len(g.ops) for g in model.graphs)
        small = sum(b.nbytes for b in self.buffers if b.nbytes < 64)
        # an upper bound of the tables' size, for choosing the layout before writing
        self.tables_estimate = 4096 + 512 * n_tensors + 256 * n_ops + 64 * len(self.buffers) + 2 * small
        # the builder's first allocation: about what the tables take (it doubles if short), since
        # the bound above is several times too much and every byte of it is resident
        names = sum(len(t.name) for g in model.graphs for t in g.tensors)
        self.tables_guess = 4096 + names + 64 * n_tensors + 64 * n_ops + 24 * len(self.buffers) + 2 * small

    # ---- what gets written ---------------------------------------------------------------
    def _collect_buffers(self) -> list[Buffer]:
        model = self.model
        used: dict[int, Buffer] = {}

        def use(b):
            if b is not None:
                used.setdefault(id(b), b)

        for g in model.graphs:
            for t in g.tensors:
                use(t.buffer)
        for m in model.metadata:
            use(m.buffer)
        for b in model.metadata_buffer or []:
            use(b)
        if model.changed:
            kept = [b for i, b in enumerate(model.buffers) if i == 0 or id(b) in used]
        else:
            kept = list(model.buffers)
        known = {id(b) for b in kept}
        kept += [b for key, b in used.items() if key not in known]
        return kept

    def _collect_opcodes(self):
        model = self.model
        used = {id(op.opcode): op.opcode for g in model.graphs for op in g.ops}
        kept = [oc for oc in model.opcodes if id(oc) in used or not model.changed]
        known = {id(oc) for oc in kept}
        kept += [oc for key, oc in used.items() if key not in known]
        return kept

    def is_metadata(self, buffer: Buffer) -> bool:
        return any(m.buffer is buffer for m in self.metadata)

    def set_layout(self, external: bool) -> None:
        """Keep the buffer_location metadata truthful when the layout changes."""
        source_external = bool(self.model.source) and any(
            getattr(m, "name", None) == BUFFER_LOCATION
            and m.buffer.data is not None
            and bytes(m.buffer.data).rstrip(b"\0") == OUTSIDE
            for m in self.metadata
        )
        if external and not source_external:
            from ..ir.model import Metadata

            self.metadata = [m for m in self.metadata if m.name != BUFFER_LOCATION]
            buffer = Buffer.from_array(np.frombuffer(OUTSIDE, dtype=np.uint8))
            self.metadata.append(Metadata(BUFFER_LOCATION, buffer))
            self.buffers.append(buffer)
            self.buffer_index[id(buffer)] = len(self.buffers) - 1
        elif not external and source_external:
            self.metadata = [m for m in self.metadata if m.name != BUFFER_LOCATION]

    # ---- records -------------------------------------------------------------------------
    def _base(self, record, cls_name: str):
        """A fresh target-format record carrying every field of `record` (or defaults); the
        fields the IR models are the caller's to set, so they are not translated here."""
        if record is None:
            return self.fmt.record(cls_name[:-1])
        if self.same:
            return copy.copy(record)
        try:
            return transcode(record, self.fmt, shallow=MODELED_FIELDS.get(cls_name, frozenset()))
        except NotRepresentable as e:
            raise ModelError(f"cannot be written as {self.fmt.name}: {e}") from None

    def _refuse(self, what: str) -> NoReturn:
        raise ModelError(f"cannot be written as {self.fmt.name}: {what}")

    def model_record(self, slots):
        model = self.model
        rec = self._base(model.record, "ModelT")
        rec.version = model.version if self.same else self.fmt.schema_version
        rec.description = model.description
        rec.operatorCodes = [self._opcode_record(oc) for oc in self.opcodes]
        rec.subgraphs = [self._graph_record(g) for g in model.graphs]
        rec.buffers = slots
        if model.metadata_buffer is not None:
            rec.metadataBuffer = [self.buffer_index[id(b)] for b in model.metadata_buffer]
        original = model.record
        rec.metadata = _list_or_none(self._metadata_records(), original and original.metadata)
        rec.signatureDefs = _list_or_none(
            [self._signature_record(s) for s in model.signatures], original and original.signatureDefs
        )
        return rec

    def _opcode_record(self, oc):
        code = self.fmt.op_codes.get(oc.kind)
        if code is None:
            self._refuse(f"operator {oc.kind} does not exist in {self.fmt.name}")
        rec = oc.record
        if (
            self.same
            and rec is not None
            and self.fmt.decode_opcode(rec) == code
            and rec.version == oc.version
            and rec.customCode == oc.custom_code
        ):
            return rec
        return self.fmt.encode_opcode(code, oc.custom_code, oc.version)

    def _metadata_records(self):
        out = []
        for m in self.metadata:
            rec = self._base(m.record, "MetadataT")
            rec.name = m.name
            rec.buffer = self.buffer_index[id(m.buffer)]
            out.append(rec)
        return out

    def _graph_record(self, graph):
        index = {id(t): i for i, t in enumerate(graph.tensors)}

        def idx(t):
            if t is None:
                return -1
            try:
                return index[id(t)]
            except KeyError:
                raise ModelError(f"internal: tensor {t.name!r} is used but not in subgraph {graph.name!r}") from None

        rec = self._base(graph.record, "SubGraphT")
        rec.name = None if graph.name is None else graph.name.encode("utf-8", "surrogateescape")
        rec.tensors = _list_or_none(_Records(graph.tensors, self._tensor_record), graph.record and graph.record.tensors)
        original = graph.record
        rec.inputs = _indices([idx(t) for t in graph.inputs], original and original.inputs)
        rec.outputs = _indices([idx(t) for t in graph.outputs], original and original.outputs)
        rec.operators = _list_or_none(
            _Records(graph.ops, lambda op: self._op_record(op, idx)), original and original.operators
        )
        return rec

    def _tensor_record(self, t):
        rec = self._base(t.record, "TensorT")
        original = t.record
        rec.name = t.name.encode("utf-8", "surrogateescape")
        code = self.fmt.dtype_codes.get(t.dtype)
        if code is None:
            self._refuse(f"tensor {t.name!r} has type {t.dtype}, which {self.fmt.name} does not have")
        rec.type = code
        if original is None or _as_tuple(original.shape) != t.shape:
            rec.shape = np.array(t.shape, dtype=np.int32)
        if original is None or _as_tuple(original.shapeSignature, None) != t.shape_signature:
            rec.shapeSignature = None if t.shape_signature is None else np.array(t.shape_signature, dtype=np.int32)
        rec.buffer = self.buffer_index[id(t.buffer)] if t.buffer is not None else 0
        if t.quantization is not (original.quantization if original is not None else None) or not self.same:
            rec.quantization = self._convert(t.quantization)
        rec.quantization = self._shared(rec.quantization)
        return rec

    def _op_record(self, op, idx):
        rec = self._base(op.record, "OperatorT")
        rec.opcodeIndex = self.opcode_index[id(op.opcode)]
        original = op.record
        rec.inputs = _indices([idx(t) for t in op.inputs], original and original.inputs)
        rec.outputs = _indices([idx(t) for t in op.outputs], original and original.outputs)
        rec.intermediates = _indices([idx(t) for t in op.intermediates], original and original.intermediates)
        if op.options is None:
            rec.builtinOptionsType, rec.builtinOptions = 0, None
        else:
            code = self.fmt.options_codes.get(op.options.type)
            if code is None:
                self._refuse(f"{op.options.type} does not exist in {self.fmt.name}")
            options = self.fmt.record(op.options.type)
            defaults = None
            for name, value in op.options.fields().items():
                name = counterpart(op.options.type, name, options)
                if not hasattr(options, name):
                    defaults = defaults or self.model.format.record(op.options.type)
                    if same_value(value, getattr(defaults, name, None)):
                        continue  # a field the target lacks, at its default: nothing is lost
                    self._refuse(f"{op.options.type}.{name} does not exist in {self.fmt.name}")
                setattr(options, name, self._convert(value))
            rec.builtinOptionsType, rec.builtinOptions = code, self._shared(options)
        return rec

    def _shared(self, record):
        """One written table for all equal ones (see _Shared); other records as they are."""
        key = None if record is None else _share_key(record)
        if key is None:
            return record
        shared = self.shared.get(key)
        if shared is None:
            shared = self.shared[key] = _Shared(record)
        return shared

    def _signature_record(self, sig):
        graph_index = self.model.graph_index(sig.graph)
        index = {id(t): i for i, t in enumerate(sig.graph.tensors)}
        rec = self._base(sig.record, "SignatureDefT")
        rec.signatureKey = sig.key
        rec.subgraphIndex = graph_index
        rec.inputs = self._tensor_maps(sig.inputs, index, sig.record and sig.record.inputs)
        rec.outputs = self._tensor_maps(sig.outputs, index, sig.record and sig.record.outputs)
        return rec

    def _tensor_maps(self, named, index, original):
        old = original or []
        return _list_or_none(
            [
                self._tensor_map(name, index[id(t)], old[i] if i < len(old) else None)
                for i, (name, t) in enumerate(named)
            ],
            original,
        )

    def _tensor_map(self, name, tensor_index, record):
        rec = self._base(record, "TensorMapT")
        rec.name = name
        rec.tensorIndex = tensor_index
        return rec

    def _convert(self, value):
        if self.same:
            return value
        try:
            return transcode(value, self.fmt)
        except NotRepresentable as e:
            raise ModelError(f"cannot be written as {self.fmt.name}: {e}") from None


class _Records:
    """The records of a subgraph's tensors or operators, each made when Pack asks for it (Pack
    reads each once, in order) and dropped once packed, so a graph's records never all exist at
    once: a quarter of the peak memory of writing a 144k-operator graph otherwise."""

    def __init__(self, items: list, make):
        self.items = items
        self.make = make

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        return self.make(self.items[i])


def _list_or_none(items, original):
    """An empty list is written as an absent vector when the input had it absent."""
    return None if not items and original is None else items


def _indices(values: list[int], original):
    if not values and original is None:
        return None
    return np.array(values, dtype=np.int32)


def _as_tuple(value, empty=()):
    if value is None:
        return empty
    return tuple(value.tolist() if isinstance(value, np.ndarray) else (int(v) for v in value))
