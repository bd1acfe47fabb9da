"""The report's skip list: one entry for every batch-norm candidate left in the output, and nothing else.

Passes say why they refuse something wherever they meet it (report.Refusal). At the end of a run
the manager turns what they said into the skip list by construction:

* every candidate left in the output model (candidates.py) gets exactly one entry; no other op
  gets one (a pass's refusal about a RELU or a residual ADD is not about a batch norm);
* a pass refusing a chain refuses all of it, so what passes said about any op of a chain applies
  to every candidate of that chain (candidates.chains: also a MUL whose constant varies along two
  axes, which is no candidate but stops the fold of the ADD after it);
* an entry keeps each pass's reason (`reasons`: pass -> reason) and one `reason`, the most
  specific: the last pass, in run order, that spoke (later passes are the ones trying what earlier
  ones could not take), unless its reason hands the candidate to another pass that also spoke
  (names it);
* a candidate no pass said anything about gets a reason computed from where it sits (`pass` is
  None then): a constant or data type no fold reads, a layer's output on the way read elsewhere,
  the pass that would fold it not run, no conv-like layer on either side, or, failing those, its
  neighbours.

Entries describe ops by kind, output tensor name and position as read (report.describe); `chain`
lists the chain the op belongs to.

Apart from the skip list, `transposes_left` gives every TRANSPOSE left in the output one entry
(the report's `transposes`): the reason of the last transpose pass, in run order, that spoke about
it in the final round (they speak about every TRANSPOSE they leave), or that none ran.
"""

from __future__ import annotations

from ..ir.graph import Graph, Op
from ..ir.model import Model
from ..ir.ops import LAYERS
from .candidates import Candidate, candidate, chains, dtype_refusal, name_op, sinks, source
from .report import Said, describe

FORWARD_PASSES = ("fuse_preactivation_batchnorm", "fuse_batchnorm_forward")
TRANSPOSE_PASS = "remove_redundant_transpose"
CONCAT_PASS = "fuse_batchnorm_with_concat"
ENTRY_KEYS = ("subgraph", "at", "pass", "reason", "reasons", "chain")  # a pass's details never replace these


def explain(model: Model, said: list[Said], passes: list[str]) -> list[dict]:
    """The skip list of a run over `model` (as it is now), from what `passes` said in the final round."""
    by_op: dict[int, list[Said]] = {}
    for s in said:
        by_op.setdefault(id(s.op), []).append(s)
    entries = []
    for gi, graph in enumerate(model.graphs):
        for chain in chains(graph):
            heard = [s for op in chain for s in by_op.get(id(op), [])]
            entries.extend(_entries(gi, graph, chain, heard, passes))
    return entries


def transposes_left(model: Model, said: list[Said], passes: list[str]) -> list[dict]:
    """One entry per TRANSPOSE in `model` (as it is now): why it stays."""
    heard: dict[int, Said] = {}
    for s in sorted(said, key=lambda s: passes.index(s.pass_name) if s.pass_name in passes else -1):
        if s.op.kind == "TRANSPOSE":
            heard[id(s.op)] = s  # the last pass in run order wins
    entries = []
    for gi, graph in enumerate(model.graphs):
        for op in graph.ops:
            if op.kind != "TRANSPOSE":
                continue
            last = heard.get(id(op))
            reason = (
                last.record["reason"]
                if last
                else f"{TRANSPOSE_PASS}, which moves transposes until they cancel, was not run"
            )
            entries.append(
                {"subgraph": gi, "at": describe(op), "pass": last.pass_name if last else None, "reason": reason}
            )
    return entries


def _entries(gi: int, graph: Graph, chain: list[Op], heard: list[Said], passes: list[str]) -> list[dict]:
    reasons: dict[str, str] = {}
    details: dict = {}
    for s in sorted(heard, key=lambda s: passes.index(s.pass_name) if s.pass_name in passes else -1):
        text = s.record["reason"]
        known = reasons.get(s.pass_name)
        reasons[s.pass_name] = text if known is None or text in known.split("; ") else f"{known}; {text}"
        details.update({k: v for k, v in s.record.items() if k not in ENTRY_KEYS})
    chosen = _most_specific(reasons)
    found = [c for c in map(candidate, chain) if c is not None]
    reason = reasons[chosen] if chosen else position_reason(graph, chain, found, passes)
    members = [describe(op) for op in chain]
    return [
        {
            "subgraph": gi,
            "at": describe(c.op),
            "pass": chosen,
            "reason": reason,
            "reasons": reasons,
            "chain": members,
            **details,
        }
        for c in found
    ]


def _most_specific(reasons: dict[str, str]) -> str | None:
    """The last pass that spoke, unless its reason names another pass that spoke (it defers)."""
    spoke = list(reasons)
    for name in reversed(spoke):
        if not any(other != name and other in reasons[name] for other in spoke):
            return name
    return spoke[-1] if spoke else None


def position_reason(graph: Graph, chain: list[Op], found: list[Candidate], passes: list[str]) -> str:
    """Why a chain (its candidates `found`) no pass spoke about stays, from where it sits and
    which passes ran."""
    problem = next(filter(None, map(dtype_refusal, found)), None)
    if problem:
        return problem
    producer, shared = source(graph, chain)
    readers, observed = sinks(graph, chain)
    where = _between(producer, readers, observed)
    if producer is not None and (producer.kind in LAYERS or producer.kind == "CONCATENATION") and shared:
        return (
            f"the {producer.kind} output on the way to it has other readers or is a graph output, which must "
            f"keep the unscaled value ({where})"
        )
    if producer is not None and producer.kind in LAYERS and LAYERS[producer.kind].backward_pass not in passes:
        fold = LAYERS[producer.kind].backward_pass
        return f"{fold}, which folds it into the {producer.kind} before it, was not run ({where})"
    if producer is not None and producer.kind == "CONCATENATION" and CONCAT_PASS not in passes:
        return f"{CONCAT_PASS}, which folds it into the layers before the CONCATENATION, was not run ({where})"
    layer_readers = [u for u in readers if u.kind in LAYERS and LAYERS[u.kind].forward]
    if layer_readers and not any(p in passes for p in FORWARD_PASSES):
        return f"{' and '.join(FORWARD_PASSES)}, which fold it into the layers reading it, were not run ({where})"
    if (producer is None or producer.kind not in LAYERS) and not any(u.kind in LAYERS for u in readers):
        return f"no conv-like layer produces its input or reads its result, directly or through layout ops ({where})"
    return f"no pass that ran matched it as a batch norm ({where})"


def _between(producer: Op | None, readers: list[Op], observed: bool) -> str:
    read = [name_op(u) for u in readers] + (["the graph output"] if observed else [])
    return f"it sits between {name_op(producer)} and {', '.join(read) or 'nothing'}"


# ---- listing the candidates of any model (bnfold inspect --leftovers) -------------------------


def listing(model: Model, report: dict | None = None) -> tuple[list[dict], list[tuple]]:
    """(every candidate of `model` with where it sits — and, given the report of the optimize run
    that wrote `model`, why it stayed —, the report's entries that name no candidate of `model`
    as (subgraph, kind, output)). Report entries are matched by subgraph, kind and output tensor
    name: their `index` is the op's position in the optimize run's *input*."""
    entries: dict[tuple, dict] = {}  # (subgraph, kind, output) -> the report's entry
    for s in (report or {}).get("skips", []):
        entries.setdefault((s.get("subgraph"), s["at"].get("kind"), s["at"].get("output")), s)
    rows, used = [], set()
    for gi, graph in enumerate(model.graphs):
        for chain in chains(graph):
            for c in filter(None, map(candidate, chain)):
                key = (gi, c.op.kind, c.op.outputs[0].name)
                row = {
                    "subgraph": gi,
                    "index": c.op.index,
                    "kind": c.op.kind,
                    "activation": c.op.fused_activation,
                    "output": key[2],
                    "constant": c.stored.name,
                    "dtype": c.stored.dtype,
                    "shape": list(c.constant.shape),
                    "dequantized": c.dequantized,
                    "axis": c.axis,
                    "data_shape": list(c.data.shape),
                    "data_from": name_op(c.data.producer),
                    "read_by": [name_op(u) for u in graph.consumers(c.op.outputs[0])]
                    + (["the graph output"] if graph.is_observed(c.op.outputs[0]) else []),
                    "chain": [name_op(op) for op in chain],
                }
                if report is not None:
                    entry = entries.get(key)
                    used.add(key)
                    row.update(
                        reason=None if entry is None else entry["reason"],
                        passes=None if entry is None else entry.get("reasons", {}),
                    )
                rows.append(row)
    return rows, [k for k in entries if k not in used]


def transpose_listing(model: Model, report: dict | None = None) -> list[dict]:
    """Every TRANSPOSE of `model` with where it sits and — given the report of the optimize run
    that wrote it — why it stayed (matched by subgraph and output tensor name)."""
    reasons = {(t.get("subgraph"), t["at"].get("output")): t["reason"] for t in (report or {}).get("transposes", [])}
    rows = []
    for gi, graph in enumerate(model.graphs):
        for op in graph.ops:
            if op.kind != "TRANSPOSE":
                continue
            perm, data = op.input(1), op.input(0)
            perm_values = perm.data if perm is not None else None
            row = {
                "subgraph": gi,
                "index": op.index,
                "output": op.outputs[0].name,
                "perm": None if perm_values is None else [int(v) for v in perm_values.reshape(-1)],
                "data_from": name_op(data.producer if data is not None else None),
                "read_by": [name_op(u) for u in graph.consumers(op.outputs[0])]
                + (["the graph output"] if graph.is_observed(op.outputs[0]) else []),
            }
            if report is not None:
                row["reason"] = reasons.get((gi, row["output"]))
            rows.append(row)
    return rows
