"""What the RESHAPE passes share: when two tensors hold the same values in the same memory order,
and how a RESHAPE is made.

A RESHAPE only renames the axes of a row-major buffer; it never moves an element. So it can stand
for any op that also moves none (a TRANSPOSE of unit axes), and it can be dropped or merged
wherever the shapes say so. Dynamic dimensions (-1 in the shape signature) are kept as -1 in the
new shape; a RESHAPE takes at most one of them.

LiteRT runs some operators in place, and that restricts where a rewrite may put a RESHAPE.
Its arena planner (tflite/arena_planner.cc, IdentifyInPlaceTensors, in execution order) gives an
operator's first output the buffer of an input when the kernel's registration says it may
(`inplace_operator` flags, tflite/kernels/*.cc):

    RESHAPE, SQUEEZE, EXPAND_DIMS, BITCAST   input 0, data unmodified: always shared, whatever
                                             else reads the input
    ADD, SUB, MUL, DIV (input 0 or 1),       data modified: shared only when that input has one
    SOFTMAX, DYNAMIC_UPDATE_SLICE (input 0)  reader, the same byte size (over 4 bytes), and the
                                             buffer's first tensor (its *root*) has one reader

never a graph input, never into a graph output, never a constant, never with
experimental_preserve_all_tensors. The reader counts are checked on the input and on the root
only, not on the tensors between them: in

    a -> MUL(c) -> m -> RESHAPE -> r -> DIV(c) -> d          m is also read by GATHER, later
                   `-> GATHER

m shares a's buffer (MUL in place), r shares it too (RESHAPE), and DIV, seeing one reader on r
and on the root a, writes d over it: GATHER then reads m divided. So a tensor *inside* such a
chain (shared with its producer's input, not a root) with a second reader is a hazard as soon as
a modifying op runs in place further down the chain. A TRANSPOSE (any op not listed), a graph
input and a graph output end a chain: removing one, or making a graph input or output an internal
tensor, can join chains.
So no rewrite
  - adds a RESHAPE or makes a RESHAPE-like op read another tensor where `aliasing_hazard` says so
    (substitute_transpose_to_reshape, substitute_pack_to_reshape, substitute_strided_slice_to_reshape,
    remove_redundant_reshape, a TRANSPOSE merged into a RESHAPE):
    a tensor from x up its chain gets a second reader, or y, now in x's buffer, has two readers
    with an op below it that may run in place (`modified_below`);
  - takes a RESHAPE out, its readers reading its input, where `bypass_hazard` says so
    (remove_unnecessary_reshape), or makes one op's readers read another's output where
    `joined_hazard` says so (common_subexpression_elimination);
  - takes a reader away from a tensor that keeps others where `release_hazard` says so: with
    one reader left, LiteRT may run that reader, and ops after it, in place over the tensor's
    buffer (remove_redundant_reshape, common_subexpression_elimination);
  - removes a TRANSPOSE whose input's chain would then hold such a tensor (`chain_hazard`: the
    propagation's seeds, identity transposes);
  - makes an op LiteRT runs in place write a tensor with a RESHAPE-like reader and another, or
    run in place at all over such a chain (`in_place_hazard`: a fused activation, a pulled or
    cancelled transpose, a graph output the propagation or convert_nchw_to_nhwc's interface
    change gives a TRANSPOSE back);
  - puts a TRANSPOSE after a graph input whose readers' chains would then hold such a tensor
    (`input_hazard`: convert_nchw_to_nhwc's NHWC input).
Where the graph may still change, the rule leans to "hazard": a modifying link is assumed kept
even while the root has a second reader. The original model's own hazards are the runtime's
business, not bnfold's (the layout fuzzer counts such graphs apart: tests/layout_fuzzing.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..ir.const import NUMPY_DTYPES
from ..ir.graph import Graph, Op, Options, Tensor
from . import targets
from .report import PassResult


def same_quantization(a: Tensor, b: Tensor) -> bool:
    """A RESHAPE copies bytes: its input and output must read them with the same scale and zero point."""
    if not a.is_quantized and not b.is_quantized:
        return True
    if a.is_quantized != b.is_quantized:
        return False
    qa, qb = a.quantization, b.quantization
    return all(
        np.array_equal(np.asarray(getattr(qa, f, None)), np.asarray(getattr(qb, f, None)))
        for f in ("scale", "zeroPoint", "quantizedDimension")
    )


def add_reshape(graph: Graph, x: Tensor, y: Tensor, *, after: Op) -> Op:
    """RESHAPE x -> y (y's shape, -1 for its one dynamic dimension if any) placed after `after`."""
    new_shape = [int(d) for d in y.signature]
    shape = graph.add_const(f"{y.name}/shape", np.array(new_shape, dtype=np.int32), "INT32")
    return graph.add_op("RESHAPE", [x, shape], [y], Options("ReshapeOptions", newShape=new_shape), after=after)


def replace_by_reshape(graph: Graph, result: PassResult, op: Op, x: Tensor, y: Tensor, **details) -> bool:
    """Replace `op` (x -> y, moving no element) by a RESHAPE, if the target runs one (and keeps x,
    a graph output, with a RESHAPE reading it: targets.unkept_output), it reads the bytes with y's
    quantization, and LiteRT's sharing of x's buffer adds no hazard (an op that
    already shared it, ALIASING, adds none); else record why not in `result`. The one way the
    passes make an op a RESHAPE, so none forgets a check. Returns whether it replaced `op`."""
    unsupported = targets.refusal(graph, "RESHAPE") or targets.unkept_output(graph, [(x, "RESHAPE")])
    if unsupported:
        result.not_for_target(op, unsupported)
        return False
    if not same_quantization(x, y):
        result.refuse_value(op, f"{x.name!r} and {y.name!r} read their bytes with different quantization")
        return False
    if op.kind not in ALIASING and aliasing_hazard(graph, x, y, added=0):  # the RESHAPE would share x's buffer
        # a TRANSPOSE's reason goes to the report's transposes; another op's to not_folded
        (result.skip if op.kind == "TRANSPOSE" else result.refuse_value)(op, HAZARD)
        return False
    result.fold(op, [op], into=[], **details)
    graph.remove_op(op)
    result.made(add_reshape(graph, x, y, after=op))
    return True


ALIASING = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "BITCAST"})  # LiteRT shares input 0, unmodified
IN_PLACE = {"ADD": (0, 1), "SUB": (0, 1), "MUL": (0, 1), "DIV": (0, 1), "SOFTMAX": (0,), "DYNAMIC_UPDATE_SLICE": (0,)}
HAZARD = "LiteRT would then run an op in place over a buffer another reader still needs (engine/reshapes.py)"
Shares = Callable[[Op, Tensor, Tensor], bool]  # (reader u, its input t, its output): u gives the output t's buffer
SCALAR_BYTES = 4  # LiteRT shares no buffer of this size or less with an op that modifies it


def aliasing_hazard(graph: Graph, x: Tensor, y: Tensor, *, added: int = 1) -> bool:
    """Whether a RESHAPE-like op writing `y` from `x` (x gaining `added` readers by it) would let
    LiteRT overwrite a tensor another op still reads (module docstring): some tensor from x up
    its buffer's chain, other than the root, has a second reader; or y, then in x's buffer, has
    two readers and an op below it may run in place. A graph output y has a buffer of its own,
    but x's reader still counts: x, inside a chain, with a second reader over an op in place."""
    if not _in_arena(graph, x):
        return False  # x, a constant or graph input, ends every chain
    if y in graph.outputs:
        inside = len(buffer_chain(graph, x)) > 1
        return inside and references(graph, x) + added > 1 and modified_below(graph, x)
    if chain_hazard(graph, x, added=added):
        return True
    return references(graph, y) > 1 and modified_below(graph, y)


def bypass_hazard(graph: Graph, x: Tensor, y: Tensor) -> bool:
    """Whether the readers of `y`, a RESHAPE-like op's output, reading `x` instead (the op gone)
    would let LiteRT overwrite a tensor still read (`joined_hazard`, x gaining y's readers but the op)."""
    return joined_hazard(graph, x, y, added=references(graph, y) - 1)


def joined_hazard(graph: Graph, x: Tensor, y: Tensor, *, added: int) -> bool:
    """Whether the readers of `y` reading `x` instead (x gaining `added` readers) would let LiteRT
    overwrite a tensor still read: x, or a tensor above it in its chain, would have a second reader
    while an op below x or y may run in place over the buffer."""
    if not _in_arena(graph, x) or not chain_hazard(graph, x, added=added):
        return False
    return modified_below(graph, x) or modified_below(graph, y)


def release_hazard(graph: Graph, t: Tensor, leaving: Op) -> bool:
    """Whether `leaving` no longer reading `t` (t keeps its other readers) would let LiteRT run an
    op in place over a buffer still read. LiteRT lets a modifying op share a buffer only when its
    input, and the buffer's first tensor, have one reader: with one reader left, that reader may
    take t's buffer, and an op further down may run in place over it; a hazard when a tensor on
    the way, or above t in its chain, has a second reader. Linear in the ops sharing the buffer."""
    slots = reading_slots(graph, t)
    gone = sum(1 for u in slots if u is leaving)
    # every reader counts here, a dead one too: LiteRT counts it, and the cleanup keeps it where
    # its reference is what stops an op in place (planner.py) -- unless a pass rewires it away
    if not gone or not _in_arena(graph, t) or len(slots) + graph.outputs.count(t) - gone != 1:
        return False
    above = chain_hazard(graph, t, added=-gone)
    return _modified_after_shared(graph, t, above, lambda u, s, out: u is not leaving and _may_share(u, s, out))


def _may_share(u: Op, s: Tensor, out: Tensor) -> bool:
    """Whether LiteRT may give `u`'s output `out` the buffer of its input `s` (reader counts not
    asked: they may still drop)."""
    if u.kind in ALIASING:
        return bool(u.inputs) and u.inputs[0] is s
    slots = IN_PLACE.get(u.kind, ())
    return any(i < len(u.inputs) and u.inputs[i] is s for i in slots) and same_byte_size(s, out)


def modified_below(graph: Graph, t: Tensor) -> bool:
    """Whether an op LiteRT may run in place over t's buffer reads t, or a tensor a RESHAPE-like
    op places in that buffer further down (its reader count not asked: it may still drop). Linear
    in the ops sharing the buffer below t."""
    stack, seen = [t], {id(t)}
    while stack:
        s = stack.pop()
        for u in graph.consumers(s):
            out = u.outputs[0] if u.outputs else None
            if out is None or out in graph.outputs or not _may_share(u, s, out):
                continue
            if u.kind not in ALIASING:
                return True
            if id(out) not in seen:
                seen.add(id(out))
                stack.append(out)
    return False


def chain_hazard(graph: Graph, x: Tensor, *, added: int) -> bool:
    """Whether some tensor from `x` (gaining `added` readers) up its buffer's chain, other than
    the chain's root, has a second reader: an op LiteRT runs in place after x could overwrite it."""
    chain = buffer_chain(graph, x)
    return any(references(graph, t) + (added if t is x else 0) > 1 for t in chain[:-1])


def in_place_hazard(graph: Graph, op: Op, reader_kinds: list[str], *, internal: bool = False) -> bool:
    """Whether LiteRT, running `op` in place, could overwrite a buffer another reader needs: op
    modifies a buffer whose chain holds a tensor with a second reader, or op's output, read by ops
    of `reader_kinds` (one per input slot), has a RESHAPE-like reader besides another (an op after
    that one may then run in place over it). `internal`: as if op's output were no graph output
    (which LiteRT never shares), as when an interface change gives the graph output a TRANSPOSE."""
    out = op.outputs[0]
    if out in graph.outputs and not internal:
        return False
    s = _candidate(graph, op.kind, op.inputs, out)
    if s is None:
        return False
    if op.kind not in ALIASING and any(references(graph, t) > 1 for t in buffer_chain(graph, s)[:-1]):
        return True
    return len(reader_kinds) > 1 and any(kind in ALIASING for kind in reader_kinds)


def input_hazard(graph: Graph, x: Tensor) -> bool:
    """Whether graph input `x`, made an arena tensor (the output of a TRANSPOSE put before its
    readers, as convert_nchw_to_nhwc's input change does), would root a chain on which LiteRT runs
    a modifying op in place after a tensor with a second reader. As a graph input x ends every
    chain; as an arena tensor it joins its readers' chains to one. Linear in the graph."""
    return _modified_after_shared(
        graph, x, False, lambda u, t, out: _candidate(graph, u.kind, u.inputs, out, root=x) is t
    )


def _modified_after_shared(graph: Graph, top: Tensor, shared: bool, shares: Shares) -> bool:
    """Whether, walking down the ops that place their output in `top`'s buffer (`shares(u, t,
    out)`: u gives out t's buffer; a graph output never shares), a modifying op comes after a
    tensor with a second reader (`shared`: one above `top` has). Linear in the ops on the way."""
    stack = [(top, shared)]
    while stack:
        t, shared = stack.pop()
        for u in dict.fromkeys(graph.consumers(t)):
            out = u.outputs[0] if u.outputs else None
            if out is None or out in graph.outputs or not shares(u, t, out):
                continue
            if shared and u.kind not in ALIASING:
                return True
            stack.append((out, shared or references(graph, out) > 1))
    return False


def reading_slots(graph: Graph, t: Tensor) -> list[Op]:
    """The ops reading `t`, one entry per input slot."""
    return [u for u in graph.consumers(t) for _ in range(u.inputs.count(t))]


def references(graph: Graph, t: Tensor) -> int:
    """LiteRT's reference count of `t`: one per operator input slot reading it, one per listing
    among the graph outputs. A reader whose outputs nothing reads does not count: the cleanup
    after the pass drops it, and with it the reference that kept LiteRT from sharing."""
    live = [u for u in reading_slots(graph, t) if any(graph.is_observed(o) or graph.consumers(o) for o in u.outputs)]
    return len(live) + graph.outputs.count(t)


def buffer_chain(graph: Graph, t: Tensor) -> list[Tensor]:
    """The tensors that may share t's buffer, from t up to the one that owns it (its root, last),
    as LiteRT's planner links them: each producer's candidate input. LiteRT drops a modifying
    link when the root has a second reader; that is not relied on here (a later rewrite or the
    cleanup may take that reader away): a hazard is assumed rather than missed. Linear in the
    chain's length."""
    chain = [t]
    while (op := t.producer) is not None and op.outputs[0] is t and t not in graph.outputs:
        s = _candidate(graph, op.kind, op.inputs, t)
        if s is None:
            break
        chain.append(s)
        t = s
    return chain


def shared_input(
    kind: str, inputs, out: Tensor, *, in_arena: Callable[[Tensor], bool], one_reader: Callable[[Tensor], bool]
) -> Tensor | None:
    """The input LiteRT considers sharing with `out` for an op of `kind` (before its root check),
    the module docstring's rule: input 0 of an aliasing op; the first modifiable input with one
    reader and out's byte size. Only an input `in_arena` (no constant, no graph input) is shared;
    `one_reader` counts readers as the caller does (the graph as it stands, or LiteRT's counts)."""
    aliasing = kind in ALIASING
    for i in (0,) if aliasing else IN_PLACE.get(kind, ()):
        s = inputs[i] if i < len(inputs) else None
        if s is None or not in_arena(s):
            continue
        if aliasing or (one_reader(s) and same_byte_size(s, out)):
            return s
    return None


def _candidate(graph: Graph, kind: str, inputs, out: Tensor, *, root: Tensor | None = None) -> Tensor | None:
    """`shared_input` on the graph as it stands (a reader nothing needs not counted). `root`: a
    graph input counted as an arena tensor with one reader (`input_hazard`: the propagation may
    still take its other readers away)."""
    return shared_input(
        kind,
        inputs,
        out,
        in_arena=lambda s: s is root or _in_arena(graph, s),
        one_reader=lambda s: s is root or references(graph, s) == 1,
    )


def _in_arena(graph: Graph, s: Tensor) -> bool:
    """A tensor LiteRT places in its arena and lets an output share: no constant, no graph input."""
    return not s.is_const and s not in graph.inputs


def same_byte_size(s: Tensor, t: Tensor | None) -> bool:
    """Same byte size, over a scalar's (unknown sizes, dynamic ones, count as the same: a hazard
    is assumed rather than missed)."""
    if t is None:
        return True
    size_s, size_t = _nbytes(s), _nbytes(t)
    if size_s is None or size_t is None:
        return True
    return size_s == size_t and size_s > SCALAR_BYTES


ITEM_BYTES = {name: np.dtype(dtype).itemsize for name, dtype in NUMPY_DTYPES.items()}


def _nbytes(t: Tensor) -> int | None:
    """The tensor's byte size, None when unknown: a type numpy lacks, or a dynamic dimension."""
    item = ITEM_BYTES.get(t.dtype)
    if item is None or (t.shape_signature and min(t.shape_signature) < 0):
        return None
    return item * math.prod(t.shape)
