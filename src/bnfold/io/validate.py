"""Checks run on a model file before and after anything trusts it.

Python's flatbuffers package has no verifier: the generated accessors add whatever offset the file
holds and read there, so a corrupt file makes them read garbage (strings are silently truncated),
raise deep inside the bindings, or allocate out of all proportion to the file. bnfold therefore
runs two checks of its own:

- `validate(data, fmt, path)`, before the object-API unpack: the flatbuffers Verifier's job. Every
  table the reader can reach from the root (Model, OperatorCode, SubGraph, Tensor, quantization,
  sparsity, Operator and every builtin-options table, Buffer, Metadata, SignatureDef, TensorMap)
  has its vtable, inline fields, strings, vectors and sub-table offsets bounds-checked against the
  file. The walk is iterative (an explicit stack; the schema has no recursive tables anyway) and
  its work is bounded: every table visited counts 4 bytes and every vector or string its length,
  and a legitimate file, whose objects do not overlap, cannot describe more bytes than it has. A
  file that does (offsets shared or aimed at each other to multiply the work) is rejected as an
  absurd structure before anything is allocated.
- `check_model(model, path)`, after lifting into the IR: what is well-formed as a flatbuffer but
  not as a model (buffers that do not match their tensor's shape and type, negative dimensions,
  tensors written twice, cycles, tensors read but never produced, subgraph indices out of range).

The field tables below say what each vtable slot of each table holds. They are derived from the
generated bindings by scripts/derive_schema_fields.py (and re-derived by a test, so a binding
upgrade that changes the schema cannot go unnoticed). Kinds: "1"/"2"/"4"/"8" a scalar of that many
bytes, "s" a string, "vN" a vector of N-byte elements (scalars or structs), "S" a vector of strings,
"T:X" a table X, "V:X" a vector of tables X, "U:E" a union of enum E (its type is the slot before),
"-" a slot nothing reads. Options tables with no fields are left out: they are checked
structurally (vtable and inline size) like every other table.
"""

from __future__ import annotations

import struct
from functools import lru_cache

import numpy as np

from ..errors import ModelError
from ..ir.const import NUMPY_DTYPES

TFLITE_TABLES = {  # table -> slot kinds; tables without fields are left out
    'AddOptions': '1 1', 'ArgMaxOptions': '1', 'ArgMinOptions': '1', 'BatchMatMulOptions': '1 1 1',
    'BidirectionalSequenceLSTMOptions': '1 4 4 1 1 1', 'BidirectionalSequenceRNNOptions': '1 1 1 1',
    'BlockwiseQuantization': '4 4 4 v4', 'BucketizeOptions': 'v4', 'Buffer': 'v1 8 8', 'CallOnceOptions': '4',
    'CallOptions': '4', 'CastOptions': '1 1', 'ConcatEmbeddingsOptions': '4 v4 v4', 'ConcatenationOptions': '4 1',
    'Conv2DOptions': '1 4 4 1 4 4 1', 'Conv3DOptions': '1 4 4 4 1 4 4 4', 'CumsumOptions': '1 1',
    'CustomQuantization': 'v1', 'DepthToSpaceOptions': '4', 'DepthwiseConv2DOptions': '1 4 4 4 1 4 4',
    'DimensionMetadata': '1 4 1 U:SparseIndexVector 1 U:SparseIndexVector', 'DivOptions': '1',
    'EmbeddingLookupSparseOptions': '1', 'ExternalBuffer': '4 4 8 8 s', 'ExternalBufferGroup': 's',
    'FakeQuantOptions': '4 4 4 1', 'FullyConnectedOptions': '1 1 1 1 1 v1', 'GatherOptions': '4 4',
    'GeluOptions': '1', 'HashtableOptions': '4 1 1', 'IfOptions': '4 4', 'Int32Vector': 'v4', 'L2NormOptions': '1',
    'LSHProjectionOptions': '1', 'LSTMOptions': '1 4 4 1 1', 'LeakyReluOptions': '4',
    'LocalResponseNormalizationOptions': '4 4 4 4', 'Metadata': 's 4', 'MirrorPadOptions': '1',
    'Model': '4 V:OperatorCode V:SubGraph s V:Buffer v4 V:Metadata V:SignatureDef V:ExternalBufferGroup V:ExternalBuffer',
    'MulOptions': '1', 'MultiAxisQuantization': '4 4 4 v4', 'OneHotOptions': '4',
    'Operator': '4 v4 v4 1 U:BuiltinOptions v1 1 v1 v4 8 8 1 U:BuiltinOptions2 4', 'OperatorCode': '1 s 4 4',
    'PackOptions': '4 4', 'Pool2DOptions': '1 4 4 4 4 1',
    'QuantizationParameters': 'v4 v4 v4 v8 1 U:QuantizationDetails 4', 'RNNOptions': '1 1', 'RandomOptions': '8 8',
    'ReduceWindowOptions': '4', 'ReducerOptions': '1', 'ReshapeOptions': 'v4', 'ResizeBilinearOptions': '- - 1 1',
    'ResizeNearestNeighborOptions': '1 1', 'ReverseSequenceOptions': '4 4', 'SVDFOptions': '4 1 1',
    'SequenceRNNOptions': '1 1 1', 'ShapeOptions': '1', 'SignatureDef': 'V:TensorMap V:TensorMap s - 4',
    'SkipGramOptions': '4 4 1', 'SoftmaxOptions': '4', 'SpaceToDepthOptions': '4', 'SparseToDenseOptions': '1',
    'SparsityParameters': 'v4 v4 V:DimensionMetadata', 'SplitOptions': '4', 'SplitVOptions': '4',
    'SqueezeOptions': 'v4', 'StableHLOCompositeOptions': 's 4 v1 1 4', 'StablehloBroadcastInDimOptions': 'v8',
    'StablehloCaseOptions': 'v4', 'StablehloCompareOptions': '4 4', 'StablehloConcatenateOptions': '8',
    'StablehloConvolutionOptions': 'v8 v8 v8 v8 v1 8 8 v8 8 8 v8 8 8 v8 8 8 v4',
    'StablehloCustomCallOptions': 's 1 s 4 v4 v1', 'StablehloDotGeneralOptions': 'v8 v8 v8 v8 v4',
    'StablehloDynamicSliceOptions': 'v8', 'StablehloGatherOptions': 'v8 v8 v8 8 v8 1', 'StablehloIotaOptions': '8',
    'StablehloPadOptions': 'v8 v8 v8', 'StablehloReduceOptions': 'v8 4',
    'StablehloReduceWindowOptions': 'v8 v8 v8 v8 v8 4', 'StablehloRngBitGeneratorOptions': '1',
    'StablehloScatterOptions': '1 v8 v8 v8 8 1 4', 'StablehloSliceOptions': 'v8 v8 v8',
    'StablehloSortOptions': '8 1 4', 'StablehloTransposeOptions': 'v8', 'StablehloWhileOptions': '4 4',
    'StridedSliceOptions': '4 4 4 4 4 1', 'SubGraph': 'V:Tensor v4 v4 V:Operator s 4', 'SubOptions': '1 1',
    'Tensor': 'v4 1 4 s T:QuantizationParameters 1 T:SparsityParameters v4 1 V:VariantSubType 4', 'TensorMap': 's 4',
    'TransposeConvOptions': '1 4 4 1 1', 'Uint16Vector': 'v2', 'Uint8Vector': 'v1',
    'UnidirectionalSequenceLSTMOptions': '1 4 4 1 1 1', 'UniqueOptions': '1', 'UnpackOptions': '4 4',
    'VarHandleOptions': 's s', 'VariantSubType': 'v4 1 1', 'WhileOptions': '4 4',
}
CIRCLE_TABLES_DIFF = {  # where Circle's tables differ
    'BCQFullyConnectedOptions': '4 1', 'BCQGatherOptions': '4 4', 'BlockwiseQuantization': '4 4 4',
    'FullyConnectedOptions': '1 1 1 1 1', 'GRUOptions': '1 1 1', 'InstanceNormOptions': '4 1', 'MXQuantization': '4',
    'Model': '4 V:OperatorCode V:SubGraph s V:Buffer v4 V:Metadata V:SignatureDef', 'RmsNormOptions': '4',
    'RoPEOptions': '4', 'RunModelOptions': 's s', 'SubGraph': 'V:Tensor v4 v4 V:Operator s - 4',
    'Tensor': 'v4 1 4 s T:QuantizationParameters 1 T:SparsityParameters v4 1 V:VariantSubType 1',
}
CIRCLE_TABLES_ABSENT = ('ExternalBuffer', 'ExternalBufferGroup', 'MultiAxisQuantization')

# Byte sizes of fixed-size element types numpy has no dtype for (sizes of the others come from
# NUMPY_DTYPES); packed and variable-size types (INT4, UINT4, INT2, STRING, RESOURCE, VARIANT)
# have no per-element size and are not size-checked.
EXTRA_ITEM_SIZES = {"BFLOAT16": 2, "FLOAT8E4M3FN": 1, "FLOAT8E5M2": 1}
SLACK = 1024  # bytes of structure allowed beyond the file size before a file counts as absurd
# The options table each operator passes rewrite must carry when it carries one. LiteRT ignores a
# table of the wrong type (it reads defaults); passes would read or write fields it does not have.
OPTIONS_OF = {"CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions", "CONV_3D": "Conv3DOptions",
              "TRANSPOSE_CONV": "TransposeConvOptions", "FULLY_CONNECTED": "FullyConnectedOptions",
              "ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions",
              "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions", "L2_POOL_2D": "Pool2DOptions",
              "CONCATENATION": "ConcatenationOptions", "BATCH_MATMUL": "BatchMatMulOptions",
              "RESHAPE": "ReshapeOptions", "TRANSPOSE": "TransposeOptions", "PAD": "PadOptions",
              "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "SOFTMAX": "SoftmaxOptions",
              "INSTANCE_NORM": "InstanceNormOptions", "WHILE": "WhileOptions", "IF": "IfOptions"}
# Kinds that cannot run without their options (strides, padding): LiteRT would read zeros.
NEEDS_OPTIONS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "CONV_3D", "TRANSPOSE_CONV", "AVERAGE_POOL_2D",
                           "MAX_POOL_2D", "L2_POOL_2D"})
# kind -> (inputs that must be present, number of outputs): the arity LiteRT's kernels check, for
# the kinds passes match on, so a pass can index op.inputs[:n] and op.outputs[0] safely.
ARITY = {
    "CONV_2D": (2, 1), "DEPTHWISE_CONV_2D": (2, 1), "CONV_3D": (2, 1), "TRANSPOSE_CONV": (3, 1),
    "FULLY_CONNECTED": (2, 1), "ADD": (2, 1), "SUB": (2, 1), "MUL": (2, 1), "DIV": (2, 1), "MAXIMUM": (2, 1),
    "MINIMUM": (2, 1), "AVERAGE_POOL_2D": (1, 1), "MAX_POOL_2D": (1, 1), "L2_POOL_2D": (1, 1), "RELU": (1, 1),
    "RELU6": (1, 1), "RELU_N1_TO_1": (1, 1), "TANH": (1, 1), "LOGISTIC": (1, 1), "LEAKY_RELU": (1, 1),
    "PRELU": (2, 1), "RESHAPE": (1, 1), "TRANSPOSE": (2, 1), "PAD": (2, 1), "MEAN": (2, 1), "SOFTMAX": (1, 1),
    "DEQUANTIZE": (1, 1), "QUANTIZE": (1, 1), "BATCH_MATMUL": (2, 1), "INSTANCE_NORM": (3, 1),
    "SQUEEZE": (1, 1), "EXPAND_DIMS": (2, 1), "CONCATENATION": (1, 1),
}
# kind -> (input index, rank) of the weights LiteRT's kernels insist on.
WEIGHT_RANK = {"CONV_2D": (1, 4), "DEPTHWISE_CONV_2D": (1, 4), "CONV_3D": (1, 5), "TRANSPOSE_CONV": (1, 4),
               "FULLY_CONNECTED": (1, 2)}
# kind -> (bias input index, weights dimension that counts output channels); LiteRT checks these.
BIAS_OF = {"CONV_2D": (2, 0), "FULLY_CONNECTED": (2, 0), "DEPTHWISE_CONV_2D": (2, 3), "CONV_3D": (2, 4),
           "TRANSPOSE_CONV": (3, 0)}
# Option fields that divide or step: zero or negative would make a kernel (and a pass) divide by zero.
POSITIVE_FIELDS = ("strideW", "strideH", "strideD", "dilationWFactor", "dilationHFactor", "dilationDFactor",
                   "filterWidth", "filterHeight")
# No tensor of a real model holds more elements than this (8 GB of float32); a larger shape is a
# corrupt one, and passes size arrays by shapes.
MAX_ELEMENTS = 2**31

_SCALAR, _STRING, _VECTOR, _STRINGS, _TABLE, _TABLES, _UNION = range(7)
_U8 = struct.Struct("<B").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_VT_HEAD = struct.Struct("<HH").unpack_from


class _Malformed(Exception):
    """Raised inside the walk; turned into one ModelError by validate()."""


def _compile(spec: str) -> tuple:
    """(slot, kind, inline width, argument) for each slot a spec string describes, by slot."""
    fields = []
    for slot, token in enumerate(spec.split()):
        if token == "-":
            continue
        if token.isdigit():
            fields.append((slot, _SCALAR, int(token), None))
        elif token == "s":
            fields.append((slot, _STRING, 4, None))
        elif token == "S":
            fields.append((slot, _STRINGS, 4, None))
        elif token[0] == "v":
            fields.append((slot, _VECTOR, 4, int(token[1:])))
        else:
            kind = {"T": _TABLE, "V": _TABLES, "U": _UNION}[token[0]]
            fields.append((slot, kind, 4, token[2:]))
    return tuple(fields)


@lru_cache(maxsize=None)
def _schema(fmt) -> tuple[dict, dict]:
    """Compiled field tables and union members ({enum: {type code: table}}) for one format."""
    specs = dict(TFLITE_TABLES)
    if fmt.name == "circle":
        for name in CIRCLE_TABLES_ABSENT:
            specs.pop(name, None)
        specs.update(CIRCLE_TABLES_DIFF)
    tables = {name: _compile(spec) for name, spec in specs.items()}
    unions = {}
    for enum in ("BuiltinOptions", "BuiltinOptions2", "QuantizationDetails", "SparseIndexVector"):
        members = fmt._enum(enum) if fmt.has_cls(enum) else {}
        unions[enum] = {code: name for name, code in members.items() if code != 0}
    return tables, unions


def validate(data, fmt, path: str) -> None:
    """Bounds-check the whole reachable structure of a flatbuffer; raise ModelError if it is not sound."""
    size = len(data)
    (root,) = _U32(data, 0)
    if root < 8 or root + 4 > size:
        raise ModelError(f"root table offset {root} is outside the file ({size} bytes); the file is truncated or not a flatbuffer", path)
    tables, unions = _schema(fmt)
    try:
        _walk(data, size, root, tables, unions)
    except _Malformed as e:
        raise ModelError(f"malformed {fmt.name} flatbuffer: {e}", path) from None


def _walk(buf, size: int, root: int, tables: dict, unions: dict) -> None:
    """Visit every table reachable from the root, iteratively, within a work budget of the file size."""
    budget = size + SLACK
    vtables: dict[int, tuple[int, tuple]] = {}
    stack = [(root, "Model")]
    while stack:
        pos, name = stack.pop()
        budget -= 4
        if budget < 0:
            raise _Malformed("absurd structure: it describes more data than the file holds (shared or overlapping offsets)")
        inline, slots = _table(buf, size, pos, name, vtables)
        nslots = len(slots)
        for slot, kind, width, arg in tables.get(name, ()):
            if slot >= nslots:
                break
            off = slots[slot]
            if off == 0:
                continue
            if off + width > inline:
                raise _Malformed(f"{name} at byte {pos}: field {slot} lies outside the table")
            if kind == _SCALAR:
                continue
            at = pos + off
            target = at + _U32(buf, at)[0]
            if target + 4 > size:
                raise _Malformed(f"{name} at byte {pos}: field {slot} points outside the file ({target})")
            if kind == _TABLE:
                stack.append((target, arg))
            elif kind == _UNION:
                type_off = slots[slot - 1] if slot >= 1 else 0
                member = unions[arg].get(_U8(buf, pos + type_off)[0]) if type_off else None
                if member is not None:
                    stack.append((target, member))
            else:
                count = _U32(buf, target)[0]
                item = arg if kind == _VECTOR else 1 if kind == _STRING else 4
                end = target + 4 + count * item
                if end > size:
                    raise _Malformed(f"{name} at byte {pos}: field {slot} ({count} elements) runs past the end of the file")
                budget -= 4 + count * item
                if kind == _TABLES or kind == _STRINGS:
                    _elements(buf, size, target, count, kind, arg, stack)
    return None


def _table(buf, size: int, pos: int, name: str, vtables: dict) -> tuple[int, tuple]:
    """A table's inline size and vtable slots, after checking both lie inside the file.
    Vtables are shared between tables of one shape, so each is parsed once."""
    if pos + 4 > size:
        raise _Malformed(f"{name} at byte {pos} is outside the file")
    vt = pos - _I32(buf, pos)[0]
    entry = vtables.get(vt)
    if entry is None:
        if vt < 0 or vt + 4 > size or vt & 1:
            raise _Malformed(f"{name} at byte {pos} has its vtable outside the file ({vt})")
        vt_size, inline = _VT_HEAD(buf, vt)
        if vt_size < 4 or vt_size & 1 or vt + vt_size > size:
            raise _Malformed(f"{name} at byte {pos} has a corrupt vtable (size {vt_size})")
        entry = vtables[vt] = (inline, struct.unpack_from(f"<{(vt_size - 4) // 2}H", buf, vt + 4))
    inline = entry[0]
    if inline < 4 or pos + inline > size:
        raise _Malformed(f"{name} at byte {pos} has an inline size ({inline}) outside the file")
    return entry


def _elements(buf, size: int, start: int, count: int, kind: int, arg, stack: list) -> None:
    """Queue the tables of a vector of tables, or check each string of a vector of strings."""
    first = start + 4
    for i, rel in enumerate(struct.unpack_from(f"<{count}I", buf, first)):
        target = first + 4 * i + rel
        if kind == _TABLES:
            stack.append((target, arg))
        elif target + 4 > size or target + 4 + _U32(buf, target)[0] > size:
            raise _Malformed(f"string {i} of a vector at byte {start} runs past the end of the file")


# ---- after lifting: what a sound flatbuffer can still get wrong ------------------------------

def check_model(model, path: str):
    """Semantic checks on a lifted model; returns it, or raises ModelError naming the problem."""
    n_graphs = len(model.graphs)
    for g_index, graph in enumerate(model.graphs):
        where = f"subgraph {g_index}"
        for t_index, t in enumerate(graph.tensors):
            _check_tensor(t, f"{where} tensor {t_index} ({t.name!r})", path)
        _check_ops(graph, where, n_graphs, path)
    return model


def _item_size(dtype: str) -> int | None:
    np_dtype = NUMPY_DTYPES.get(dtype)
    return np_dtype.itemsize if np_dtype is not None else EXTRA_ITEM_SIZES.get(dtype)


def _check_tensor(t, where: str, path: str) -> None:
    """Shape sane; a constant's bytes match its shape and type (sparse tensors excepted: their
    buffer holds the compressed values)."""
    if any(d < 0 for d in t.shape):
        # LiteRT refuses these too; a dynamic dimension is -1 in shape_signature, never in shape
        raise ModelError(f"{where} has a negative dimension in shape {list(t.shape)}", path)
    signature = t.shape_signature
    if signature is not None and len(signature) != len(t.shape) and len(signature) > 0:
        raise ModelError(f"{where} has shape signature {list(signature)} of another rank than its shape {list(t.shape)}", path)
    count = bound = 1
    for d in t.shape:
        count *= d
        bound *= max(d, 1)  # a zero dimension does not make the others sane
    if bound > MAX_ELEMENTS:
        raise ModelError(f"{where} has an absurd shape {list(t.shape)} ({bound} elements)", path)
    if not t.is_const or getattr(t.record, "sparsity", None) is not None:
        return
    item = _item_size(t.dtype)
    if item is None:
        return
    expected, actual = count * item, t.buffer.nbytes
    if expected != actual:
        raise ModelError(f"{where}: its buffer holds {actual} bytes but shape {list(t.shape)} of {t.dtype} needs {expected}", path)


def _check_ops(graph, where: str, n_graphs: int, path: str) -> None:
    """Each tensor written once; everything read is produced, an input, a constant or a variable;
    subgraph indices in options in range; fused activations known; no cycles."""
    from ..ir.graph import ACTIVATIONS

    producers: dict[int, int] = {}
    for o_index, op in enumerate(graph.ops):
        for t in op.outputs:
            if id(t) in producers:
                raise ModelError(f"{where}: tensor {t.name!r} is written by operators {producers[id(t)]} and {o_index}", path)
            producers[id(t)] = o_index
        _check_options(op, f"{where} operator {o_index} ({op.kind})", n_graphs, len(ACTIVATIONS), path)
    sources = {id(t) for t in graph.inputs}
    for o_index, op in enumerate(graph.ops):
        for t in op.inputs:
            if t is None or id(t) in producers or id(t) in sources or t.is_const or _is_variable(t) or _is_empty(t):
                continue
            raise ModelError(f"{where} operator {o_index} ({op.kind}) reads tensor {t.name!r}, which no operator "
                             "produces and which is neither an input, a constant nor a variable", path)
    _check_acyclic(graph, producers, where, path)


def _is_variable(t) -> bool:
    record = t.record
    return record is not None and (bool(getattr(record, "isVariable", False)) or bool(getattr(record, "externalBuffer", 0)))


def _is_empty(t) -> bool:
    """A tensor with a zero dimension holds no values, so it needs no producer."""
    return any(d == 0 for d in t.shape)


def _check_options(op, where: str, n_graphs: int, n_activations: int, path: str) -> None:
    required, n_outputs = ARITY.get(op.kind, (0, None))
    if len(op.inputs) < required or any(t is None for t in op.inputs[:required]):
        raise ModelError(f"{where} needs {required} inputs, has {sum(t is not None for t in op.inputs[:required])}", path)
    if n_outputs is not None and len(op.outputs) != n_outputs:
        raise ModelError(f"{where} has {len(op.outputs)} outputs, expected {n_outputs}", path)
    if op.kind in WEIGHT_RANK:
        index, rank = WEIGHT_RANK[op.kind]
        if len(op.inputs[index].shape) != rank:
            raise ModelError(f"{where} has weights of rank {len(op.inputs[index].shape)}, expected {rank}", path)
    if op.kind in BIAS_OF:
        index, dim = BIAS_OF[op.kind]
        bias, weights = op.input(index), op.inputs[1]
        if bias is not None and dim < len(weights.shape) and int(np.prod(bias.shape)) != weights.shape[dim]:
            raise ModelError(f"{where} has a bias of shape {list(bias.shape)} for {weights.shape[dim]} output channels", path)
    options = op.options
    if options is None:
        if op.kind in NEEDS_OPTIONS:
            raise ModelError(f"{where} has no options table (strides and padding)", path)
        return
    expected = OPTIONS_OF.get(op.kind)
    if expected is not None and options.type != expected:
        raise ModelError(f"{where} carries {options.type}, expected {expected}", path)
    for name, value in options.fields().items():
        if "subgraph" in name.lower() or name == "subgraph":
            values = value if isinstance(value, (list, np.ndarray)) else [value]
            for v in values:
                if isinstance(v, (int, np.integer)) and not 0 <= int(v) < n_graphs:
                    raise ModelError(f"{where}: {name} refers to subgraph {int(v)}, but the model has {n_graphs}", path)
    if op.kind in NEEDS_OPTIONS:
        for name in POSITIVE_FIELDS:
            value = getattr(options, name, None)
            if isinstance(value, int) and value < 1:
                raise ModelError(f"{where} has {name} = {value}; it must be at least 1", path)
    act = getattr(options, "fusedActivationFunction", None)
    if isinstance(act, int) and not 0 <= act < n_activations:
        raise ModelError(f"{where} has unknown fused activation {act}", path)


def _check_acyclic(graph, producers: dict[int, int], where: str, path: str) -> None:
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
        raise ModelError(f"{where} has a cycle through operator {stuck} ({ops[stuck].kind})", path)
