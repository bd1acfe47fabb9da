"""Derive src/bnfold/ir/runtimes.py, what each runtime runs, from the real runtimes.

    python schemas/derive_runtimes.py           # rewrite the table from the installed runtimes
    python schemas/derive_runtimes.py --check   # exit 1 (with the differences) if they disagree with it

For every probe below (an operator kind with one variant: a fused activation, or a constant operand
where a runtime may refuse one) the recipe chef builds a one-op float32 Circle model; a runtime
runs it when it loads the model and one run on normal(0, 2) inputs gives what bnfold's reference
interpreter computes (so a fused activation a runtime loads and then ignores, as LiteRT 2.3 does
TANH on CONV_2D, counts as not run). LiteRT (ai-edge-litert, builtin kernels without delegates,
the model written as TFLite) and onert (pip `onert`, cpu backend, the Circle file) are asked. The
probes are the operators and fused activations bnfold's passes make or keep (a pass that would
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
from bnfold.recipe.chef import build  # noqa: E402

TABLE = ROOT / "src" / "bnfold" / "ir" / "runtimes.py"
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
SHAPED_KINDS = ("TRANSPOSE", "RESHAPE", "PAD", "MEAN", "CONCATENATION", "ADD", "MUL")
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
    else:  # ADD, MUL: by a constant broadcast along the last axis
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


def _rope(table: list[int], mode: int) -> tuple[list[dict], list[str], dict]:
    sin = {"name": "s", "shape": table, "dtype": "FLOAT32", "filler": {"kind": "uniform", "low": -1, "high": 1}}
    cos = {**sin, "name": "c"}
    return [sin, cos], ["x", "s", "c"], {"mode": mode}


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
    # Circle's decoder operators (passes/fuse_rmsnorm.py, fuse_rope.py), and the forms of them a runtime
    # may not compute ("KIND:variant"): an RMS norm of a rank-2 input; a RoPE whose tables hold one row per
    # position (the kernel may read only the last axis); the interleaved (GPT-J) RoPE, mode 1
    "RMS_NORM": (lambda: ([_const("g", [3])], ["x", "g"], {"epsilon": 1e-6}), False),
    "RMS_NORM:rank_2": (lambda: ([_const("g", [3])], ["x", "g"], {"epsilon": 1e-6}), False),
    "ROPE": (lambda: _rope([1, 1, 1, 4], 0), False),
    "ROPE:position_tables": (lambda: _rope([1, 1, 3, 4], 0), False),
    "ROPE:interleaved": (lambda: _rope([1, 1, 1, 4], 1), False),
}

# kinds whose probe input is kept positive (a square root of a negative is NaN in every runtime)
POSITIVE_INPUT = frozenset({"RSQRT", "SQRT"})

# the data input's shape where it is not X
INPUT = {
    "RMS_NORM:rank_2": [16, 3],
    "ROPE": [1, 2, 3, 4],
    "ROPE:position_tables": [1, 2, 3, 4],
    "ROPE:interleaved": [1, 2, 3, 4],
}


OUTPUT = {
    "CONV_2D": [1, 4, 4, 2],
    "FULLY_CONNECTED": [16, 2],
    "CONCATENATION": [1, 4, 4, 5],
    "RESHAPE": [1, 48],
    "TRANSPOSE": [1, 3, 4, 4],
    "MEAN": [1, 1, 1, 3],
    "PAD": [1, 6, 6, 3],
    "BATCH_MATMUL": [1, 4, 4, 2],
    "BATCH_MATMUL:adjoint": [1, 4, 4, 2],
}


def probes() -> list[tuple[str, str]]:
    """(kind, variant) pairs, in table order: each kind with each fused activation it has (a form of
    a kind, "KIND:NAME" in PROBES, as the variant "form NAME"), then the constant operands, ranks
    and types."""
    fused = [
        (kind.split(":")[0], f"form {kind.split(':')[1]}" if ":" in kind else act)
        for kind, (_, has) in PROBES.items()
        for act in (ACTIVATIONS if has else ("NONE",))
    ]
    return fused + list(CONSTANT_OPERAND_PROBES) + list(SHAPED_PROBES)


def recipe(kind: str, variant: str) -> dict:
    """The one-op model of a probe: a shaped or constant-operand one, a form ("form NAME": PROBES'
    "KIND:NAME"), or the kind with `variant` as its fused activation."""
    if (kind, variant) in SHAPED_PROBES:
        return _shaped(*SHAPED_PROBES[kind, variant])
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
    operands = [{"name": "x", "shape": x}, *constants, {"name": "y", "shape": output}]
    operation = {"type": kind, "inputs": inputs, "outputs": ["y"]}
    if options:
        operation["options"] = options
    return {"input": ["x"], "output": ["y"], "operand": operands, "operation": [operation]}


def _runs(run, model) -> bool:
    """The runtime loads and runs `model` and computes what bnfold's reference interpreter does
    (scaled error <= 1e-5; a runtime that ignores a fused activation does not run it)."""
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
        return False
    (expected,) = interpreter.run(model, [x])
    if len(outputs) != 1 or outputs[0].shape != expected.shape:
        return False
    error = np.abs(outputs[0].astype(np.float64) - expected).max(initial=0.0)
    return bool(error <= 1e-5 * max(1.0, float(np.abs(expected).max(initial=0.0))))


def _litert(model, x):
    from bnfold.values import litert

    return litert.run(model, [x])


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


def derive(runtimes: tuple[str, ...] = RUNTIMES) -> dict[str, list[tuple[str, str]]]:
    """runtime -> the probes it runs."""
    runners = {"litert": _litert, "onert": _onert}
    table: dict[str, list[tuple[str, str]]] = {r: [] for r in runtimes}
    for kind, variant in probes():
        model = build(recipe(kind, variant), CIRCLE, where=f"probe {kind} {variant}")
        for runtime in runtimes:
            if _runs(runners[runtime], model):
                table[runtime].append((kind, variant))
    return table


def source(table: dict[str, list[tuple[str, str]]], by_position: dict[str, list[tuple[str, str]]]) -> str:
    lines = [
        '"""What each runtime runs: derived by schemas/derive_runtimes.py from the runtimes themselves (do not',
        "edit; tests/test_runtimes.py re-derives it). PROBED: every (operator kind, variant) asked, a variant",
        "being a fused activation, 'constant input N', 'rank N', 'type T' or 'form NAME' (a form of the",
        "operator probed apart); RUNS[runtime]: those that loaded and ran as one-op models computing what",
        "the reference interpreter does. engine/targets.py reads it. BY_POSITION[runtime]: the (de)quantizations",
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the table instead of writing it")
    args = parser.parse_args(argv)
    text = source(derive(), derive_by_position())
    if args.check:
        if TABLE.read_text() != text:
            print(f"{TABLE} differs from what the installed runtimes run", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text)
    print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
