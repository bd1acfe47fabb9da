"""Model: subgraphs, buffers, operator codes, signatures, metadata.

Cross-references that the file stores as indices (operator code, buffer, tensor and subgraph
indices) are object references here; the writer turns them back into indices. Subgraphs are
never removed or reordered, so subgraph indices inside options (IF, WHILE, CALL_ONCE) stay valid.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .const import Buffer
from .graph import Graph, Tensor


@dataclass(eq=False)
class OpCode:
    """An operator code entry. Ops share these; `record` is the entry as read."""

    kind: str  # BuiltinOperator name, e.g. "CONV_2D"; "CUSTOM" for custom operators
    version: int = 1
    custom_code: bytes | None = None
    record: object = None

    def __repr__(self) -> str:
        custom = f" {self.custom_code!r}" if self.custom_code else ""
        return f"OpCode({self.kind}{custom} v{self.version})"


@dataclass(eq=False)
class Signature:
    key: bytes | None
    graph: Graph
    inputs: list[tuple[bytes | None, Tensor]]
    outputs: list[tuple[bytes | None, Tensor]]
    record: object = None


@dataclass(eq=False)
class Metadata:
    name: bytes | None
    buffer: Buffer
    record: object = None


@dataclass(eq=False)
class Model:
    format: object  # io.formats.Format the model was read from (or built for)
    graphs: list[Graph] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    opcodes: list[OpCode] = field(default_factory=list)
    signatures: list[Signature] = field(default_factory=list)
    metadata: list[Metadata] = field(default_factory=list)
    metadata_buffer: list[Buffer] | None = None  # the deprecated Model.metadata_buffer list
    description: bytes | None = None
    version: int = 3
    record: object = None  # the ModelT as read, for fields the IR does not model
    source: object = None  # io.reader.Source: the input file, for zero-copy writes
    changed: bool = False  # set by the pass manager; the writer drops unused entries only then

    def __post_init__(self):
        if not self.buffers:
            self.buffers.append(Buffer())  # buffer 0: the empty sentinel every model starts with

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
        return Counter(op.kind if op.kind != "CUSTOM" else f"CUSTOM({(op.opcode.custom_code or b'').decode(errors='replace')})"
                       for g in self.graphs for op in g.ops)

    def graph_index(self, graph: Graph) -> int:
        return self.graphs.index(graph)
