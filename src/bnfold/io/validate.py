"""Checks run on a model file before and after anything trusts it.

Python's flatbuffers package has no verifier: the generated accessors add whatever offset the file
holds and read there, so a corrupt file makes them read garbage (strings are silently truncated),
raise deep inside the bindings, or allocate out of all proportion to the file. `validate(data,
fmt, path)` runs before the object-API unpack and does the flatbuffers Verifier's job; what is
well-formed as a flatbuffer but not as a model is checked after lifting, by ir/check.py.

Every table the reader can reach from the root (Model, OperatorCode, SubGraph, Tensor,
quantization, sparsity, Operator and every builtin-options table, Buffer, Metadata, SignatureDef,
TensorMap) has its vtable, inline fields, strings, vectors and sub-table offsets bounds-checked
against the file. The walk is iterative (an explicit stack; the schema has no recursive tables
anyway) and its work is bounded: every table visited counts 4 bytes and every vector or string its
length, and a legitimate file, whose objects do not overlap, cannot describe more bytes than it
has. A file that does (offsets shared or aimed at each other to multiply the work) is rejected as
an absurd structure before anything is allocated.

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

SLACK = 1024  # bytes of structure allowed beyond the file size before a file counts as absurd

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
