"""Recipes: small networks described in TOML, built into the IR and written as TFLite or Circle.

A recipe names its tensors (`[[operand]]`: name, shape, dtype, optional filler for constants)
and its operators (`[[operation]]`: type, inputs, outputs, options), then `input`/`output`.
Extra subgraphs (WHILE/IF bodies) go in `[[subgraph]]` tables of the same shape; signatures in
`[[signature]]`; metadata in `[[metadata]]`. The test expectation lives in `[expect]` (see
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

import tomllib
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..io.formats import CIRCLE, TFLITE, Format
from ..io.paths import require_regular_file
from ..ir.const import NUMPY_DTYPES, Buffer
from ..ir.graph import Graph, Options
from ..ir.ops import FUSED_ACTIVATIONS, PADDINGS, info
from ..ir.model import Metadata, Model, Signature

# option fields whose values are given by enum name
ENUM_FIELDS = {"padding": PADDINGS, "fused_activation_function": FUSED_ACTIVATIONS}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def load_recipe(path: str | Path) -> dict:
    require_regular_file(str(path), UsageError)
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise UsageError("recipe not found", str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"not valid TOML: {e}", str(path)) from None


def build(recipe: dict, fmt: Format = TFLITE, *, where: str = "recipe") -> Model:
    """The IR model a recipe describes."""
    model = Model(fmt, version=fmt.schema_version, description=recipe.get("description", "bnfold recipe").encode())
    rng = np.random.default_rng(int(recipe.get("seed", 0)))
    graphs_spec = [recipe] + list(recipe.get("subgraph", []))
    for gi, spec in enumerate(graphs_spec):
        model.add_graph(Graph(spec.get("name", "main" if gi == 0 else f"subgraph_{gi}")))
    for gi, spec in enumerate(graphs_spec):
        _build_graph(model, model.graphs[gi], spec, rng, f"{where} subgraph {gi}")
    for s in recipe.get("signature", []):
        graph = model.graphs[int(s.get("subgraph", 0))]
        sig = Signature(s["key"].encode(), graph,
                        [(k.encode(), graph.tensor(v)) for k, v in s.get("inputs", {}).items()],
                        [(k.encode(), graph.tensor(v)) for k, v in s.get("outputs", {}).items()])
        graph.pinned.update(t for _, t in sig.inputs + sig.outputs)
        model.signatures.append(sig)
    for m in recipe.get("metadata", []):
        buffer = Buffer.from_array(np.frombuffer(m["text"].encode(), dtype=np.uint8))
        model.buffers.append(buffer)
        model.metadata.append(Metadata(m["name"].encode(), buffer))
    return model


OPERAND_KEYS = {"name", "shape", "dtype", "filler", "quant"}
OPERATION_KEYS = {"type", "inputs", "outputs", "options", "options_type", "version", "custom_code"}


def _check_keys(table: dict, allowed: set, what: str) -> None:
    unknown = set(table) - allowed
    if unknown:
        # the usual cause: a top-level key (input = [...]) written after a [[table]] header
        raise UsageError(f"{what} has unknown key(s) {', '.join(sorted(unknown))}; top-level keys must come before any [[table]]")


def _build_graph(model: Model, graph: Graph, spec: dict, rng, where: str) -> None:
    for operand in spec.get("operand", []):
        _check_keys(operand, OPERAND_KEYS, f"{where} operand {operand.get('name')!r}")
        name, dtype = operand["name"], operand.get("dtype", "FLOAT32")
        shape = [int(d) for d in operand.get("shape", [])]
        if dtype not in model.format.dtype_codes:
            raise UsageError(f"{where}: operand {name!r} has unknown dtype {dtype}")
        if "filler" in operand:
            t = graph.add_const(name, _fill(operand["filler"], shape, dtype, rng, f"{where} operand {name!r}"), dtype)
        else:
            t = graph.add_tensor(name, dtype, shape)
        if "quant" in operand:
            q = model.format.cls("QuantizationParametersT")()
            q.scale = np.asarray(operand["quant"]["scale"], dtype=np.float32)
            q.zeroPoint = np.asarray(operand["quant"].get("zero_point", [0] * len(q.scale)), dtype=np.int64)
            q.quantizedDimension = int(operand["quant"].get("quantized_dimension", 0))
            t.quantization = q
        if t.name != name:
            raise UsageError(f"{where}: operand {name!r} is declared twice")

    def tensor(name):
        if name in ("", None, "-"):
            return None
        try:
            return graph.tensor(name)
        except KeyError:
            raise UsageError(f"{where}: unknown operand {name!r}") from None

    for op in spec.get("operation", []):
        _check_keys(op, OPERATION_KEYS, f"{where} operation {op.get('type')!r}")
        kind = op["type"]
        if kind not in model.format.op_codes:
            raise UsageError(f"{where}: unknown operator {kind} for {model.format.name}")
        options = _with_defaults(model.format, _options(kind, op, where))
        custom = op.get("custom_code")
        opcode = model.opcode(kind, version=int(op.get("version", 1)), custom_code=custom.encode() if custom else None)
        graph.add_op(opcode, [tensor(n) for n in op.get("inputs", [])], [tensor(n) for n in op.get("outputs", [])], options)
    graph.inputs = [tensor(n) for n in spec.get("input", [])]
    graph.outputs = [tensor(n) for n in spec.get("output", [])]


def _options(kind: str, op: dict, where: str) -> Options | None:
    type_name = op.get("options_type", info(kind).options)
    given = op.get("options", {})
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
            value = np.asarray(value, dtype=np.int32)
        fields[camel(key)] = value
    return Options(type_name, **fields)


def _with_defaults(fmt: Format, options: Options | None) -> Options | None:
    """Fill the scalar fields a recipe leaves out with the schema defaults, so a built op looks
    like one read from a file (e.g. a CONV_2D always has a fused activation field to set)."""
    if options is None:
        return None
    try:
        defaults = vars(fmt.cls(options.type + "T")())
    except Exception:  # an options type this format does not know: leave it as given
        return options
    missing = {k: v for k, v in defaults.items() if isinstance(v, (bool, int, float)) and not hasattr(options, k)}
    return options.copy(**missing) if missing else options


def _fill(filler: dict, shape: list[int], dtype: str, rng, where: str) -> np.ndarray:
    kind = filler.get("kind")
    count = int(np.prod(shape)) if shape else 1
    np_dtype = NUMPY_DTYPES[dtype]
    if kind == "gaussian":
        values = rng.normal(float(filler.get("mean", 0.0)), float(filler.get("stddev", 1.0)), count)
    elif kind == "uniform":
        values = rng.uniform(float(filler.get("low", 0.0)), float(filler.get("high", 1.0)), count)
        if np.issubdtype(np_dtype, np.integer):
            values = np.floor(values)
    elif kind == "constant":
        values = np.full(count, filler.get("value", 0))
    elif kind == "explicit":
        values = np.asarray(filler.get("values", []))
        if values.size != count:
            raise UsageError(f"{where}: explicit filler has {values.size} values for {count} elements")
    else:
        raise UsageError(f"{where}: unknown filler kind {kind!r} (gaussian, uniform, constant, explicit)")
    return np.asarray(values).astype(np_dtype).reshape(shape)


def build_file(recipe_path: str, out_path: str) -> Model:
    from ..io.formats import format_from_extension
    from ..io.writer import save_model

    fmt = format_from_extension(out_path)
    model = build(load_recipe(recipe_path), fmt, where=str(recipe_path))
    save_model(model, out_path, fmt)
    return model


def recipe_format(recipe: dict) -> Format:
    return CIRCLE if recipe.get("format", "tflite") == "circle" else TFLITE

