"""Model: subgraphs, buffers, operator codes, signatures, metadata.

Cross-references that the file stores as indices (operator code, buffer, tensor and subgraph
indices) are object references here; the writer turns them back into indices. Subgraphs are
never removed or reordered, so subgraph indices inside options (IF, WHILE, CALL_ONCE) stay valid.
"""

from __future__ import annotations

import mmap
from collections import Counter
from typing import Any, BinaryIO, Protocol

import numpy as np

from .const import Buffer
from .graph import Graph, Tensor


class Format(Protocol):
    """What the IR and the passes ask of the format a model is in (io/formats.py: Format, the one
    implementation; the IR names it by this protocol so that it imports nothing of io/)."""

    name: str

    @property
    def op_codes(self) -> dict[str, int]: ...

    @property
    def dtype_codes(self) -> dict[str, int]: ...

    def cls(self, name: str) -> Any: ...

    def record(self, table: str) -> Any: ...


class Source:
    """The input file, kept open and mapped for the life of the model (io/reader.py opens it;
    unchanged constants are views on `array`, and the writer copies their bytes from `file`)."""

    def __init__(self, path: str, file: BinaryIO, mapping: mmap.mmap):
        self.path = path
        self.file = file
        self.mapping = mapping
        self.size = len(mapping)
        self.array = np.frombuffer(mapping, dtype=np.uint8)
        self.offset_layout = False  # True when some buffer's bytes sit after the flatbuffer

    def fileno(self) -> int:
        return self.file.fileno()


class OpCode:
    """An operator code entry. Ops share these; `record` is the entry as read. `kind` is the
    BuiltinOperator name, e.g. "CONV_2D"; "CUSTOM" for custom operators."""

    __slots__ = ("kind", "version", "custom_code", "record")

    def __init__(self, kind: str, version: int = 1, custom_code: bytes | None = None, record: object = None):
        self.kind, self.version, self.custom_code, self.record = kind, version, custom_code, record

    def __repr__(self) -> str:
        custom = f" {self.custom_code!r}" if self.custom_code else ""
        return f"OpCode({self.kind}{custom} v{self.version})"


class Signature:
    __slots__ = ("key", "graph", "inputs", "outputs", "record")

    def __init__(
        self,
        key: bytes | None,
        graph: Graph,
        inputs: list[tuple[bytes | None, Tensor]],
        outputs: list[tuple[bytes | None, Tensor]],
        record: object = None,
    ):
        self.key, self.graph, self.inputs, self.outputs, self.record = key, graph, inputs, outputs, record


class Metadata:
    __slots__ = ("name", "buffer", "record")

    def __init__(self, name: bytes | None, buffer: Buffer, record: object = None):
        self.name, self.buffer, self.record = name, buffer, record


class Model:
    """`format`: the io.formats.Format the model was read from (or built for); `record`: the
    ModelT as read, for fields the IR does not model; `source`: the Source it was read
    from, for zero-copy writes; `changed`: set by the pass manager (the writer drops unused
    entries only then)."""

    __slots__ = (
        "format",
        "graphs",
        "buffers",
        "opcodes",
        "signatures",
        "metadata",
        "metadata_buffer",
        "description",
        "version",
        "record",
        "source",
        "changed",
    )

    def __init__(
        self,
        format: Format,
        *,
        buffers: list[Buffer] | None = None,
        description: bytes | None = None,
        version: int = 3,
        record: Any = None,
        source: Source | None = None,
    ):
        self.format = format
        self.graphs: list[Graph] = []
        self.buffers: list[Buffer] = [] if buffers is None else buffers
        if not self.buffers:
            self.buffers.append(Buffer())  # buffer 0: the empty sentinel every model starts with
        self.opcodes: list[OpCode] = []
        self.signatures: list[Signature] = []
        self.metadata: list[Metadata] = []
        self.metadata_buffer: list[Buffer] | None = None  # the deprecated Model.metadata_buffer list
        self.description, self.version, self.record, self.source = description, version, record, source
        self.changed = False

    @property
    def empty_buffer(self) -> Buffer:
        return self.buffers[0]

    def add_graph(self, graph: Graph) -> Graph:
        graph.model = self
        self.graphs.append(graph)
        return graph

    def opcode(self, kind: str, version: int = 1, custom_code: bytes | None = None) -> OpCode:
        """The operator code entry for `kind`, reusing an existing one when there is one."""
        for oc in self.opcodes:
            if oc.kind == kind and oc.custom_code == custom_code and oc.version >= version:
                return oc
        oc = OpCode(kind, version, custom_code)
        self.opcodes.append(oc)
        return oc

    def op_counts(self) -> Counter:
        return Counter(
            op.kind if op.kind != "CUSTOM" else f"CUSTOM({(op.opcode.custom_code or b'').decode(errors='replace')})"
            for g in self.graphs
            for op in g.ops
        )

    def graph_index(self, graph: Graph) -> int:
        return self.graphs.index(graph)
