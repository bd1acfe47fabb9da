"""Derive src/bnfold/ir/runtimes.py, what each runtime runs, from the real runtimes.

    python schemas/derive_runtimes.py           # rewrite the table from the installed runtimes
    python schemas/derive_runtimes.py --check   # exit 1 (with the differences) if they disagree with it

For every probe below (an operator kind with one variant: a fused activation, a constant operand
where a runtime may refuse one, a rank, a type, or a form: the op in a shape of its own, or in a
graph around it, as a graph output's reader) the recipe chef builds a small float32 Circle model,
one op where the variant allows; a runtime runs it when it loads the model and one run on
normal(0, 2) inputs gives what bnfold's reference interpreter computes for every output (so a
fused activation a runtime loads and then ignores, as LiteRT 2.3 does TANH on CONV_2D, counts as
not run). LiteRT (ai-edge-litert, the model written as TFLite: its builtin kernels without
delegates, and its default run with the XNNPACK delegate, which must agree) and onert (pip
`onert`, cpu backend, the Circle file) are asked. The probes are
the operators and fused activations bnfold's passes make or keep (a pass that would
make one a target cannot run refuses, engine/targets.py), and their neighbours.
tests/test_runtimes.py re-derives the table from the runtimes installed there (a missing onert
skips its column) and fails on any difference, like tests/test_schemas.py for the bindings.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from bnfold.errors import BnfoldError  # noqa: E402
from bnfold.io.formats import CIRCLE  # noqa: E402
from bnfold.ir.const import NUMPY_DTYPES  # noqa: E402
from bnfold.ir.ops import reduction_form  # noqa: E402
from bnfold.recipe.chef import build  # noqa: E402

TABLE = ROOT / "src" / "bnfold" / "ir" / "runtimes.py"
MISCOMPUTED = ROOT / "src" / "bnfold" / "ir" / "miscomputed.py"
RUNTIMES = ("litert", "onert")
ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH")  # ir/ops.py FUSED_ACTIVATIONS but SIGN_BIT
X = [1, 4, 4, 3]  # every probe's data input: NHWC, 3 channels


def _const(name: str, shape: list[int], dtype: str = "FLOAT32", values: list | None = None) -> dict:
    filler = (
        {"kind": "explicit", "values": values} if values is not None else {"kind": "uniform", "low": 0.5, "high": 2}
    )
    return {"name": name, "shape": shape, "dtype": dtype, "filler": filler}


def _binary(kind: str) -> tuple[list[dict], list[str], dict]:
    return [_const("c", [3])], ["x", "c"], {}


def _conv() -> tuple[list[dict], list[str], dict]:
    return (
        [_const("w", [2, 3, 3, 3]), _const("b", [2])],
        ["x", "w", "b"],
        {"padding": "SAME", "stride_w": 1, "stride_h": 1},
    )


def _dwconv() -> tuple[list[dict], list[str], dict]:
    options = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}
    return [_const("w", [1, 3, 3, 3]), _const("b", [3])], ["x", "w", "b"], options


def _fc() -> tuple[list[dict], list[str], dict]:
    return [_const("w", [2, 3]), _const("b", [2])], ["x", "w", "b"], {"keep_num_dims": False}


def _pool() -> tuple[list[dict], list[str], dict]:
    options = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "filter_width": 2, "filter_height": 2}
    return [], ["x"], options


# Operands a runtime may refuse as constants: (kind, "constant input N") -> the probe's constants, inputs and
# options (onert refuses a BATCH_MATMUL whose left operand is a constant: ONE #16064, TICO #339)
CONSTANT_OPERAND_PROBES = {
    ("BATCH_MATMUL", "constant input 0"): lambda: ([_const("c", [1, 4, 2, 4])], ["c", "x"], {}),
}
CONSTANT_OPERAND_OUTPUT = {("BATCH_MATMUL", "constant input 0"): [1, 4, 2, 3]}


# The ranks and types a runtime may refuse for an operator the layout passes move or make: (kind,
# "rank N" / "type T") -> the probe's recipe (onert 0.1.0 refuses a PAD or MEAN of rank 5, a
# TRANSPOSE of INT64). Ranks up to 4 and float32 are the probes above.
SHAPED_KINDS = ("TRANSPOSE", "RESHAPE", "PAD", "MEAN", "CONCATENATION", "ADD", "MUL", "MINIMUM", "MAXIMUM")
SHAPES = {4: [2, 3, 1, 2], 5: [2, 3, 1, 2, 1], 6: [2, 3, 1, 2, 1, 2]}


def _shaped(kind: str, rank: int, dtype: str = "FLOAT32") -> dict:
    shape = SHAPES[rank]
    count = int(np.prod(shape))
    if kind == "TRANSPOSE":
        perm = list(range(rank))[::-1]
        operands, options, out = [_const("p", [rank], "INT32", perm)], {}, [shape[i] for i in perm]
    elif kind == "RESHAPE":
        operands, options, out = [_const("s", [1], "INT32", [count])], {"new_shape": [count]}, [count]
    elif kind == "PAD":
        operands, options, out = [_const("p", [rank, 2], "INT32", [1] * (2 * rank))], {}, [d + 2 for d in shape]
    elif kind == "MEAN":
        operands, options = [_const("a", [1], "INT32", [1])], {"keep_dims": True}
        out = [1 if i == 1 else d for i, d in enumerate(shape)]
    elif kind == "CONCATENATION":
        operands, options, out = [_const("c", shape, dtype, [1] * count)], {"axis": 0}, [2 * shape[0], *shape[1:]]
    else:  # ADD, MUL, MINIMUM, MAXIMUM: by a constant broadcast along the last axis
        operands, options, out = [_const("c", [shape[-1]], dtype, [1] * shape[-1])], {}, shape
    inputs = ["x", *(o["name"] for o in operands)]
    operation = {"type": kind, "inputs": inputs, "outputs": ["y"], **({"options": options} if options else {})}
    tensors = [{"name": "x", "shape": shape, "dtype": dtype}, *operands, {"name": "y", "shape": out, "dtype": dtype}]
    return {"input": ["x"], "output": ["y"], "operand": tensors, "operation": [operation]}


SHAPED_PROBES = {
    **{(kind, f"rank {rank}"): (kind, rank, "FLOAT32") for kind in SHAPED_KINDS for rank in (5, 6)},
    **{
        (kind, f"type {dtype}"): (kind, 4, dtype)
        for kind in SHAPED_KINDS
        if kind != "MEAN"
        for dtype in ("INT32", "INT64")
    },
}


# The forms of the reductions a runtime may not prepare: a rank-4 input reduced without keep_dims
# over one axis or two ("form rank_4_dropping_A[_B]"; onert 0.1.0 prepares only the channel axis or
# the two spatial ones: runtime/onert/core/src/compiler/ShapeValidator.cc). A reduction of rank 4
# over three axes, or keeping them, is the probes above.
REDUCTIONS = ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN")
REDUCED_SHAPE = [2, 3, 4, 5]
DROPPED_AXES = [(a,) for a in range(4)] + [(a, b) for a in range(4) for b in range(a + 1, 4)]


def _reduction(kind: str, axes: tuple[int, ...]) -> dict:
    out = [d for i, d in enumerate(REDUCED_SHAPE) if i not in axes]
    operation = {"type": kind, "inputs": ["x", "a"], "outputs": ["y"], "options": {"keep_dims": False}}
    tensors = [
        {"name": "x", "shape": REDUCED_SHAPE},
        _const("a", [len(axes)], "INT32", list(axes)),
        {"name": "y", "shape": out},
    ]
    return {"input": ["x"], "output": ["y"], "operand": tensors, "operation": [operation]}


REDUCTION_PROBES = {
    (kind, f"form {reduction_form(4, axes, False)}"): (kind, axes) for kind in REDUCTIONS for axes in DROPPED_AXES
}


# A graph output that another operator reads: "form reads_graph_output" of the reader's kind. The probe is
# the kind's own one-op probe (PROBES, no fused activation) reading g = MUL(x, 1.5), a graph output, with a
# TANH reading the kind's result; both g and the TANH's result are outputs. onert 0.1.0's Python API
# allocates outputs inside the session and frees one after its last reader, so a later tensor can take its
# memory: it returned the TANH's values in g, whatever the reader.
OUTPUT_READERS = ("ADD", "MUL", "FULLY_CONNECTED", "CONV_2D", "RELU", "LOGISTIC", "TANH", "RESHAPE", "TRANSPOSE")
OUTPUT_READERS += ("MEAN", "PAD", "CONCATENATION", "SQUEEZE", "STRIDED_SLICE", "SLICE", "ABS", "NEG")
OUTPUT_READ_FORM = "form reads_graph_output"
OUTPUT_READ_PROBES = {(kind, OUTPUT_READ_FORM): kind for kind in OUTPUT_READERS}


def _reader_of_g(kind: str) -> tuple[list[dict], dict, list[int], list[int]]:
    """The kind's own one-op probe (no fused activation) reading g where it read its data input x:
    its operands (x renamed g), the op, and x's and its result y's shapes, for a probe to give g a
    producer and y a reader."""
    base = recipe(kind, "NONE")
    x = next(t for t in base["operand"] if t["name"] == "x")
    y = next(t for t in base["operand"] if t["name"] == "y")
    operands = [{**t, "name": "g"} if t is x else t for t in base["operand"]]
    (reader,) = base["operation"]
    reader = {**reader, "inputs": ["g" if i == "x" else i for i in reader["inputs"]]}
    return operands, reader, x["shape"], y["shape"]


def _reading_graph_output(kind: str) -> dict:
    operands, reader, x_shape, y_shape = _reader_of_g(kind)
    operands += [{"name": "x", "shape": x_shape}, _const("k", [1], values=[1.5]), {"name": "t", "shape": y_shape}]
    operations = [{"type": "MUL", "inputs": ["x", "k"], "outputs": ["g"]}, reader]
    operations.append({"type": "TANH", "inputs": ["y"], "outputs": ["t"]})
    return {"input": ["x"], "output": ["g", "t"], "operand": operands, "operation": operations}


# A graph output that a DEQUANTIZE of a float16 constant writes, read by an op of the kind: "form
# reads_float16_dequantize_output". The probe is the kind's own one reading g = DEQUANTIZE(k), k float16,
# with g and the kind's result y both outputs and ADD(y, x) the third (the probe's data input x). LiteRT's
# default delegate (XNNPACK) takes a float16 constant's DEQUANTIZE into the op it delegates and then never
# computes g: g is garbage where the reader is delegated (a RESHAPE), right where it is not.
DEQUANTIZE_READ_FORM = "form reads_float16_dequantize_output"
DEQUANTIZE_READ_PROBES = {(kind, DEQUANTIZE_READ_FORM): kind for kind in OUTPUT_READERS}


def _reading_dequantized_output(kind: str) -> dict:
    operands, reader, x_shape, y_shape = _reader_of_g(kind)
    k = {"name": "k", "shape": x_shape, "dtype": "FLOAT16", "filler": {"kind": "uniform", "low": -2, "high": 2}}
    operands += [k, {"name": "x", "shape": y_shape}, {"name": "t", "shape": y_shape}]
    operations = [{"type": "DEQUANTIZE", "inputs": ["k"], "outputs": ["g"]}, reader]
    operations.append({"type": "ADD", "inputs": ["y", "x"], "outputs": ["t"]})
    return {"input": ["x"], "output": ["g", "y", "t"], "operand": operands, "operation": operations}


def _rope(table: list[int], mode: int) -> tuple[list[dict], list[str], dict]:
    sin = {"name": "s", "shape": table, "dtype": "FLOAT32", "filler": {"kind": "uniform", "low": -1, "high": 1}}
    cos = {**sin, "name": "c"}
    return [sin, cos], ["x", "s", "c"], {"mode": mode}


def _attention() -> tuple[list[dict], list[str], dict]:
    """ATTENTION's eleven inputs as onert's newer source orders them (x [1, 4, 16], 4 heads of 4): the
    q / k / v / o weights, cos and sin tables, mask, key and value caches and the position."""
    constants = [_const(w, [16, 16]) for w in ("wq", "wk", "wv", "wo")]
    constants += [_const("cos", [1, 4, 4]), _const("sin", [1, 4, 4]), _const("mask", [1, 1, 4, 4], values=[0] * 16)]
    constants += [_const("kc", [1, 4, 4, 4], values=[0] * 64), _const("vc", [1, 4, 4, 4], values=[0] * 64)]
    constants += [_const("pos", [1], "INT32", [0])]
    return constants, ["x", *(c["name"] for c in constants)], {}


# kind (or "KIND:variant", a form of it) -> (constants, input names, options without the activation) and
# whether it has a fused activation; OUTPUT: the output's shape where it is not its input's
PROBES = {
    "ADD": (lambda: _binary("ADD"), True),
    "SUB": (lambda: _binary("SUB"), True),
    "MUL": (lambda: _binary("MUL"), True),
    "DIV": (lambda: _binary("DIV"), True),
    "CONV_2D": (_conv, True),
    "DEPTHWISE_CONV_2D": (_dwconv, True),
    "FULLY_CONNECTED": (_fc, True),
    "CONCATENATION": (lambda: ([_const("c", [1, 4, 4, 2])], ["x", "c"], {"axis": 3}), True),
    "MAX_POOL_2D": (_pool, True),
    "AVERAGE_POOL_2D": (_pool, True),
    "HARD_SWISH": (lambda: ([], ["x"], {}), False),
    "RELU": (lambda: ([], ["x"], {}), False),
    "RELU6": (lambda: ([], ["x"], {}), False),
    "RELU_N1_TO_1": (lambda: ([], ["x"], {}), False),
    "LOGISTIC": (lambda: ([], ["x"], {}), False),
    "TANH": (lambda: ([], ["x"], {}), False),
    "RESHAPE": (lambda: ([_const("s", [2], "INT32", [1, 48])], ["x", "s"], {"new_shape": [1, 48]}), False),
    "TRANSPOSE": (lambda: ([_const("p", [4], "INT32", [0, 3, 1, 2])], ["x", "p"], {}), False),
    "MEAN": (lambda: ([_const("a", [2], "INT32", [1, 2])], ["x", "a"], {"keep_dims": True}), False),
    "PAD": (lambda: ([_const("p", [4, 2], "INT32", [0, 0, 1, 1, 1, 1, 0, 0])], ["x", "p"], {}), False),
    # what ONE's O1 fusions make (passes/fuse_prelu.py, fuse_gelu.py, fuse_instnorm.py,
    # replace_non_const_fc_with_batch_matmul.py)
    "PRELU": (lambda: ([_const("a", [3])], ["x", "a"], {}), False),
    "GELU": (lambda: ([], ["x"], {"approximate": False}), False),
    "INSTANCE_NORM": (lambda: ([_const("g", [3]), _const("b", [3])], ["x", "g", "b"], {"epsilon": 0.001}), True),
    "BATCH_MATMUL": (lambda: ([_const("w", [1, 4, 3, 2])], ["x", "w"], {}), False),
    # a transpose of an operand's last two axes absorbed into its adjoint flag (engine/region.py)
    "BATCH_MATMUL:adjoint": (lambda: ([_const("w", [1, 4, 2, 3])], ["x", "w"], {"adjoint_rhs": True}), False),
    # what fuse_rsqrt and transform_sqrt_div_to_rsqrt_mul make
    "RSQRT": (lambda: ([], ["x"], {}), False),
    # a FULLY_CONNECTED keeping its input's leading axes (keep_num_dims on a rank-4 input: [1, 4, 4, 2]
    # out, where the plain form flattens them to [16, 2]); what fuse_horizontal_fc_layers and the FC folds keep
    "FULLY_CONNECTED:keep_num_dims": (
        lambda: ([_const("w", [2, 3]), _const("b", [2])], ["x", "w", "b"], {"keep_num_dims": True}),
        False,
    ),
    # a FULLY_CONNECTED reading a rank-1 input as one row ([3] in, [1, 2] out): what remove_unnecessary_reshape
    # makes of a RESHAPE to [1, K] between a rank-1 tensor and the layer (onert 0.1.0's ShapeValidator refuses it)
    "FULLY_CONNECTED:input_rank_1": (
        lambda: ([_const("w", [2, 3]), _const("b", [2])], ["x", "w", "b"], {"keep_num_dims": False}),
        False,
    ),
    # what resolve_customop_splitv and substitute_splitv_to_split make (two outputs, on the channel axis)
    "SPLIT_V": (
        lambda: (
            [_const("s", [2], "INT32", [1, 2]), _const("a", [], "INT32", [3])],
            ["x", "s", "a"],
            {"num_splits": 2},
        ),
        False,
    ),
    "SPLIT": (lambda: ([_const("a", [], "INT32", [0])], ["a", "x"], {"num_splits": 2}), False),
    # readers of a graph output (OUTPUT_READ_PROBES) the kinds above do not cover
    "ABS": (lambda: ([], ["x"], {}), False),
    "NEG": (lambda: ([], ["x"], {}), False),
    "SQUEEZE": (lambda: ([], ["x"], {"squeeze_dims": [0]}), False),
    "STRIDED_SLICE": (
        lambda: (
            [_const(n, [4], "INT32", v) for n, v in (("b", [0, 0, 0, 0]), ("e", [1, 4, 4, 2]), ("s", [1, 1, 1, 1]))],
            ["x", "b", "e", "s"],
            {},
        ),
        False,
    ),
    "SLICE": (
        lambda: (
            [_const("b", [4], "INT32", [0, 1, 0, 0]), _const("n", [4], "INT32", [1, 2, 4, 3])],
            ["x", "b", "n"],
            {},
        ),
        False,
    ),
    # Circle's decoder operators (passes/fuse_rmsnorm.py, fuse_rope.py), and the forms of them a runtime
    # may not compute ("KIND:variant"): an RMS norm of a rank-2 input; a RoPE whose sin/cos tables hold
    # several rows that differ (here one per position, as a prefill export's: onert 0.1.0's kernel reads
    # the first row for every position, cker RoPE.h's cos_table_data[i3], whichever axis the rows are
    # on), where the plain probe's tables are one row broadcast over heads and positions; the
    # interleaved (GPT-J) RoPE, mode 1 (onert 0.1.0 implements GPT-NeoX's mode 0 only)
    "RMS_NORM": (lambda: ([_const("g", [3])], ["x", "g"], {"epsilon": 1e-6}), False),
    "RMS_NORM:rank_2": (lambda: ([_const("g", [3])], ["x", "g"], {"epsilon": 1e-6}), False),
    "ROPE": (lambda: _rope([1, 1, 1, 4], 0), False),
    "ROPE:tables_of_several_rows": (lambda: _rope([1, 1, 3, 4], 0), False),
    "ROPE:interleaved": (lambda: _rope([1, 1, 1, 4], 1), False),
    # the decoder layer's attention (ONE #16227: not in onert 0.1.0), which no pass makes: asked so that
    # the table says whether an attention fusion could be written for a runtime (passes/fuse_rope.py)
    "ATTENTION": (_attention, False),
}

# kinds whose probe input is kept positive (a square root of a negative is NaN in every runtime)
POSITIVE_INPUT = frozenset({"RSQRT", "SQRT"})

# the data input's shape where it is not X
INPUT = {
    "FULLY_CONNECTED:input_rank_1": [3],
    "RMS_NORM:rank_2": [16, 3],
    "ROPE": [1, 2, 3, 4],
    "ROPE:tables_of_several_rows": [1, 2, 3, 4],
    "ROPE:interleaved": [1, 2, 3, 4],
    "ATTENTION": [1, 4, 16],
}


OUTPUT = {
    "CONV_2D": [1, 4, 4, 2],
    "FULLY_CONNECTED:keep_num_dims": [1, 4, 4, 2],
    "FULLY_CONNECTED:input_rank_1": [1, 2],
    "SQUEEZE": [4, 4, 3],
    "STRIDED_SLICE": [1, 4, 4, 2],
    "SLICE": [1, 2, 4, 3],
    "FULLY_CONNECTED": [16, 2],
    "CONCATENATION": [1, 4, 4, 5],
    "RESHAPE": [1, 48],
    "TRANSPOSE": [1, 3, 4, 4],
    "MEAN": [1, 1, 1, 3],
    "PAD": [1, 6, 6, 3],
    "BATCH_MATMUL": [1, 4, 4, 2],
    "BATCH_MATMUL:adjoint": [1, 4, 4, 2],
}


# kinds with more than one output: their outputs' shapes
OUTPUTS = {"SPLIT_V": [[1, 4, 4, 1], [1, 4, 4, 2]], "SPLIT": [[1, 4, 4, 3], [1, 4, 4, 3]]}
SPLIT_INPUT = [2, 4, 4, 3]  # SPLIT halves axis 0


def probes() -> list[tuple[str, str]]:
    """(kind, variant) pairs, in table order: each kind with each fused activation it has (a form of
    a kind, "KIND:NAME" in PROBES, as the variant "form NAME"), then the constant operands, ranks
    and types, the reductions' forms, and the readers of a graph output (any, and a float16
    constant's DEQUANTIZE's)."""
    fused = [
        (kind.split(":")[0], f"form {kind.split(':')[1]}" if ":" in kind else act)
        for kind, (_, has) in PROBES.items()
        for act in (ACTIVATIONS if has else ("NONE",))
    ]
    shaped = list(SHAPED_PROBES) + list(REDUCTION_PROBES)
    return fused + list(CONSTANT_OPERAND_PROBES) + shaped + list(OUTPUT_READ_PROBES) + list(DEQUANTIZE_READ_PROBES)


def recipe(kind: str, variant: str) -> dict:
    """The one-op model of a probe: a shaped or constant-operand one, a form ("form NAME": PROBES'
    "KIND:NAME"), or the kind with `variant` as its fused activation."""
    if (kind, variant) in SHAPED_PROBES:
        return _shaped(*SHAPED_PROBES[kind, variant])
    if (kind, variant) in REDUCTION_PROBES:
        return _reduction(*REDUCTION_PROBES[kind, variant])
    if (kind, variant) in OUTPUT_READ_PROBES:
        return _reading_graph_output(kind)
    if (kind, variant) in DEQUANTIZE_READ_PROBES:
        return _reading_dequantized_output(kind)
    key = f"{kind}:{variant.removeprefix('form ')}" if variant.startswith("form ") else kind
    if (kind, variant) in CONSTANT_OPERAND_PROBES:
        constants, inputs, options = CONSTANT_OPERAND_PROBES[kind, variant]()
        x, output = X, CONSTANT_OPERAND_OUTPUT[kind, variant]
    else:
        constants, inputs, options = PROBES[key][0]()
        x = INPUT.get(key, X)
        output = OUTPUT.get(key, x)
        if PROBES[key][1]:
            options = {**options, "fused_activation_function": variant}
    shapes = OUTPUTS.get(key, [output])
    names = ["y"] if len(shapes) == 1 else [f"y{i}" for i in range(len(shapes))]
    x = SPLIT_INPUT if key == "SPLIT" else x
    operands = [{"name": "x", "shape": x}, *constants, *({"name": n, "shape": s} for n, s in zip(names, shapes))]
    operation = {"type": kind, "inputs": inputs, "outputs": names}
    if options:
        operation["options"] = options
    return {"input": ["x"], "output": names, "operand": operands, "operation": [operation]}


def _runs(run, model) -> bool:
    """The runtime loads and runs `model` and computes what bnfold's reference interpreter does
    (scaled error <= 1e-5; a runtime that ignores a fused activation does not run it)."""
    return _verdict(run, model) == "runs"


def _verdict(run, model) -> str:
    """ "runs" (as _runs), "fails" (the runtime refuses to load or run it) or "otherwise" (it runs
    and computes something else: values or shapes)."""
    from bnfold.reference import interpreter

    (t,) = model.graphs[0].inputs
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2, t.shape).astype(np.float32) if t.dtype == "FLOAT32" else rng.integers(-5, 5, t.shape)
    x = x.astype(NUMPY_DTYPES[t.dtype])
    if model.graphs[0].ops[0].kind in POSITIVE_INPUT:
        x = np.abs(x) + np.float32(0.25)
    try:
        outputs = run(model, x)
    except (BnfoldError, RuntimeError, ValueError):
        return "fails"
    expected = interpreter.run(model, [x])
    same = len(outputs) == len(expected) and all(_close(a, b) for a, b in zip(outputs, expected, strict=True))
    return "runs" if same else "otherwise"


def _close(got: np.ndarray, expected: np.ndarray) -> bool:
    if got.shape != expected.shape:
        return False
    error = np.abs(got.astype(np.float64) - expected).max(initial=0.0)
    return bool(error <= 1e-5 * max(1.0, float(np.abs(expected).max(initial=0.0))))


def _litert(model, x):
    """LiteRT's builtin kernels, and its default run (the XNNPACK delegate) when they agree: a user's
    LiteRT delegates by default, bnfold's own check does not, and both must compute the model."""
    from bnfold.values import litert

    plain, default = litert.run(model, [x]), litert.run(model, [x], resolver="default")
    if len(plain) != len(default) or not all(_close(a, b) for a, b in zip(default, plain, strict=True)):
        return [np.full(a.shape, np.nan) for a in plain]  # the two disagree: LiteRT computes otherwise
    return plain


def _onert(model, x):
    from bnfold.values import onert

    return onert.Session(model)([x])


# kernels that may compute an element by where it lies in the tensor (a vectorized body and a scalar
# tail rounding apart), or an integer reduction by which axes it reduces (another kernel path): moving a
# permutation across one can change a value (engine/permute.py asks); (kind, "from IN to OUT") for the
# (de)quantizations the layout passes could cross, (kind, "of T over moved axes") for the reductions
POSITION_PROBES = [
    ("QUANTIZE", "from FLOAT32 to INT8"),
    ("QUANTIZE", "from FLOAT32 to UINT8"),
    ("QUANTIZE", "from FLOAT32 to INT16"),
    ("QUANTIZE", "from INT8 to INT8"),
    ("QUANTIZE", "from UINT8 to UINT8"),
    ("QUANTIZE", "from INT16 to INT16"),
    ("QUANTIZE", "from UINT8 to INT8"),
    ("QUANTIZE", "from INT8 to UINT8"),
    ("DEQUANTIZE", "from INT8 to FLOAT32"),
    ("DEQUANTIZE", "from UINT8 to FLOAT32"),
    ("DEQUANTIZE", "from INT16 to FLOAT32"),
    ("QUANTIZE", "from FLOAT32 to INT8 per channel"),
    ("QUANTIZE", "from FLOAT32 to UINT8 per channel"),
    ("DEQUANTIZE", "from INT8 to FLOAT32 per channel"),
    ("DEQUANTIZE", "from INT8 to FLOAT32 zero point 0"),
    ("DEQUANTIZE", "from UINT8 to FLOAT32 zero point 0"),
    # integer arithmetic that requantizes (x op x, x's parameters on both sides)
    ("ADD", "of INT8"),
    ("ADD", "of UINT8"),
    ("ADD", "of INT16"),
    ("SUB", "of INT8"),
    ("MUL", "of INT8"),
    ("MUL", "of UINT8"),
    ("MUL", "of INT16"),
    # an integer reduction over axes a permutation moved: the same sums, another kernel path?
    ("MEAN", "of INT8 over moved axes"),
    ("MEAN", "of UINT8 over moved axes"),
    ("MEAN", "of INT16 over moved axes"),
    ("SUM", "of INT8 over moved axes"),
    ("SUM", "of UINT8 over moved axes"),
]
POSITION_LENGTH = 30  # no multiple of a vector width: a scalar tail follows the vectorized blocks
QUANT = {"INT8": (0.01, 3), "UINT8": (0.01, 131), "INT16": (0.01, 0)}  # inputs' (scale, zero point)
QUANT_OUT = {"INT8": -5, "UINT8": 120, "INT16": 0}  # outputs' zero points
# outputs' scales: 0.02 puts inputs at half steps (ties), the others ask a multiplier that is no power of two
OUT_SCALES = (0.02, 0.05, 0.07)


def position_recipe(kind: str, variant: str, out_scale: float = OUT_SCALES[0]) -> dict:
    """x [30] (IN) -> kind -> y [30] (OUT), integer tensors quantized so that an input value often
    lies at half an output step (where roundings part); "per channel": [2, 30] along axis 0; "zero
    point 0": the input's zero point 0 (a symmetric weight's)."""
    if variant.startswith("of "):  # x op x: integer arithmetic of one type
        source = target = variant.removeprefix("of ")
    else:
        source, target = variant.removeprefix("from ").removesuffix(" per channel").split(" to ")
        target = target.removesuffix(" zero point 0")
    channels = 2 if variant.endswith(" per channel") else 1  # [2, 30], quantized along axis 0
    shape = [channels, POSITION_LENGTH] if channels > 1 else [POSITION_LENGTH]
    x = {"name": "x", "shape": shape, "dtype": source}
    y = {"name": "y", "shape": shape, "dtype": target}
    if source != "FLOAT32":
        scale, zero = QUANT[source]
        zero = 0 if variant.endswith(" zero point 0") else zero
        x["quant"] = {"scale": [scale * (1 + c) for c in range(channels)], "zero_point": [zero] * channels}
    if target != "FLOAT32":
        scale, zero = out_scale, QUANT_OUT[target]
        y["quant"] = {"scale": [scale * (1 + c) for c in range(channels)], "zero_point": [zero] * channels}
    inputs = ["x", "x"] if variant.startswith("of ") else ["x"]
    operation = {"type": kind, "inputs": inputs, "outputs": ["y"]}
    return {"input": ["x"], "output": ["y"], "operand": [x, y], "operation": [operation]}


REDUCED = [1, 4, 3, 2]  # x, reduced over axes 1, 2 (keep_dims); the moved model reads x (0, 3, 1, 2) over 2, 3


def moved_axes_recipes(kind: str, variant: str) -> tuple[dict, dict]:
    """x [1,4,3,2] -> kind over axes (1, 2), and x transposed (0,3,1,2) -> kind over axes (2, 3):
    each output element reduces the same integers."""
    dtype = variant.removeprefix("of ").removesuffix(" over moved axes")
    q_in = {"scale": [0.05], "zero_point": [0 if dtype == "INT16" else 3]}
    q_out = {"scale": [0.07], "zero_point": [0 if dtype == "INT16" else -2 if dtype == "INT8" else 120]}

    def one(shape: list[int], axes: list[int]) -> dict:
        out = [1 if i in axes else d for i, d in enumerate(shape)]
        operands = [
            {"name": "x", "shape": shape, "dtype": dtype, "quant": q_in},
            _const("axes", [2], "INT32", axes),
            {"name": "y", "shape": out, "dtype": dtype, "quant": q_out},
        ]
        operation = {"type": kind, "inputs": ["x", "axes"], "outputs": ["y"], "options": {"keep_dims": True}}
        return {"input": ["x"], "output": ["y"], "operand": operands, "operation": [operation]}

    moved = [REDUCED[i] for i in (0, 3, 1, 2)]
    return one(REDUCED, [1, 2]), one(moved, [2, 3])


def _by_moved_axes(run, models, trials: int = 40) -> bool:
    """Whether reducing the transposed input over the moved axes gives another integer somewhere."""
    plain, moved = models
    dtype = NUMPY_DTYPES[plain.graphs[0].inputs[0].dtype]
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    for _ in range(trials):
        x = rng.integers(max(info.min, -3000), min(info.max, 3000), REDUCED, endpoint=True).astype(dtype)
        try:
            before, after = run(plain, x), run(moved, np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2))))
        except (BnfoldError, RuntimeError, ValueError):
            return False  # not run at all: RUNS' business
        if any(a.reshape(-1).tobytes() != b.reshape(-1).tobytes() for a, b in zip(before, after)):
            return True
    return False


def _by_position(run, model, trials: int = 40) -> bool:
    """Whether the runtime gives some element another value when the input is permuted (the output
    permuted alike otherwise); inputs: multiples of the input step near the ties."""
    (t,) = model.graphs[0].inputs
    rng = np.random.default_rng(0)
    for _ in range(trials):
        if t.dtype == "FLOAT32":
            x = (np.float32(0.01) * rng.integers(-250, 250, t.shape).astype(np.float32)).astype(np.float32)
        else:
            info = np.iinfo(NUMPY_DTYPES[t.dtype])
            x = rng.integers(max(info.min, -3000), min(info.max, 3000), t.shape, endpoint=True)
            x = x.astype(NUMPY_DTYPES[t.dtype])
        perm = rng.permutation(POSITION_LENGTH)  # along the last axis: within each channel
        try:
            before, after = run(model, x), run(model, x[..., perm])
        except (BnfoldError, RuntimeError, ValueError):
            return False  # not run at all: RUNS' business
        if any(a[..., perm].tobytes() != b.tobytes() for a, b in zip(before, after)):
            return True
    return False


def _litert_kernels(model, x):
    """LiteRT's builtin kernels, then its default ones (XNNPACK): either computing by position counts."""
    from bnfold.values import litert

    return [*litert.run(model, [x]), *litert.run(model, [x], resolver="default")]


def derive_by_position(runtimes: tuple[str, ...] = RUNTIMES) -> dict[str, list[tuple[str, str]]]:
    """runtime -> the POSITION_PROBES it computes by position."""
    runners = {"litert": _litert_kernels, "onert": _onert}
    table: dict[str, list[tuple[str, str]]] = {r: [] for r in runtimes}
    for kind, variant in POSITION_PROBES:
        where = f"probe {kind} {variant}"
        if variant.endswith(" over moved axes"):
            models = [build(r, CIRCLE, where=where) for r in moved_axes_recipes(kind, variant)]
            moves = [_by_moved_axes(runners[runtime], models) for runtime in runtimes]
        else:
            models = [build(position_recipe(kind, variant, scale), CIRCLE, where=where) for scale in OUT_SCALES]
            moves = [any(_by_position(runners[runtime], model) for model in models) for runtime in runtimes]
        for runtime, changes in zip(runtimes, moves):
            if changes:
                table[runtime].append((kind, variant))
    return table


def derive(
    runtimes: tuple[str, ...] = RUNTIMES, otherwise: dict[str, list[tuple[str, str]]] | None = None
) -> dict[str, list[tuple[str, str]]]:
    """runtime -> the probes it runs; into `otherwise` (runtime -> probes), those it runs computing
    something else."""
    runners = {"litert": _litert, "onert": _onert}
    table: dict[str, list[tuple[str, str]]] = {r: [] for r in runtimes}
    for kind, variant in probes():
        model = build(recipe(kind, variant), CIRCLE, where=f"probe {kind} {variant}")
        for runtime in runtimes:
            verdict = _verdict(runners[runtime], model)
            if verdict == "runs":
                table[runtime].append((kind, variant))
            elif verdict == "otherwise" and otherwise is not None:
                otherwise.setdefault(runtime, []).append((kind, variant))
    return table


def source(table: dict[str, list[tuple[str, str]]], by_position: dict[str, list[tuple[str, str]]]) -> str:
    lines = [
        '"""What each runtime runs: derived by schemas/derive_runtimes.py from the runtimes themselves (do not',
        "edit; tests/test_runtimes.py re-derives it). PROBED: every (operator kind, variant) asked, a variant",
        "being a fused activation, 'constant input N', 'rank N', 'type T' or 'form NAME' (a form of the",
        "operator, or of the graph around it, probed apart); RUNS[runtime]: those that loaded and ran as",
        "small models computing what the reference interpreter does (ir/miscomputed.py: those that ran",
        "computing something else). engine/targets.py reads it. BY_POSITION[runtime]: the (de)quantizations",
        "(POSITION_PROBED) it computes by where an element lies (a vectorized body and a scalar tail round",
        "apart), which no permutation may cross (engine/permute.py).",
        '"""',
        "",
        f"VERSIONS = {{'litert': {version('ai-edge-litert')!r}, 'onert': {version('onert')!r}}}",
        "",
        "PROBED = frozenset(",
        "    {",
        *[f"        ({k!r}, {a!r})," for k, a in probes()],
        "    }",
        ")",
        "",
        "RUNS = {",
    ]
    for runtime in RUNTIMES:
        lines += [f"    {runtime!r}: frozenset(", "        {"]
        lines += [f"            ({k!r}, {a!r})," for k, a in table[runtime]]
        lines += ["        }", "    ),"]
    lines += ["}", "", "POSITION_PROBED = frozenset(", "    {"]
    lines += [f"        ({k!r}, {a!r})," for k, a in POSITION_PROBES]
    lines += ["    }", ")", "", "BY_POSITION = {"]
    for runtime in RUNTIMES:
        if not by_position[runtime]:
            lines.append(f"    {runtime!r}: frozenset(),")
            continue
        lines += [f"    {runtime!r}: frozenset(", "        {"]
        lines += [f"            ({k!r}, {a!r})," for k, a in by_position[runtime]]
        lines += ["        }", "    ),"]
    lines += ["}", ""]
    return "\n".join(lines).replace("'", '"')


def otherwise_source(otherwise: dict[str, list[tuple[str, str]]]) -> str:
    """ir/miscomputed.py: the probes each runtime loads and runs computing something else. Apart from
    the table, and small: the manager asks it of every graph before any pass (engine/targets.py:
    Target.left_as_is), so a run that changes nothing imports only this."""
    lines = [
        '"""The probes of ir/runtimes.py that a runtime loads and runs computing something else than the model',
        "says (values or shapes): derived by schemas/derive_runtimes.py with the table (do not edit). A graph",
        "holding one runs right there only by luck, so a target for that runtime leaves it as it is",
        '(engine/targets.py: Target.left_as_is)."""',
        "",
        "OTHERWISE = {",
    ]
    for runtime in RUNTIMES:
        lines += [f"    {runtime!r}: frozenset(", "        {"]
        lines += [f"            ({k!r}, {a!r})," for k, a in otherwise.get(runtime, [])]
        lines += ["        }", "    ),"]
    lines += ["}", ""]
    return "\n".join(lines).replace("'", '"')


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the table instead of writing it")
    args = parser.parse_args(argv)
    otherwise: dict[str, list[tuple[str, str]]] = {}
    texts = {TABLE: source(derive(otherwise=otherwise), derive_by_position()), MISCOMPUTED: otherwise_source(otherwise)}
    if args.check:
        differ = [path for path, text in texts.items() if path.read_text() != text]
        for path in differ:
            print(f"{path} differs from what the installed runtimes run", file=sys.stderr)
        return 1 if differ else 0
    for path, text in texts.items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
