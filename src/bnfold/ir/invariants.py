"""Semantic checks of a lifted model: what is well-formed as a flatbuffer but not as a model.

Run by the reader after io/validate.py has bounds-checked the bytes and the model is lifted, so
passes and the interpreter can rely on it: buffers match their tensor's shape and type, no
negative dimensions, each tensor written once, everything read is produced (or an input, a
constant, a variable), no cycles, subgraph indices in options in range, and what ir/ops.py says of
each operator kind (options table, arity, weight rank, bias length, positive strides, an axis
inside its output). Every failure is one ModelError naming the file and the place (and, in `op`,
the operator it is about).

The same checks are the last gate before bnfold writes a model (`check_output`, called by the
pass manager after its last round and by the writer before any file is opened): what bnfold
writes must be what its reader accepts. The gate adds one check the reader cannot make of a
user's file: every operator a pass created or changed (`Changes`, recorded by the graph as the
pass mutates it) has its output shapes recomputed from its inputs and options (ir/shapes.py, the
rule ir/ops.py names) and compared with the recorded ones. An operator read from the file whose
recorded shapes already disagreed with its rule before any pass touched it is not held against
the pass (LiteRT recomputes shapes when it prepares, so stale ones load). A failure is an
InternalError (exit 3, bnfold's bug) naming the pass; nothing is written.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InternalError, ModelError
from .changes import Changes
from .const import NUMPY_DTYPES
from .ops import FUSED_ACTIVATIONS, OUTPUT_AXIS_KINDS, info

if TYPE_CHECKING:
    from .graph import Op
    from .model import Model

# Byte sizes of fixed-size element types numpy has no dtype for (sizes of the others come from
# NUMPY_DTYPES); packed and variable-size types (INT4, UINT4, INT2, STRING, RESOURCE, VARIANT)
# have no per-element size and are not size-checked.
EXTRA_ITEM_SIZES = {"BFLOAT16": 2, "FLOAT8E4M3FN": 1, "FLOAT8E5M2": 1}
# Option fields that divide or step: zero or negative would make a kernel (and a pass) divide by zero.
POSITIVE_FIELDS = (
    "strideW",
    "strideH",
    "strideD",
    "dilationWFactor",
    "dilationHFactor",
    "dilationDFactor",
    "filterWidth",
    "filterHeight",
)
# No tensor of a real model holds more elements than this (8 GB of float32); a larger shape is a
# corrupt one, and passes size arrays by shapes.
MAX_ELEMENTS = 2**31


def validate_model(model, path: str | None):
    """Semantic checks on a lifted model; returns it, or raises ModelError naming the problem.
    Each graph's `changes` learns whether its execution order runs every read after its write
    (`in_order`, what the gate's look at the changes alone starts from: changes_hold)."""
    n_graphs = len(model.graphs)
    calls = []
    orders = []
    for g_index, graph in enumerate(model.graphs):
        where = f"subgraph {g_index}"
        _check_tensors(graph, where, path)
        found, in_order = _check_ops(graph, where, n_graphs, path)
        calls.append(found)
        orders.append(in_order)
    _check_subgraph_calls(calls, path)
    for graph, in_order in zip(model.graphs, orders, strict=True):
        graph.changes = graph.changes or Changes()
        graph.changes.in_order = in_order
    return model


def _check_tensors(graph, where: str, path: str | None) -> None:
    for t_index, t in enumerate(graph.tensors):
        _check_tensor(t, f"{where} tensor {t_index} ({t.name!r})", path)


def _item_size(dtype: str) -> int | None:
    np_dtype = NUMPY_DTYPES.get(dtype)
    return np_dtype.itemsize if np_dtype is not None else EXTRA_ITEM_SIZES.get(dtype)


def _check_tensor(t, where: str, path: str | None) -> None:
    """Shape sane; a constant's bytes match its shape and type (sparse tensors excepted: their
    buffer holds the compressed values)."""
    shape = t.shape
    if shape and min(shape) < 0:
        # LiteRT refuses these too; a dynamic dimension is -1 in shape_signature, never in shape
        raise ModelError(f"{where} has a negative dimension in shape {list(shape)}", path)
    signature = t.shape_signature
    if signature is not None and len(signature) != len(shape) and len(signature) > 0:
        raise ModelError(
            f"{where} has shape signature {list(signature)} of another rank than its shape {list(shape)}", path
        )
    count = math.prod(shape)
    bound = count or math.prod(d or 1 for d in shape)  # a zero dimension does not make the others sane
    if bound > MAX_ELEMENTS:
        raise ModelError(f"{where} has an absurd shape {list(t.shape)} ({bound} elements)", path)
    if not t.is_const or getattr(t.record, "sparsity", None) is not None:
        return
    item = _item_size(t.dtype)
    if item is None:
        return
    expected, actual = count * item, t.buffer.nbytes
    if expected != actual:
        raise ModelError(
            f"{where}: its buffer holds {actual} bytes but shape {list(t.shape)} of {t.dtype} needs {expected}", path
        )


def _check_ops(graph, where: str, n_graphs: int, path: str | None) -> tuple[list[tuple[int, str]], bool]:
    """Each tensor written once; everything read is produced, an input, a constant or a variable;
    subgraph indices in options in range; fused activations known; no cycles. Returns the
    subgraphs its operators call, each with where the call is, and whether every read comes
    after its write in the execution order."""
    producers: dict[int, int] = {}
    calls = []
    for o_index, op in enumerate(graph.ops):
        for t in op.outputs:
            if id(t) in producers:
                raise _about(
                    op, f"{where}: tensor {t.name!r} is written by operators {producers[id(t)]} and {o_index}", path
                )
            producers[id(t)] = o_index
        at = f"{where} operator {o_index} ({op.kind})"
        try:
            found = _check_options(op, at, n_graphs, len(FUSED_ACTIVATIONS), path)
        except ModelError as e:
            e.op = op
            raise
        calls += [(index, f"{at}: {name} = {index}") for name, index in found]
    sources = {id(t) for t in graph.inputs}
    in_order = True  # every tensor read is produced earlier in the execution order
    for o_index, op in enumerate(graph.ops):
        for t in op.inputs:
            if t is None:
                continue
            made_at = producers.get(id(t))
            if made_at is not None:
                in_order = in_order and made_at < o_index
                continue
            if id(t) in sources or t.is_const or _is_variable(t) or _is_empty(t):
                continue
            raise _about(
                op,
                f"{where} operator {o_index} ({op.kind}) reads tensor {t.name!r}, which no operator "
                "produces and which is neither an input, a constant nor a variable",
                path,
            )
    if not in_order:  # every edge running forward in one order is proof of no cycle; else look
        _check_acyclic(graph, producers, where, path)
    return calls, in_order


def _about(op, message: str, path: str | None) -> ModelError:
    """A ModelError about `op` (the gate names the pass that made or changed it)."""
    error = ModelError(message, path)
    error.op = op
    return error


def _is_variable(t) -> bool:
    record = t.record
    return record is not None and (
        bool(getattr(record, "isVariable", False)) or bool(getattr(record, "externalBuffer", 0))
    )


def _is_empty(t) -> bool:
    """A tensor with a zero dimension holds no values, so it needs no producer."""
    return any(d == 0 for d in t.shape)


def _check_options(op, where: str, n_graphs: int, n_activations: int, path: str | None) -> list[tuple[str, int]]:
    """What ir/ops.py says of the operator's kind; returns the subgraphs its options name."""
    facts = info(op.kind)
    required, n_outputs = facts.arity or (0, None)
    if len(op.inputs) < required or None in op.inputs[:required]:
        raise ModelError(
            f"{where} needs {required} inputs, has {sum(t is not None for t in op.inputs[:required])}", path
        )
    if n_outputs is not None and len(op.outputs) != n_outputs:
        raise ModelError(f"{where} has {len(op.outputs)} outputs, expected {n_outputs}", path)
    if facts.same_input_types and len(op.inputs) >= 2 and None not in op.inputs[:2]:
        a, b = op.inputs[:2]
        if a.dtype != b.dtype:
            raise ModelError(
                f"{where} combines {a.dtype} {a.name!r} with {b.dtype} {b.name!r}; both inputs must have one type", path
            )
    layer = facts.layer
    if layer is not None:
        weights, bias, dim = op.inputs[layer.weights], op.input(layer.bias), layer.out_axis
        if len(weights.shape) != layer.rank:
            raise ModelError(f"{where} has weights of rank {len(weights.shape)}, expected {layer.rank}", path)
        if bias is not None and math.prod(bias.shape) != weights.shape[dim]:
            raise ModelError(
                f"{where} has a bias of shape {list(bias.shape)} for {weights.shape[dim]} output channels", path
            )
    options = op.options
    if options is None:
        if facts.needs_options:
            raise ModelError(f"{where} has no options table (strides and padding)", path)
        return []
    expected = facts.options
    if expected is not None and options.type != expected:
        raise ModelError(f"{where} carries {options.type}, expected {expected}", path)
    refs = list(_subgraph_refs(op)) if any(map(_names_subgraph, vars(options))) else []
    for name, index in refs:
        if not 0 <= index < n_graphs:
            raise ModelError(f"{where}: {name} refers to subgraph {index}, but the model has {n_graphs}", path)
    if facts.needs_options:
        for name in POSITIVE_FIELDS:
            value = getattr(options, name, None)
            if isinstance(value, int) and value < 1:
                raise ModelError(f"{where} has {name} = {value}; it must be at least 1", path)
    axis = getattr(options, "axis", None)
    if op.kind in OUTPUT_AXIS_KINDS and isinstance(axis, int) and op.outputs:
        rank = len(op.outputs[0].shape)
        if not -rank <= axis < rank:
            raise ModelError(f"{where} has axis = {axis}, outside its output's {rank} axes", path)
    act = getattr(options, "fusedActivationFunction", None)
    if isinstance(act, int) and not 0 <= act < n_activations:
        raise ModelError(f"{where} has unknown fused activation {act}", path)
    return refs


def _subgraph_refs(op):
    """(field, subgraph index) for each subgraph an operator's options name (WHILE's cond and
    body, IF's branches, CALL_ONCE's init, ...)."""
    if op.options is None:
        return
    for name, value in vars(op.options).items():
        if _names_subgraph(name):
            values = value if isinstance(value, (list, np.ndarray)) else [value]
            for v in values:
                if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                    yield name, int(v)


@functools.cache
def _names_subgraph(field: str) -> bool:
    """Whether an options field holds subgraph indices (asked once per field name, not per op)."""
    return "subgraph" in field.lower()


def _check_subgraph_calls(calls: list[list[tuple[int, str]]], path: str | None) -> None:
    """No subgraph calls itself, directly or through others (a WHILE whose body is its own
    subgraph, or subgraph 0): a runtime would recurse without end. `calls`: per subgraph, the
    subgraphs it calls, each with where."""
    state = [0] * len(calls)  # 0 unvisited, 1 on the current path, 2 done
    for start in range(len(calls)):
        if state[start]:
            continue
        stack = [(start, iter(calls[start]))]
        state[start] = 1
        while stack:
            g_index, edges = stack[-1]
            for callee, where in edges:
                if state[callee] == 1:
                    raise ModelError(f"{where} makes subgraph {callee} call itself", path)
                if state[callee] == 0:
                    state[callee] = 1
                    stack.append((callee, iter(calls[callee])))
                    break
            else:
                state[g_index] = 2
                stack.pop()


def _check_acyclic(graph, producers: dict[int, int], where: str, path: str | None) -> None:
    """Kahn's algorithm over the op graph (iterative, so any depth is fine)."""
    ops = graph.ops
    pending = [0] * len(ops)
    users: list[list[int]] = [[] for _ in ops]
    for o_index, op in enumerate(ops):
        for p in {producers[id(t)] for t in op.inputs if t is not None and id(t) in producers}:
            pending[o_index] += 1
            users[p].append(o_index)
    ready = [i for i, n in enumerate(pending) if n == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for u in users[i]:
            pending[u] -= 1
            if pending[u] == 0:
                ready.append(u)
    if done != len(ops):
        stuck = next(i for i, n in enumerate(pending) if n > 0)
        raise _about(ops[stuck], f"{where} has a cycle through operator {stuck} ({ops[stuck].kind})", path)


# ---- the output gate ---------------------------------------------------------------------------


def mark_sound(model: Model) -> None:
    """`model` has just passed validate_model (the reader): record its graphs' changes from now on."""
    for graph in model.graphs:
        in_order = graph.changes is not None and graph.changes.in_order
        graph.changes = Changes(sound=True, in_order=in_order, sources=tuple(graph.inputs), graphs=len(model.graphs))


def gate(model: Model, path: str | None = None) -> None:
    """The writer's gate: check_output, unless every graph is sound (read or gated, untouched since)."""
    if not all(graph.changes is not None and graph.changes.sound for graph in model.graphs):
        check_output(model, path)


def check_output(model: Model, path: str | None = None) -> None:
    """The last gate before `model` is written (module docstring): the reader's invariants, then
    the output shapes of every op a pass created or changed. Raises InternalError naming the pass;
    costs one shape rule per changed op, plus the reader's checks of what the passes changed
    (changes_hold), or of the whole model where the record cannot tell."""
    if not all(changes_hold(model, graph) for graph in model.graphs):
        try:
            validate_model(model, path)
        except ModelError as e:
            op = getattr(e, "op", None)
            by = culprit(model, op)
            raise InternalError(f"{by} left a model bnfold's reader refuses: {e.args[0]}", path) from None
    from .shapes import shape_problem

    for g_index, graph in enumerate(model.graphs):
        changes = graph.changes
        if changes is None:
            continue
        for op, name in changes.ops.items():
            if op in changes.stale or not graph.contains(op):
                continue
            problem = shape_problem(op, info(op.kind).shape)
            if problem is not None:
                position = graph.ops.index(op)
                raise InternalError(
                    f"{_by(name)} left subgraph {g_index} operator {position} ({op.kind}) inconsistent: {problem}",
                    path,
                )
    for graph in model.graphs:
        graph.changes = graph.changes or Changes()
        _checked(graph.changes, graph, len(model.graphs))


def _checked(changes: Changes, graph, graphs: int) -> None:
    """The graph passed the gate: what it recorded is checked, and a later gate starts from here
    (in_order holds: validate_model found it, or changes_hold proved it)."""
    changes.sound, changes.unrecorded = True, False
    changes.orphaned.clear()
    changes.displaced.clear()
    changes.sources, changes.graphs = tuple(graph.inputs), graphs


def changes_hold(model: Model, graph) -> bool:
    """Whether the graph passes validate_model's checks, judged from what changed since it last
    passed them (the reader or the gate) as `graph.changes` recorded it; False when the record
    cannot tell (then the whole check runs, and names the problem if there is one).

    Sound because every way a mutation method can break a check leaves a trace in the record:
    - an op's own checks (arity, options, weights, axes, fused activation, subgraph indices) read
      its inputs, outputs and options, which change only through methods that record the op
      (created or changed; a tensor's new shape records its producer and readers);
    - two writers of one tensor: the later one was created or given it (recorded), and the
      earlier one either was too or was `displaced` (recorded when the tensor was relinked);
    - a read of nothing: the reader was given the tensor (recorded), or the tensor's producer
      left (`orphaned`: removed op's outputs, an output replaced);
    - a cycle: the last whole check found every read after its write (`in_order`, else this
      returns False); the order of ops no mutation recorded never changes (a move records the op)
      and neither do the edges between them, so a cycle needs an edge at a recorded op running
      backwards, which is looked for;
    - a subgraph calling itself needs a recorded op naming a subgraph (then False).
    Tensors are checked whole (their shape, signature and bytes are plain fields a pass may set
    without a method; it is the cheap part). Mutations while no pass ran (`unrecorded`), another
    set of graph inputs or another number of graphs: False."""
    changes = graph.changes
    if (
        changes is None
        or changes.unrecorded
        or not changes.in_order
        or changes.graphs != len(model.graphs)
        or len(changes.sources) != len(graph.inputs)
        or any(a is not b for a, b in zip(changes.sources, graph.inputs, strict=True))
    ):
        return False
    touched = [op for op in changes.ops if graph.contains(op)]
    try:
        _check_tensors(graph, "", None)
        for op in touched:
            if _check_options(op, "", len(model.graphs), len(FUSED_ACTIVATIONS), None):
                return False  # it names a subgraph: the calls are checked whole
    except ModelError:
        return False
    suspects = touched + [op for op in changes.displaced if graph.contains(op)]
    if any(t.producer is not op for op in suspects for t in op.outputs):
        return False
    sources = {id(t) for t in graph.inputs}

    def produced(t) -> bool:
        made = t.producer is not None and graph.contains(t.producer)
        return made or id(t) in sources or t.is_const or _is_variable(t) or _is_empty(t)

    if not all(produced(t) for op in touched for t in op.inputs if t is not None):
        return False
    if not all(produced(t) for t in changes.orphaned if t._uses):
        return False
    return _forward_at(graph, touched)


def _forward_at(graph, ops: list) -> bool:
    """Every read by or of the outputs of `ops` comes after its write in the execution order."""
    if not ops:
        return True
    position = {id(op): i for i, op in enumerate(graph.ops)}
    for op in ops:
        at = position[id(op)]
        for t in op.inputs:
            if t is not None and t.producer is not None and position.get(id(t.producer), -1) >= at:
                return False
        if any(position.get(id(reader), at) <= at for t in op.outputs for reader in t._uses):
            return False
    return True


def _by(name: str | None) -> str:
    """Who made a change: a pass, or bnfold's library code outside any pass (name None)."""
    return "bnfold" if name is None else f"pass {name}"


def culprit(model: Model, *ops: Op | None) -> str:
    """`pass NAME` for the pass that last made or changed the first of `ops` a pass touched, else
    the passes that changed anything."""
    names: list[str] = []
    for graph in model.graphs:
        changes = graph.changes
        if changes is None:
            continue
        for op in ops:
            if op is not None and op in changes.ops:
                return _by(changes.ops[op])
        touched = dict.fromkeys((*changes.passes, *changes.ops.values()))  # in order, each once
        names += [n for n in touched if n is not None and n not in names]
    if not names:
        return "bnfold"
    return f"pass {names[0]}" if len(names) == 1 else f"one of the passes {', '.join(map(str, names))}"
