"""A model as Model Explorer graphs, made with its graph builder from bnfold's IR.

One graph per subgraph (id: its name, or the key of the signature it serves, or `subgraph_N`),
one node per operator (id: its position in the subgraph, label: its kind, or the custom code of a
custom operator), a `GraphInputs` and a `GraphOutputs` node, an edge per non-constant tensor an
operator reads. Constants are no nodes: they are listed with the input they feed (name, shape,
type). Every output carries its `tensor_name`, which is what node data is keyed by (the same key
Model Explorer's own TFLite adapter uses, so an overlay also applies to a .tflite opened without
this adapter). An operator naming subgraphs in its options (WHILE, IF, CALL_ONCE, ...) links to
them; the signatures, format and description are the graph's attributes.
"""

from __future__ import annotations

import numpy as np
from model_explorer import graph_builder as gb

from ..ir.graph import Graph, Op, Tensor
from ..ir.model import Model
from ..ir.ops import FUSED_ACTIVATIONS

INPUTS, OUTPUTS = "GraphInputs", "GraphOutputs"


def graph_ids(model: Model) -> list[str]:
    """Each subgraph's graph id, as Model Explorer's own TFLite adapter names it (so an overlay
    applies under either adapter): its name, else the key of the signature it serves, else
    subgraph_N (subgraph_N too when another subgraph has the same name)."""
    keys = {id(s.graph): s.key.decode(errors="replace") for s in model.signatures if s.key}
    names = [g.name or keys.get(id(g)) for g in model.graphs]
    return [n if n and names.count(n) == 1 else f"subgraph_{i}" for i, n in enumerate(names)]


def model_graphs(model: Model) -> list[gb.Graph]:
    ids = graph_ids(model)
    return [_graph(model, graph, gid, ids) for graph, gid in zip(model.graphs, ids)]


def _graph(model: Model, graph: Graph, gid: str, ids: list[str]) -> gb.Graph:
    source = {id(t): (INPUTS, str(i)) for i, t in enumerate(graph.inputs)}
    nodes = [
        gb.GraphNode(
            id=INPUTS, label=INPUTS, outputsMetadata=[_tensor_item(str(i), t) for i, t in enumerate(graph.inputs)]
        )
    ]
    for position, op in enumerate(graph.ops):
        nodes.append(_op_node(model, op, str(position), source, ids))
        for j, t in enumerate(op.outputs):
            source[id(t)] = (str(position), str(j))
    nodes.append(
        gb.GraphNode(
            id=OUTPUTS,
            label=OUTPUTS,
            incomingEdges=[_edge(source[id(t)], i) for i, t in enumerate(graph.outputs) if id(t) in source],
        )
    )
    return gb.Graph(id=gid, nodes=nodes, groupNodeAttributes={"": _graph_attributes(model, graph)})


def _op_node(model: Model, op: Op, node_id: str, source: dict, ids: list[str]) -> gb.GraphNode:
    label = op.kind
    attrs = [gb.KeyValue("index as read", "made by a pass" if op.index is None else str(op.index))]
    if op.kind == "CUSTOM":
        label = (op.opcode.custom_code or b"").decode(errors="replace") or "CUSTOM"
        attrs.append(gb.KeyValue("custom operator", label))
    attrs += [gb.KeyValue(key, value) for key, value in _options(op)]
    edges, inputs = [], []
    for i, t in enumerate(op.inputs):
        if t is None:
            continue
        inputs.append(_tensor_item(str(i), t))
        if id(t) in source:
            edges.append(_edge(source[id(t)], i))
    subgraphs = [
        ids[v]
        for k, v in _option_fields(op)
        if k.endswith("SubgraphIndex") and isinstance(v, int) and 0 <= v < len(ids)
    ]
    return gb.GraphNode(
        id=node_id,
        label=label,
        attrs=attrs,
        incomingEdges=edges,
        inputsMetadata=inputs,
        outputsMetadata=[_tensor_item(str(j), t) for j, t in enumerate(op.outputs)],
        subgraphIds=subgraphs,
    )


def _option_fields(op: Op) -> list[tuple[str, object]]:
    return list(op.options.fields().items()) if op.options is not None else []


def _options(op: Op) -> list[tuple[str, str]]:
    shown = []
    for key, value in _option_fields(op):
        if key == "fusedActivationFunction" and isinstance(value, int) and 0 <= value < len(FUSED_ACTIVATIONS):
            value = FUSED_ACTIVATIONS[value]
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        shown.append((key, str(value)))
    return shown


def _tensor_item(item_id: str, t: Tensor) -> gb.MetadataItem:
    attrs = [
        gb.KeyValue("tensor_name", t.name),
        gb.KeyValue("tensor_shape", f"{t.dtype.lower()}[{','.join(map(str, t.shape))}]"),
    ]
    if t.is_const:
        attrs.append(gb.KeyValue("constant", "yes"))
    if t.is_quantized:
        attrs.append(gb.KeyValue("quantized", "yes"))
    return gb.MetadataItem(id=item_id, attrs=attrs)


def _edge(source: tuple[str, str], target_input: int) -> gb.IncomingEdge:
    return gb.IncomingEdge(sourceNodeId=source[0], sourceNodeOutputId=source[1], targetNodeInputId=str(target_input))


def _graph_attributes(model: Model, graph: Graph) -> dict[str, str]:
    attrs = {"format": model.format.name, "schema version": str(model.version)}
    if model.description:
        attrs["description"] = model.description.decode(errors="replace")
    for sig in model.signatures:
        if sig.graph is graph:
            ends = lambda pairs: ", ".join(f"{(k or b'').decode(errors='replace')}={t.name}" for k, t in pairs)  # noqa: E731
            attrs[f"signature {(sig.key or b'').decode(errors='replace')}"] = (
                f"inputs: {ends(sig.inputs)}; outputs: {ends(sig.outputs)}"
            )
    return attrs
