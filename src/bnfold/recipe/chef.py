"""Recipes: small networks described in TOML, built into the IR and written as TFLite or Circle.

A recipe names its tensors (`[[operand]]`: name, shape, dtype, optional filler for constants,
optional shape_signature with -1 for a dynamic dimension) and its operators (`[[operation]]`:
type, inputs, outputs, options), then `input`/`output`.
Extra subgraphs (WHILE/IF bodies) go in `[[subgraph]]` tables of the same shape; signatures in
`[[signature]]`; metadata in `[[metadata]]`. What shipped models carry beyond that: a CUSTOM
operator's `custom_options` (a table, stored as the flexbuffer map converters write) and a sparse
constant's `sparsity` (`traversal_order`, optional `block_map`, `dim_metadata` = tables of `format`
"DENSE" with `dense_size` or "SPARSE_CSR" with `array_segments` and `array_indices`); the filler of
a sparse constant makes only the values it stores. The test expectation lives in `[expect]` (see
recipe/rules.py). Options use the schema's snake_case field names and enum names:

    [[operation]]
    type = "CONV_2D"
    inputs = ["ifm", "filter", "bias"]
    outputs = ["conv"]
    options = { padding = "SAME", stride_w = 1, stride_h = 1, fused_activation_function = "NONE" }

Fillers: { kind = "gaussian", mean, stddev } | { kind = "uniform", low, high } |
{ kind = "constant", value } | { kind = "explicit", values = [...] } (the values must fill the
shape exactly; nothing is padded with zeros behind your back). Every filler draws from one
generator seeded by the recipe's `seed` (default 0), so a recipe always builds the same model.
"""

from __future__ import annotations

import math
import struct
import tomllib
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..io.formats import CIRCLE, TFLITE, Format, format_of
from ..io.paths import open_input
from ..ir.const import NUMPY_DTYPES, Buffer
from ..ir.graph import Graph, Options, Tensor
from ..ir.invariants import MAX_ELEMENTS, validate_model
from ..ir.model import Metadata, Model, Signature
from ..ir.ops import FUSED_ACTIVATIONS, PADDINGS, info
from .keys import (
    DIMENSION_KEYS,
    FILLER_KEYS,
    GRAPH_KEYS,
    METADATA_KEYS,
    OPERAND_KEYS,
    OPERATION_KEYS,
    QUANT_KEYS,
    RECIPE_KEYS,
    SIGNATURE_KEYS,
    SPARSITY_KEYS,
    check_keys,
)
from .rules import expectation

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# option fields whose values are given by enum name
ENUM_FIELDS = {"padding": PADDINGS, "fused_activation_function": FUSED_ACTIVATIONS}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def load_recipe(path: str | Path) -> dict:
    try:
        with open_input(str(path), "a recipe") as f:
            return tomllib.loads(f.read().decode("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"not valid TOML: {e}", str(path)) from None
    except UnicodeDecodeError:
        raise UsageError("not valid TOML: not UTF-8 text", str(path)) from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise UsageError("not a recipe: values nested too deeply", str(path)) from None
    except OSError as e:
        raise UsageError(f"cannot read: {e.strerror or e}", str(path)) from None


def build(recipe: dict, fmt: Format = TFLITE, *, where: str = "recipe") -> Model:
    """The IR model a recipe describes; a recipe that is not well-formed, or describes a model
    bnfold's own reader would refuse, is refused here (UsageError / ModelError naming `where`)."""
    check_keys(recipe, RECIPE_KEYS, where)
    expectation(recipe, where)  # refused here too: `recipe build` of a recipe `recipe test` would refuse
    description = _typed(recipe.get("description", "bnfold recipe"), str, "description", where)
    model = Model(fmt, version=fmt.schema_version, description=description.encode())
    seed = _typed(recipe.get("seed", 0), int, "seed", where)
    if seed < 0:
        raise UsageError(f"{where}: seed must not be negative, not {seed}")
    rng = np.random.default_rng(seed)
    graphs_spec = [recipe] + _tables(recipe, "subgraph", where)
    for gi, spec in enumerate(graphs_spec[1:], 1):
        check_keys(spec, GRAPH_KEYS, f"{where} subgraph {gi}")
    names: list[dict[str, Tensor]] = []  # per subgraph: recipe name -> tensor
    for gi, spec in enumerate(graphs_spec):
        name = _typed(spec.get("name", "main" if gi == 0 else f"subgraph_{gi}"), str, "subgraph name", where)
        model.add_graph(Graph(name))
    for gi, spec in enumerate(graphs_spec):
        names.append(_build_graph(model, model.graphs[gi], spec, rng, f"{where} subgraph {gi}"))
    if not model.graphs[0].ops:
        raise UsageError(f"{where}: defines no operator (a model needs at least one [[operation]])")
    for s in _tables(recipe, "signature", where):
        model.signatures.append(_signature(s, model, names, where))
    for m in _tables(recipe, "metadata", where):
        check_keys(m, METADATA_KEYS, f"{where} metadata")
        text = _typed(m.get("text"), str, "metadata text", where)
        buffer = Buffer.from_array(np.frombuffer(text.encode(), dtype=np.uint8))
        model.buffers.append(buffer)
        model.metadata.append(Metadata(_typed(m.get("name"), str, "metadata name", where).encode(), buffer))
    return validate_model(model, where)


def _signature(spec: dict, model: Model, names: list[dict[str, Tensor]], where: str) -> Signature:
    check_keys(spec, SIGNATURE_KEYS, f"{where} signature")
    index = _typed(spec.get("subgraph", 0), int, "signature subgraph", where)
    if not 0 <= index < len(model.graphs):
        raise UsageError(f"{where}: signature names subgraph {index}, but the recipe has {len(model.graphs)}")
    graph, known = model.graphs[index], names[index]

    def pairs(field):
        table = _typed(spec.get(field, {}), dict, f"signature {field}", where)
        out = []
        for key, name in table.items():
            if not isinstance(name, str) or name not in known:
                raise UsageError(
                    f"{where}: signature {field} {key!r} names unknown operand {name!r} of subgraph {index}"
                )
            out.append((key.encode(), known[name]))
        return out

    sig = Signature(
        _typed(spec.get("key"), str, "signature key", where).encode(), graph, pairs("inputs"), pairs("outputs")
    )
    graph.pinned.update(t for _, t in sig.inputs + sig.outputs)
    return sig


def _typed(value, kind: type | tuple[type, ...], what: str, where: str):
    """`value` if it is a `kind` (an int is never a bool here), else a usage error naming it."""
    if isinstance(value, kind) and not isinstance(value, bool) or kind is bool and isinstance(value, bool):
        return value
    raise UsageError(f"{where}: {what} must be {_KIND_NAMES.get(kind, kind)}, not {value!r}"[:300])


_KIND_NAMES = {
    int: "an integer",
    str: "a string",
    dict: "a table",
    list: "a list",
    (int, float): "a number",
    (str, type(None)): "a string",
}


def _numbers(value, what: str, where: str) -> list:
    return [_typed(v, (int, float), f"each of {what}", where) for v in _typed(value, list, what, where)]


def _tables(spec: dict, key: str, where: str) -> list[dict]:
    """The array of tables `[[key]]` (empty when absent)."""
    items = _typed(spec.get(key, []), list, f"[[{key}]]", where)
    for item in items:
        _typed(item, dict, f"each [[{key}]]", where)
    return items


def _shape(value, what: str, where: str) -> list[int]:
    dims = [_typed(d, int, f"{what} dimension", where) for d in _typed(value, list, what, where)]
    if any(d < 0 for d in dims):
        raise UsageError(f"{where}: {what} {dims} has a negative dimension")
    if any(d > INT32_MAX for d in dims):  # shapes are int32 in both schemas
        raise UsageError(f"{where}: {what} {dims} has a dimension beyond int32"[:300])
    if math.prod(max(d, 1) for d in dims) > MAX_ELEMENTS:
        raise UsageError(f"{where}: {what} {dims} is absurdly large (more than {MAX_ELEMENTS} elements)")
    return dims


def _build_graph(model: Model, graph: Graph, spec: dict, rng, where: str) -> dict[str, Tensor]:
    """Fill `graph` from its recipe table; returns the operands by name."""
    known: dict[str, Tensor] = {}
    for operand in _tables(spec, "operand", where):
        check_keys(operand, OPERAND_KEYS, f"{where} operand {operand.get('name')!r}")
        name = _typed(operand.get("name"), str, "operand name", where)
        dtype = _typed(operand.get("dtype", "FLOAT32"), str, f"operand {name!r} dtype", where)
        shape = _shape(operand.get("shape", []), f"operand {name!r} shape", where)
        if dtype not in model.format.dtype_codes:
            raise UsageError(f"{where}: operand {name!r} has unknown dtype {dtype}")
        if name in known:
            raise UsageError(f"{where}: operand {name!r} is declared twice")
        if "filler" in operand:
            filler = _typed(operand["filler"], dict, f"operand {name!r} filler", where)
            sparse = (
                _sparsity(format_of(model), operand["sparsity"], shape, f"{where} operand {name!r}")
                if "sparsity" in operand
                else None
            )
            stored = shape if sparse is None else [sparse[1]]
            t = graph.add_const(name, _fill(filler, stored, dtype, rng, f"{where} operand {name!r}"), dtype)
            if sparse is not None:  # the buffer holds the stored values; the shape is the dense one
                t.shape, t.record = tuple(shape), model.format.cls("TensorT")()
                t.record.sparsity = sparse[0]
        else:
            t = graph.add_tensor(name, dtype, shape)
        known[name] = t
        if "shape_signature" in operand:  # -1 where a dimension is dynamic (shape holds a size for it)
            signature = _typed(operand["shape_signature"], list, f"operand {name!r} shape_signature", where)
            if len(signature) != len(shape) or not all(isinstance(d, int) and d >= -1 for d in signature):
                raise UsageError(f"{where}: operand {name!r} shape_signature must be {len(shape)} integers >= -1")
            t.shape_signature = tuple(signature)
        if "quant" in operand:
            q = model.format.cls("QuantizationParametersT")()
            quant = _typed(operand["quant"], dict, f"operand {name!r} quant", where)
            check_keys(quant, QUANT_KEYS, f"{where} operand {name!r} quant")
            q.scale = np.asarray(_numbers(quant.get("scale"), "quant scale", where), dtype=np.float32)
            zero_point = quant.get("zero_point", [0] * len(q.scale))
            q.zeroPoint = np.asarray(
                [
                    _typed(z, int, "quant zero_point", where)
                    for z in _typed(zero_point, list, "quant zero_point", where)
                ],
                dtype=np.int64,
            )
            q.quantizedDimension = _typed(quant.get("quantized_dimension", 0), int, "quant quantized_dimension", where)
            t.quantization = q

    def tensors(names, what, optional=False):
        out: list[Tensor | None] = []
        for name in _typed(names, list, what, where):
            if optional and name in ("", "-"):  # an absent optional input (e.g. TRANSPOSE_CONV without bias)
                out.append(None)
            elif isinstance(name, str) and name in known:
                out.append(known[name])
            else:
                raise UsageError(f"{where}: {what} names unknown operand {name!r}"[:300])
        return out

    for op in _tables(spec, "operation", where):
        check_keys(op, OPERATION_KEYS, f"{where} operation {op.get('type')!r}")
        kind = _typed(op.get("type"), str, "operation type", where)
        if kind not in model.format.op_codes:
            raise UsageError(f"{where}: unknown operator {kind} for {model.format.name}")
        options = _with_defaults(format_of(model), _options(kind, op, where), where)
        custom = op.get("custom_code")
        custom = None if custom is None else _typed(custom, str, f"{kind} custom_code", where).encode()
        version = _typed(op.get("version", 1), int, f"{kind} version", where)
        if not 1 <= version < 2**31:  # OperatorCode.version is an int32; LiteRT counts from 1
            raise UsageError(f"{where}: {kind} version must be 1 .. 2^31-1, not {version}")
        opcode = model.opcode(kind, version=version, custom_code=custom)
        record = None
        if "custom_options" in op:
            record = model.format.cls("OperatorT")()
            record.customOptions = list(_flexbuffer_map(op["custom_options"], f"{where} {kind} custom_options"))
        graph.add_op(
            opcode,
            tensors(op.get("inputs", []), f"{kind} inputs", optional=True),
            tensors(op.get("outputs", []), f"{kind} outputs"),
            options,
            record=record,
        )
    graph.inputs = tensors(spec.get("input", []), "input")
    graph.outputs = tensors(spec.get("output", []), "output")
    return known


def _flexbuffer_map(table, where: str) -> bytes:
    """A CUSTOM operator's options as the TFLite converter stores them: a flexbuffer map."""
    from flatbuffers import flexbuffers

    _typed(table, dict, "custom_options", where)
    try:
        return bytes(flexbuffers.Dumps(table))
    except (TypeError, ValueError, OverflowError) as e:
        raise UsageError(f"{where}: cannot be stored as a flexbuffer: {e}"[:300]) from None


DIMENSION_FORMATS = ("DENSE", "SPARSE_CSR")


def _sparsity(fmt: Format, spec, shape: list[int], where: str):
    """(SparsityParameters record, how many values the buffer stores) of a sparse constant: each
    dimension in traversal order multiplies the count (DENSE: by its size) or replaces it by its
    index count (SPARSE_CSR, whose segments run over the count so far). More values than the
    dense `shape` holds is refused."""
    spec = _typed(spec, dict, "sparsity", where)
    check_keys(spec, SPARSITY_KEYS, f"{where} sparsity")
    record = fmt.cls("SparsityParametersT")()
    record.traversalOrder = [
        _typed(v, int, "traversal_order", where)
        for v in _typed(spec.get("traversal_order", []), list, "traversal_order", where)
    ]
    record.blockMap = [
        _typed(v, int, "block_map", where) for v in _typed(spec.get("block_map", []), list, "block_map", where)
    ] or None
    record.dimMetadata, count = [], 1
    for dim in _tables(spec, "dim_metadata", where):
        check_keys(dim, DIMENSION_KEYS, f"{where} dim_metadata")
        kind = dim.get("format")
        if kind not in DIMENSION_FORMATS:
            raise UsageError(
                f"{where}: dim_metadata format must be one of {', '.join(DIMENSION_FORMATS)}, not {kind!r}"[:300]
            )
        meta = fmt.cls("DimensionMetadataT")()
        meta.format = DIMENSION_FORMATS.index(kind)
        if kind == "DENSE":
            meta.denseSize = _typed(dim.get("dense_size"), int, "dense_size", where)
            count *= max(meta.denseSize, 0)
        else:
            segments, indices = (
                _int32_vector(fmt, dim.get(key), key, where) for key in ("array_segments", "array_indices")
            )
            meta.arraySegmentsType = meta.arrayIndicesType = 1  # SparseIndexVector.Int32Vector
            meta.arraySegments, meta.arrayIndices = segments, indices
            count = len(indices.values)
        record.dimMetadata.append(meta)
    _fits_schema(record, "sparsity", where)
    if count > math.prod(shape):
        raise UsageError(f"{where}: sparsity stores {count} values, more than its shape {shape} holds")
    return record, count


def _fits_schema(record, what: str, where: str) -> None:
    """The record packs as the writer will pack it: every integer fits its field's width."""
    import flatbuffers

    try:
        record.Pack(flatbuffers.Builder(64))
    except (TypeError, ValueError, OverflowError, struct.error) as e:
        raise UsageError(f"{where}: {what} does not fit its schema: {str(e).splitlines()[0]}"[:300]) from None


def _int32_vector(fmt: Format, values, what: str, where: str):
    vector = fmt.cls("Int32VectorT")()
    vector.values = [_typed(v, int, what, where) for v in _typed(values, list, what, where)]
    return vector


def _options(kind: str, op: dict, where: str) -> Options | None:
    type_name = _typed(op.get("options_type", info(kind).options), (str, type(None)), f"{kind} options_type", where)
    given = _typed(op.get("options", {}), dict, f"{kind} options", where)
    if type_name is None:
        if given:
            raise UsageError(f"{where}: {kind} takes no options (or set options_type)")
        return None
    fields = {}
    for key, value in given.items():
        if key in ENUM_FIELDS:
            names = ENUM_FIELDS[key]
            if value not in names:
                raise UsageError(f"{where}: {kind} option {key}={value!r}; expected one of {', '.join(names)}")
            value = names.index(value)
        elif isinstance(value, list):
            value = [_typed(v, int, f"{kind} option {key}", where) for v in value]
            if not all(INT32_MIN <= v <= INT32_MAX for v in value):
                raise UsageError(f"{where}: {kind} option {key} holds a value outside int32"[:300])
            value = np.asarray(value, dtype=np.int32)
        elif not isinstance(value, (int, float, bool)):
            if isinstance(value, str):  # only enum fields take names: a misspelt one is the likely cause
                check_keys({key: value}, set(ENUM_FIELDS), f"{where}: {kind} options")
            raise UsageError(f"{where}: {kind} option {key} must be a number, a boolean or a list of integers")
        fields[camel(key)] = value
    return Options(type_name, **fields)


def _with_defaults(fmt: Format, options: Options | None, where: str = "recipe") -> Options | None:
    """Fill the scalar fields a recipe leaves out with the schema defaults, so a built op looks
    like one read from a file (e.g. a CONV_2D always has a fused activation field to set); a
    field the table does not have, or a value of the wrong kind, is refused."""
    if options is None:
        return None
    try:
        defaults = vars(fmt.cls(options.type + "T")())
    except Exception:  # an options type this format does not know: leave it as given
        return options
    for name, value in options.fields().items():
        _check_option(options.type, name, value, defaults, where)
    _check_packs(fmt, options, where)
    missing = {k: v for k, v in defaults.items() if isinstance(v, (bool, int, float)) and not hasattr(options, k)}
    return options.copy(**missing) if missing else options


def _check_option(type_name: str, name: str, value, defaults: dict, where: str) -> None:
    """`value` has the kind the schema gives field `name` of `type_name` (its default's type)."""
    if name not in defaults:
        check_keys({_snake(name): value}, {_snake(k) for k in defaults}, f"{where}: {type_name}")
    default = defaults[name]
    if isinstance(default, bool):
        ok = isinstance(value, (bool, int)) and not isinstance(value, float)
        want = "a boolean"
    elif isinstance(default, int):
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, want = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    else:  # vectors (None by default in the object API)
        ok, want = isinstance(value, np.ndarray), "a list of integers"
    if not ok:
        shown = value.tolist() if isinstance(value, np.ndarray) else value
        raise UsageError(f"{where}: {type_name} field {_snake(name)} must be {want}, not {shown!r}"[:300])


def _check_packs(fmt: Format, options: Options, where: str) -> None:
    """The table packs as the writer will pack it: every integer fits its field's width (a stride
    of 10^12 does not fit int32, an enum of 300 not a byte)."""
    record = fmt.cls(options.type + "T")()
    for name, value in options.fields().items():
        setattr(record, name, value)
    _fits_schema(record, options.type, where)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _fill(filler: dict, shape: list[int], dtype: str, rng, where: str) -> np.ndarray:
    check_keys(filler, FILLER_KEYS, f"{where} filler")
    kind = filler.get("kind")
    count = math.prod(shape)
    np_dtype = NUMPY_DTYPES.get(dtype)
    if np_dtype is None:
        raise UsageError(f"{where}: a filler cannot produce {dtype} values")

    def number(key, default):
        return float(_typed(filler.get(key, default), (int, float), f"filler {key}", where))

    if kind == "gaussian":
        stddev = number("stddev", 1.0)
        if stddev < 0:
            raise UsageError(f"{where}: filler stddev must not be negative, not {stddev}")
        values = rng.normal(number("mean", 0.0), stddev, count)
    elif kind == "uniform":
        low, high = number("low", 0.0), number("high", 1.0)
        if not low <= high:
            raise UsageError(f"{where}: uniform filler needs low <= high, not {low} > {high}")
        values = rng.uniform(low, high, count)
        if np.issubdtype(np_dtype, np.integer):
            values = np.floor(values)
    elif kind == "constant":
        values = np.full(count, number("value", 0))
    elif kind == "explicit":
        values = np.asarray(_numbers(filler.get("values", []), "explicit filler values", where))
        if values.size != count:
            raise UsageError(f"{where}: explicit filler has {values.size} values for {count} elements")
    else:
        raise UsageError(f"{where}: unknown filler kind {kind!r} (gaussian, uniform, constant, explicit)")
    return _cast(np.asarray(values), np_dtype, dtype, where).reshape(shape)


def _cast(values: np.ndarray, np_dtype: np.dtype, dtype: str, where: str) -> np.ndarray:
    """`values` as `np_dtype`, refusing what would not survive the cast (numpy would wrap
    integers and turn large floats into inf without a word)."""
    if np_dtype.kind in "iu" and values.size:
        limits = np.iinfo(np_dtype)
        if values.min() < limits.min or values.max() > limits.max:
            raise UsageError(f"{where}: filler values outside the range of {dtype} ({limits.min} .. {limits.max})")
    if np_dtype.kind == "f" and values.size:
        with np.errstate(over="ignore"):
            cast = values.astype(np_dtype)
        if np.any(np.isinf(cast) & np.isfinite(values)):
            raise UsageError(f"{where}: filler values too large for {dtype}")
        return cast
    return values.astype(np_dtype)


def build_file(recipe_path: str, out_path: str) -> Model:
    from ..io.atomic import save_model
    from ..io.formats import format_from_extension

    fmt = format_from_extension(out_path)
    model = build(load_recipe(recipe_path), fmt, where=str(recipe_path))
    save_model(model, out_path, fmt)
    return model


def recipe_format(recipe: dict) -> Format:
    return CIRCLE if recipe.get("format", "tflite") == "circle" else TFLITE
