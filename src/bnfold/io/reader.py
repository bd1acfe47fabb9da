"""Flatbuffer file -> IR.

The file is memory-mapped read-only and unpacked with the bindings' object API; every Buffer's
bytes stay a read-only numpy view of the mapping (inline vectors and offset buffers alike), and
each Buffer remembers where its bytes sit in the file so the writer can copy them file to file.
The format comes from the file identifier, never from the extension.
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
from .formats import Format, format_from_identifier
from ..ir.check import check_model
from .paths import require_regular_file
from .validate import validate

# What a corrupt flatbuffer makes the generated unpacking code raise.
_DECODE_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError, KeyError, AttributeError,
                  UnicodeDecodeError, RecursionError, MemoryError)


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
        record = fmt.cls("ModelT").InitFromObj(fmt.cls("Model").GetRootAs(source.mapping, 0))
        return check_model(_lift(record, fmt, source), path)
    except ModelError:
        raise
    except _DECODE_ERRORS as e:
        raise ModelError(f"malformed {fmt.name} flatbuffer ({type(e).__name__}: {e})", path) from None


def _text(raw) -> str | None:
    return None if raw is None else raw.decode("utf-8", "surrogateescape")


def _lift(record, fmt: Format, source: Source) -> Model:
    path = source.path
    model = Model(fmt, buffers=[_lift_buffer(b, i, source) for i, b in enumerate(record.buffers or [])],
                  description=record.description, version=record.version, record=record, source=source)
    if not model.buffers:
        model.buffers.append(Buffer())

    def buffer_at(index: int, what: str) -> Buffer:
        if not 0 <= index < len(model.buffers):
            raise ModelError(f"{what} refers to buffer {index}, but the model has {len(model.buffers)}", path)
        return model.buffers[index]

    for oc in record.operatorCodes or []:
        code = fmt.decode_opcode(oc)
        if code not in fmt.op_names:
            raise ModelError(f"unknown {fmt.name} operator code {code}", path)
        model.opcodes.append(OpCode(fmt.op_names[code], oc.version, oc.customCode, record=oc))

    for g_index, sg in enumerate(record.subgraphs or []):
        graph = model.add_graph(Graph(_text(sg.name), record=sg))
        where = f"subgraph {g_index}"
        for t_index, t in enumerate(sg.tensors or []):
            dtype = fmt.dtype_names.get(t.type)
            if dtype is None:
                raise ModelError(f"{where} tensor {t_index} has unknown type {t.type}", path)
            shape = () if t.shape is None else tuple(int(d) for d in t.shape)
            signature = None if t.shapeSignature is None else tuple(int(d) for d in t.shapeSignature)
            graph.tensors.append(Tensor(_text(t.name) or "", dtype, shape, buffer_at(t.buffer, f"{where} tensor {t_index}"),
                                        shape_signature=signature, quantization=t.quantization, record=t))

        def tensor_at(index, what, optional=False):
            index = int(index)
            if optional and index == -1:
                return None
            if not 0 <= index < len(graph.tensors):
                raise ModelError(f"{where} {what} refers to tensor {index}, but the subgraph has {len(graph.tensors)}", path)
            return graph.tensors[index]

        for o_index, op in enumerate(sg.operators or []):
            what = f"operator {o_index}"
            if not 0 <= op.opcodeIndex < len(model.opcodes):
                raise ModelError(f"{where} {what} has operator code index {op.opcodeIndex} out of range", path)
            if op.largeCustomOptionsSize > 0:
                raise ModelError(f"{where} {what} stores custom options outside the flatbuffer, which bnfold does not support", path)
            options = None
            if op.builtinOptions is not None:
                options = Options(type(op.builtinOptions).__name__[:-1], **vars(op.builtinOptions))
            ins = [tensor_at(i, what, optional=True) for i in (op.inputs if op.inputs is not None else [])]
            outs = [tensor_at(i, what) for i in (op.outputs if op.outputs is not None else [])]
            inter = [tensor_at(i, what) for i in (op.intermediates if op.intermediates is not None else [])]
            ir_op = graph.add_op(model.opcodes[op.opcodeIndex], ins, outs, options, record=op)
            ir_op.intermediates = tuple(inter)
        graph.inputs = [tensor_at(i, "input") for i in (sg.inputs if sg.inputs is not None else [])]
        graph.outputs = [tensor_at(i, "output") for i in (sg.outputs if sg.outputs is not None else [])]

    for s_index, sd in enumerate(record.signatureDefs or []):
        if not 0 <= sd.subgraphIndex < len(model.graphs):
            raise ModelError(f"signature {s_index} refers to subgraph {sd.subgraphIndex}, but the model has {len(model.graphs)}", path)
        graph = model.graphs[sd.subgraphIndex]

        def named(maps):
            out = []
            for m in maps or []:
                if not 0 <= m.tensorIndex < len(graph.tensors):
                    raise ModelError(f"signature {s_index} names tensor {m.tensorIndex}, but its subgraph has {len(graph.tensors)}", path)
                out.append((m.name, graph.tensors[m.tensorIndex]))
            return out

        sig = Signature(sd.signatureKey, graph, named(sd.inputs), named(sd.outputs), record=sd)
        graph.pinned.update(t for _, t in sig.inputs + sig.outputs)
        model.signatures.append(sig)

    for m in record.metadata or []:
        model.metadata.append(Metadata(m.name, buffer_at(m.buffer, "metadata"), record=m))
    if record.metadataBuffer is not None:
        model.metadata_buffer = [buffer_at(int(i), "metadata_buffer") for i in record.metadataBuffer]
    return model


def _lift_buffer(b, index: int, source: Source) -> Buffer:
    if b.offset > 1:  # weights stored after the flatbuffer (the >2 GB layout)
        if b.offset + b.size > source.size:
            raise ModelError(f"buffer {index} points outside the file (offset {b.offset}, size {b.size}, file {source.size} bytes)",
                             source.path)
        source.offset_layout = True
        return Buffer(source.array[b.offset:b.offset + b.size], source=b.offset)
    if b.data is None:
        return Buffer()
    data = b.data if isinstance(b.data, np.ndarray) else np.asarray(b.data, dtype=np.uint8)
    return Buffer(data, source=source.offset_of(data) if data.size else None)
