"""Graph, Tensor, Op: the IR every pass works on.

The IR is format-neutral: operator kinds, tensor types and option tables are carried by name
("CONV_2D", "FLOAT32", Options("Conv2DOptions", padding=1, ...)). Whatever a file holds that the
IR does not model (sparsity, variant tensors, debug metadata, custom options, ...) rides along in
the `record` of each object and is written back unchanged.

Edges are kept consistent by the Graph's mutation methods (`set_input`, `set_output`,
`set_const_input`, `add_op`, `remove_op`, `replace_uses`); `Op.inputs`/`Op.outputs` are tuples so
nothing else can change them behind the graph's back. `tensor.producer` and
`graph.consumers(tensor)` are always current.

Every mutation costs time in proportion to what it touches, never to the graph's size, so a pass
over a graph of 100k operators stays linear: removed ops leave the execution order lazily and ops
inserted after an anchor are spliced in when `graph.ops` is next read (one sweep for any number of
edits); membership is a set; new tensor names come from a set and a counter per base name.

While a pass runs, every op it creates or changes is recorded as the change happens
(`graph.changes`, an ir/changes.py `Changes` the manager installs): `add_op`, `set_input`,
`set_output`, `set_const_input`, assigning `op.options` or `op.fused_activation`, and a new
`tensor.shape` (its producer and readers) all call `touch`. The output gate re-derives the shapes
of exactly those ops, so checking a rewrite costs what the rewrite touched, never a graph diff.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .const import NUMPY_DTYPES, Buffer, Scaled, as_stored
from .ops import FUSED_ACTIVATIONS, SIDE_EFFECT_KINDS, info, op_forms

if TYPE_CHECKING:
    from .changes import Changes


class Owner(Protocol):
    """What a graph and the passes ask of the model holding it (ir/model.py: Model, which imports
    this module; named here by this protocol so that this module does not import it back)."""

    graphs: list[Graph]
    opcodes: list[Any]  # ir/model.py OpCode entries
    format: Any  # ir/model.py Format

    @property
    def empty_buffer(self) -> Buffer: ...

    def opcode(self, kind: str, version: int = 1, custom_code: bytes | None = None) -> Any: ...


class Target(Protocol):
    """What a pass asks of the runtime (and the format) a graph is made for: engine/targets.py's Target,
    set by the manager; named here by this protocol so that the IR imports nothing of engine/."""

    name: str
    writes: Any  # the ir/model.py Format the model will be written in; None: its own

    def refusal(
        self,
        kind: str,
        activation: str = "NONE",
        constant_inputs: Iterable[int] = (),
        *,
        rank: int | None = None,
        dtype: str | None = None,
        form: str | None = None,
    ) -> str | None: ...

    def refusal_of(self, op: Op, kept: Iterable[str] = ()) -> str | None: ...

    def unkept_output(self, graph: Graph, readers: Iterable[tuple[Tensor, str]] = ()) -> str | None: ...


class Options:
    """A builtin-options table by name, with the object API's field names as attributes."""

    type: str  # the table's name, kept apart from the fields

    if TYPE_CHECKING:  # the fields are the table's, set at run time

        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self, type: str, **fields):
        self.__dict__["type"] = type
        self.__dict__.update(fields)

    def fields(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "type"}

    def copy(self, **changes) -> Options:
        return Options(self.type, **{**self.fields(), **changes})

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.fields().items())
        return f"Options({self.type}: {inner})"


class Tensor:
    __slots__ = ("name", "dtype", "_shape", "shape_signature", "buffer", "quantization", "record", "producer", "_uses")

    def __init__(
        self,
        name: str,
        dtype: str,
        shape: Sequence[int],
        buffer: Buffer | None = None,
        *,
        shape_signature: Sequence[int] | None = None,
        quantization=None,
        record=None,
    ):
        self.name = name
        self.dtype = dtype
        self._shape = tuple(map(int, shape))
        self.shape_signature = None if shape_signature is None else tuple(map(int, shape_signature))
        self.buffer = buffer
        self.quantization = quantization
        self.record = record
        self.producer: Op | None = None
        self._uses: list[Op] = []  # one entry per input slot that reads this tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @shape.setter
    def shape(self, shape: Sequence[int]) -> None:
        """A new shape changes what its producer writes and its readers read: the graph records
        them as changed (before the change, so it sees what they were)."""
        shape = tuple(map(int, shape))
        if shape != self._shape:
            for op in (self.producer, *self._uses):
                if op is not None and op.graph is not None:
                    op.graph.touch(op)
        self._shape = shape

    @property
    def signature(self) -> tuple[int, ...]:
        """The shape with -1 where a dimension is dynamic (the file's shape_signature, when it has a
        non-empty one)."""
        return self.shape_signature or self.shape

    @property
    def is_const(self) -> bool:
        return self.buffer is not None and self.buffer.nbytes > 0

    @property
    def data(self) -> np.ndarray | None:
        """The constant value in the tensor's dtype and shape (raw uint8 for types numpy lacks)."""
        raw = self.buffer.data if self.buffer is not None and self.is_const else None
        if raw is None:
            return None
        dtype = NUMPY_DTYPES.get(self.dtype)
        if dtype is None:
            return raw
        return raw.view(dtype).reshape(self.shape)

    @data.setter
    def data(self, values: np.ndarray | Scaled) -> None:
        values = as_stored(values, NUMPY_DTYPES[self.dtype])
        self.shape = tuple(int(d) for d in values.shape)
        self.buffer = Buffer.holding(values)

    @property
    def const_data(self) -> np.ndarray:
        """`data` of a tensor the caller checked `is_const` (a constant's buffer has bytes, so
        data). On any other tensor, bnfold's bug."""
        data = self.data
        assert data is not None, f"{self.name!r} is not a constant"
        return data

    @property
    def pending_data(self) -> np.ndarray | Scaled | None:
        """`data`, except that folded weights not computed yet are returned as their Scaled, so a
        fold of already folded weights adds a step instead of computing the first product."""
        pending = self.buffer.pending if self.buffer is not None else None
        if pending is not None and pending.shape == self.shape and pending.dtype == NUMPY_DTYPES.get(self.dtype):
            return pending
        return self.data

    @property
    def is_quantized(self) -> bool:
        q = self.quantization
        return q is not None and (getattr(q, "scale", None) is not None and len(q.scale) > 0)

    def __repr__(self) -> str:
        kind = "const " if self.is_const else ""
        return f"Tensor({self.name!r}, {kind}{self.dtype}{list(self.shape)})"


class Op:
    __slots__ = ("opcode", "inputs", "outputs", "_options", "record", "intermediates", "index", "graph")

    def __init__(
        self,
        opcode,
        inputs: Sequence[Tensor | None],
        outputs: Sequence[Tensor],
        options: Options | None = None,
        *,
        record=None,
        intermediates: Sequence[Tensor] = (),
    ):
        self.index: int | None = None  # position in the graph as read or built; None for ops passes make
        self.graph: Graph | None = None  # the graph that added it (it records the op's changes)
        self.opcode = opcode
        self.inputs: tuple[Tensor | None, ...] = tuple(inputs)
        self.outputs: tuple[Tensor, ...] = tuple(outputs)
        self._options = options
        self.record = record
        self.intermediates: tuple[Tensor, ...] = tuple(intermediates)

    @property
    def kind(self) -> str:
        return self.opcode.kind

    @property
    def options(self) -> Options | None:
        return self._options

    @options.setter
    def options(self, options: Options | None) -> None:
        if self.graph is not None:
            self.graph.touch(self)
        self._options = options

    @property
    def fused_activation(self) -> str:
        value = getattr(self.options, "fusedActivationFunction", None) if self.options is not None else None
        return "NONE" if value is None else FUSED_ACTIVATIONS[value]

    @fused_activation.setter
    def fused_activation(self, name: str) -> None:
        if self.options is None or not hasattr(self.options, "fusedActivationFunction"):
            raise ValueError(f"{self.kind} has no fused activation")
        if self.graph is not None:
            self.graph.touch(self)
        self.options.fusedActivationFunction = FUSED_ACTIVATIONS.index(name)

    def runtime_variants(self) -> list[str]:
        """What of this op a runtime may refuse beside its kind (ir/runtimes.py's variants): its fused activation
        ("NONE" if none), "constant input N", its output's "rank N" and "type T", its "form F"s (ir/ops.py)."""
        constants = [f"constant input {i}" for i, t in enumerate(self.inputs) if t is not None and t.is_const]
        shaped = [f"rank {len(self.outputs[0].shape)}", f"type {self.outputs[0].dtype}"] if self.outputs else []
        activation = self.fused_activation if self.has_fused_activation_slot else "NONE"
        return [activation, *constants, *shaped, *(f"form {f}" for f in op_forms(self))]

    @property
    def has_fused_activation_slot(self) -> bool:
        return self.options is not None and hasattr(self.options, "fusedActivationFunction")

    def input(self, i: int) -> Tensor | None:
        return self.inputs[i] if i < len(self.inputs) else None

    @property
    def required_options(self) -> Options:
        """The options of a kind that cannot run without them (ir/ops.py `needs_options`: convs,
        pools): the reader and the writer's gate refuse such an op without (ir/invariants.py)."""
        assert self.options is not None and info(self.kind).needs_options, f"{self.kind} options"
        return self.options

    def options_with(self, **changes) -> Options:
        """The op's options with `changes`, for a changed or new op; when the file gave the op
        none (the runtime then uses its kind's defaults), a table of its kind's holding only the
        changes (the writer fills the rest with the defaults)."""
        if self.options is None:
            table = info(self.kind).options
            assert table is not None, f"{self.kind} has no options table"  # callers change only options tables
            return Options(table, **changes)
        return self.options.copy(**changes)

    def operand(self, i: int) -> Tensor:
        """Input `i`, which the caller knows is present: a required input (the reader and the
        writer's gate refuse an op missing one, ir/invariants.py `_check_options`) or one its
        matching already checked. An absent one is bnfold's bug."""
        t = self.inputs[i]
        assert t is not None, f"{self.kind} input {i} is absent"
        return t

    def __repr__(self) -> str:
        outs = ", ".join(t.name for t in self.outputs)
        return f"Op({self.kind} -> {outs})"


def float_source(t: Tensor | None) -> Tensor | None:
    """The constant holding a float tensor's values: `t` itself when it is a FLOAT32 constant, or
    the FLOAT16 constant a DEQUANTIZE expands into `t` (the TFLite converter's float16
    quantization); None when `t` is neither (a runtime value, an integer or quantized tensor)."""
    if t is None or t.dtype != "FLOAT32" or t.is_quantized:
        return None
    if t.is_const:
        return t
    p = t.producer
    if p is None or p.kind != "DEQUANTIZE" or not p.inputs:
        return None
    source = p.inputs[0]
    if source is not None and source.is_const and source.dtype == "FLOAT16" and not source.is_quantized:
        return source
    return None


class Graph:
    """One subgraph: tensors, ops in execution order, inputs and outputs."""

    def __init__(self, name: str | None = None, *, record=None):
        self.name = name
        self.record = record
        self.tensors: list[Tensor] = []
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []
        self.pinned: set[Tensor] = set()  # tensors a signature names: never removed or renamed
        self.model: Owner | None = None  # set by Model.add_graph
        self.target: Target | None = None  # the runtime it is made for, set by the manager for the passes
        self._order: list[Op] = []  # execution order; may still hold removed ops (see `ops`)
        self._members: set[Op] = set()
        self._inserted_after: dict[Op, list[Op]] = {}  # anchor -> ops added right after it, pending
        self._inserted_before: dict[Op, list[Op]] = {}  # anchor -> ops added right before it, pending
        self._dirty = False
        self._names: set[str] | None = None  # built on first use (the reader appends tensors directly)
        self._next_suffix: dict[str, int] = {}
        # records the ops a pass creates or changes, as it does (ir/changes.py: Changes, set by
        # the pass manager); None while nothing is recording (reading, building a model)
        self.changes: Changes | None = None

    # ---- lookups -------------------------------------------------------------------------
    @property
    def ops(self) -> list[Op]:
        """The ops in execution order (do not modify the list: use add_op/remove_op)."""
        if self._dirty:
            self._settle_order()
        return self._order

    def contains(self, op: Op) -> bool:
        return op in self._members

    def consumers(self, tensor: Tensor) -> list[Op]:
        """Ops reading `tensor`, each once, in execution order of their first read."""
        uses = tensor._uses  # most have one reader: nothing to deduplicate (a dict key keeps its first place)
        return list(uses) if len(uses) < 2 else list({id(op): op for op in uses}.values())

    def is_observed(self, tensor: Tensor) -> bool:
        """A tensor the outside world can see: graph input or output, or named by a signature."""
        return tensor in self.pinned or tensor in self.outputs or tensor in self.inputs

    def is_unread(self, tensor: Tensor) -> bool:
        """No op reads `tensor` and nothing outside sees it."""
        return not tensor._uses and not self.is_observed(tensor)

    def has_single_use(self, tensor: Tensor, op: Op) -> bool:
        """True when `op` is the only reader of `tensor` and nothing outside sees it."""
        return not self.is_observed(tensor) and all(user is op for user in tensor._uses) and bool(tensor._uses)

    def tensor(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    # ---- construction --------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        """`base`, or `base_N` with the first N not taken since this base was last asked for."""
        names = self._taken_names()
        if base not in names:
            return base
        i = self._next_suffix.get(base, 1)
        while f"{base}_{i}" in names:
            i += 1
        self._next_suffix[base] = i + 1
        return f"{base}_{i}"

    def add_tensor(self, name: str, dtype: str, shape: Sequence[int], buffer: Buffer | None = None, **kw) -> Tensor:
        if buffer is None and self.model is not None:
            buffer = self.model.empty_buffer
        t = Tensor(self.unique_name(name), dtype, shape, buffer, **kw)
        self._taken_names().add(t.name)
        self.tensors.append(t)
        return t

    def _taken_names(self) -> set[str]:
        if self._names is None:
            self._names = {t.name for t in self.tensors}
        return self._names

    def add_const(self, name: str, values: np.ndarray | Scaled, dtype: str = "FLOAT32") -> Tensor:
        values = as_stored(values, NUMPY_DTYPES[dtype])
        return self.add_tensor(name, dtype, values.shape, Buffer.holding(values))

    def add_op(
        self,
        kind_or_opcode,
        inputs: Sequence[Tensor | None],
        outputs: Sequence[Tensor],
        options: Options | None = None,
        *,
        after: Op | None = None,
        before: Op | None = None,
        version: int = 1,
        record=None,
    ) -> Op:
        """A new op at the end of the execution order, or right after the op `after`, or right
        before the op `before` (for a value that has no producer to follow: a graph input)."""
        opcode = kind_or_opcode
        if isinstance(kind_or_opcode, str):
            if self.model is None:
                raise ValueError(
                    f"add_op({kind_or_opcode!r}): an op by kind needs the graph in a model (Model.add_graph)"
                )
            opcode = self.model.opcode(kind_or_opcode, version=version)
        op = Op(opcode, inputs, outputs, options, record=record)
        op.graph = self
        if self.changes is not None:
            self.changes.created(op)
        if before is not None:
            self._inserted_before.setdefault(before, []).append(op)
            self._dirty = True
        elif after is None:
            op.index = len(self._order) if not self._dirty else None
            self._order.append(op)
        else:
            self._inserted_after.setdefault(after, []).append(op)
            self._dirty = True
        self._members.add(op)
        self._link(op)
        return op

    def touch(self, op: Op) -> None:
        """Record that `op` is about to change (its edges, options or tensors' shapes)."""
        if self.changes is not None:
            self.changes.changed(op)

    def _link(self, op: Op) -> None:
        for t in op.inputs:
            if t is not None:
                t._uses.append(op)
        for t in op.outputs:
            if self.changes is not None:
                self.changes.relinked(op, None, t)
            t.producer = op

    def remove_op(self, op: Op) -> None:
        if self.changes is not None:
            self.changes.removed(op)  # its readers may now read nothing: the gate looks again
        self._members.remove(op)
        self._dirty = True
        for t in op.inputs:
            if t is not None:
                t._uses.remove(op)
        for t in op.outputs:
            if t.producer is op:
                t.producer = None

    def move_before(self, op: Op, anchor: Op) -> None:
        """Run `op` right before `anchor` instead of where it runs (the caller keeps every tensor
        written before it is read). Linear in the graph."""
        self.touch(op)
        order = self.ops
        order.remove(op)
        order.insert(order.index(anchor), op)

    def _settle_order(self) -> None:
        """Drop removed ops from the order and splice in the ops inserted after an anchor (the
        latest insertion nearest its anchor) or before one (in insertion order), in one sweep."""
        order: list[Op] = []
        pending = list(reversed(self._order))
        while pending:
            op = pending.pop()
            ahead = self._inserted_before.pop(op, None)
            if ahead:  # they go first, then the anchor again (with nothing left before it)
                pending.append(op)
                pending.extend(reversed(ahead))
                continue
            if op in self._members:
                order.append(op)
            pending.extend(self._inserted_after.pop(op, ()))  # popped latest-first
        self._order = order
        self._inserted_after.clear()
        self._inserted_before.clear()
        self._dirty = False

    # ---- rewiring ------------------------------------------------------------------------
    def set_input(self, op: Op, index: int, tensor: Tensor | None) -> None:
        self.touch(op)
        inputs = list(op.inputs)
        while len(inputs) <= index:
            inputs.append(None)
        old = inputs[index]
        if old is not None:
            old._uses.remove(op)
        inputs[index] = tensor
        if tensor is not None:
            tensor._uses.append(op)
        op.inputs = tuple(inputs)

    def set_output(self, op: Op, index: int, tensor: Tensor) -> None:
        self.touch(op)
        outputs = list(op.outputs)
        old = outputs[index]
        if old.producer is op:
            old.producer = None
        outputs[index] = tensor
        if self.changes is not None:
            self.changes.relinked(op, old, tensor)
        tensor.producer = op
        op.outputs = tuple(outputs)

    def set_const_input(self, op: Op, index: int, values: np.ndarray | Scaled, name: str) -> bool:
        """Give `op` new constant data at input `index` without touching what anyone else sees.

        A missing (optional) input gets a new tensor. An existing one keeps its shape when `values`
        has as many elements, and is updated only if `op` is its sole reader and nothing outside
        names it; otherwise a new tensor is made. Either way the data goes into a new buffer, so a
        buffer shared with any other tensor is never modified (copy-on-write, see const.py); a
        Scaled stays pending in it.
        An input a DEQUANTIZE expands from FLOAT16 stays FLOAT16 behind its DEQUANTIZE (the values
        are expected in float16 already: weights are never widened). Returns whether it wrote
        float16 values.
        """
        self.touch(op)
        old = op.input(index)
        if old is not None and values.size == math.prod(old.shape):
            values = values.reshape(old.shape)
        source = float_source(old)
        if old is not None and source is not None and source is not old:
            self._set_dequantized_input(op, index, old, source, values, name)
            return True
        if old is not None and self.has_single_use(old, op) and old.dtype == "FLOAT32":
            old.data = values
        else:
            self.set_input(op, index, self.add_const(name, values))
        return False

    def _set_dequantized_input(
        self, op: Op, index: int, old: Tensor, source: Tensor, values: np.ndarray | Scaled, name: str
    ) -> None:
        """`old`, input `index` of `op`, is the DEQUANTIZE of the FLOAT16 constant `source` (float_source)."""
        dequantize = old.producer
        assert dequantize is not None and dequantize.inputs[0] is source  # float_source found it so
        if self.has_single_use(old, op) and self.has_single_use(source, dequantize):
            source.data = values
            return
        new_source = self.add_const(f"{name}/float16", values, "FLOAT16")
        expanded = self.add_tensor(name, "FLOAT32", old.shape, shape_signature=old.shape_signature)
        self.add_op(dequantize.opcode, [new_source], [expanded], None, after=dequantize)
        self.set_input(op, index, expanded)

    def replace_uses(self, old: Tensor, new: Tensor, *, only: Iterable[Op] | None = None) -> None:
        """Make readers of `old` (all, or those in `only`) read `new`. Graph outputs are untouched."""
        targets = set(map(id, only)) if only is not None else None
        for op in self.consumers(old):
            if targets is not None and id(op) not in targets:
                continue
            for i, t in enumerate(op.inputs):
                if t is old:
                    self.set_input(op, i, new)

    # ---- maintenance ---------------------------------------------------------------------
    def dead_ops(self) -> list[Op]:
        """The ops `cleanup` removes: nothing reads their outputs, nor reads those of an op that is
        not itself dead, and no one outside sees them (walking backwards, so an op's readers are
        decided before the op)."""
        live_uses = {id(t): len(t._uses) for op in self.ops for t in op.outputs}
        dead = []
        for op in reversed(self.ops):
            if op.kind in SIDE_EFFECT_KINDS or not op.outputs:
                continue
            if any(live_uses[id(t)] or self.is_observed(t) for t in op.outputs):
                continue
            dead.append(op)
            for t in op.inputs:
                if t is not None and id(t) in live_uses:
                    live_uses[id(t)] -= 1
        return dead

    def cleanup(self, *, keep: AbstractSet[Op] = frozenset(), dead: list[Op] | None = None) -> Graph:
        """Remove the dead ops (`dead`: what `dead_ops` gave, if the caller asked it already) but
        those in `keep`, then tensors no op or signature refers to."""
        for op in self.dead_ops() if dead is None else dead:
            if op not in keep and not any(t._uses for t in op.outputs):
                self.remove_op(op)
        referenced: set[int] = set()
        for op in self.ops:
            referenced.update(id(t) for t in op.inputs if t is not None)
            referenced.update(id(t) for t in op.outputs)
            referenced.update(id(t) for t in op.intermediates)
        referenced.update(id(t) for t in self.inputs)
        referenced.update(id(t) for t in self.outputs)
        referenced.update(id(t) for t in self.pinned)
        kept = [t for t in self.tensors if id(t) in referenced]
        if self._names is not None and len(kept) != len(self.tensors):
            self._names.difference_update(t.name for t in self.tensors if id(t) not in referenced)
        self.tensors = kept
        return self

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self.ops)} ops, {len(self.tensors)} tensors)"
