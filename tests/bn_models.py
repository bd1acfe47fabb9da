"""Tiny layer + batch-norm-chain models for the fold tests, built as recipe dicts in code (so a
test can parametrize constant shapes and chain forms), and the check every fold test makes:
operator counts after optimizing, and LiteRT outputs of optimized vs original on normal(0, 2)
inputs within rtol = atol = 1e-5.

Every dimension of every layer is a different size, so an axis mix-up changes a shape or a value.
"""

from __future__ import annotations

import numpy as np

from bnfold import api
from bnfold.recipe.chef import build
from bnfold.values import litert

RTOL = ATOL = 1e-5


class Net:
    """A recipe dict under construction."""

    def __init__(self, seed: int = 3):
        self.seed = seed
        self.operands: list[dict] = []
        self.operations: list[dict] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.shapes: dict[str, list[int]] = {}

    def tensor(self, name: str, shape, dtype: str = "FLOAT32", filler: dict | None = None) -> str:
        operand = {"name": name, "shape": list(shape), "dtype": dtype}
        if filler is not None:
            operand["filler"] = filler
        self.operands.append(operand)
        self.shapes[name] = list(shape)
        return name

    def input(self, name: str, shape) -> str:
        self.inputs.append(self.tensor(name, shape))
        return name

    def const(self, name: str, shape, *, low: float = -2.0, high: float = 2.0, values=None, dtype="FLOAT32") -> str:
        filler = (
            {"kind": "explicit", "values": list(values)}
            if values is not None
            else {"kind": "uniform", "low": low, "high": high}
        )
        return self.tensor(name, shape, dtype, filler)

    def op(self, kind: str, inputs, output: str, shape, version: int = 1, **options) -> str:
        if output not in self.shapes:
            self.tensor(output, shape)
        self.operations.append(
            {"type": kind, "inputs": list(inputs), "outputs": [output], "options": options, "version": version}
        )
        return output

    def ints(self, name: str, values) -> str:
        return self.tensor(name, [len(values)], "INT32", {"kind": "explicit", "values": list(values)})

    def bn(self, x: str, shape, const_shape, *, act: str = "NONE") -> str:
        """x -> MUL(scale) -> ADD(shift, act), constants of `const_shape`."""
        m = self.op("MUL", [x, self.const("bn_scale", const_shape)], "bn_mul", shape)
        return self.op("ADD", [m, self.const("bn_shift", const_shape)], "bn_out", shape, fused_activation_function=act)

    def recipe(self) -> dict:
        return {
            "seed": self.seed,
            "input": self.inputs,
            "output": self.outputs or [self.operations[-1]["outputs"][0]],
            "operand": self.operands,
            "operation": self.operations,
        }

    def model(self):
        return build(self.recipe())


# ---- layers: each returns (net, layer output name); the input is "ifm" -------------------------


def conv2d(bias=True, act="NONE", channels=4, in_shape=(1, 5, 7, 3)) -> tuple[Net, str]:
    n = Net()
    n.input("ifm", in_shape)
    w = n.const("filter", [channels, 3, 2, in_shape[3]])
    inputs = ["ifm", w, n.const("bias", [channels]) if bias else ""]
    out = [1, in_shape[1], in_shape[2], channels]
    return n, n.op(
        "CONV_2D", inputs, "conv", out, padding="SAME", stride_w=1, stride_h=1, fused_activation_function=act
    )


def dwconv(multiplier=2, bias=True, act="NONE", in_shape=(1, 6, 7, 3)) -> tuple[Net, str]:
    n = Net()
    n.input("ifm", in_shape)
    c = in_shape[3] * multiplier
    inputs = ["ifm", n.const("filter", [1, 3, 2, c]), n.const("bias", [c]) if bias else ""]
    out = [1, in_shape[1] - 2, in_shape[2] - 1, c]
    return n, n.op(
        "DEPTHWISE_CONV_2D",
        inputs,
        "dwconv",
        out,
        padding="VALID",
        stride_w=1,
        stride_h=1,
        depth_multiplier=multiplier,
        fused_activation_function=act,
    )


def tconv(bias=False, act="NONE", channels=5, kernel=(3, 3), in_shape=(1, 3, 4, 2), version=1) -> tuple[Net, str]:
    n = Net()
    n.input("ifm", in_shape)
    out = [1, in_shape[1] * 2, in_shape[2] * 2, channels]
    size = n.const("output_shape", [4], values=out, dtype="INT32")
    inputs = [size, n.const("filter", [channels, *kernel, in_shape[3]]), "ifm"]
    if bias:
        inputs.append(n.const("bias", [channels]))
    options = {"padding": "SAME", "stride_w": 2, "stride_h": 2}
    if act != "NONE":
        options["fused_activation_function"] = act
    return n, n.op("TRANSPOSE_CONV", inputs, "tconv", out, version=version, **options)


def fc(bias=True, act="NONE", channels=4, in_shape=(3, 6), keep_num_dims=False) -> tuple[Net, str]:
    n = Net()
    n.input("ifm", in_shape)
    inputs = ["ifm", n.const("weights", [channels, in_shape[-1]]), n.const("bias", [channels]) if bias else ""]
    out = [*in_shape[:-1], channels] if keep_num_dims else [int(np.prod(in_shape[:-1])), channels]
    return n, n.op("FULLY_CONNECTED", inputs, "fc", out, fused_activation_function=act, keep_num_dims=keep_num_dims)


def conv3d(bias=True, act="NONE", channels=4, in_shape=(1, 3, 5, 6, 2)) -> tuple[Net, str]:
    n = Net()
    n.input("ifm", in_shape)
    inputs = ["ifm", n.const("filter", [2, 3, 2, in_shape[4], channels]), n.const("bias", [channels]) if bias else ""]
    out = [1, in_shape[1], in_shape[2], in_shape[3], channels]
    return n, n.op(
        "CONV_3D",
        inputs,
        "conv3d",
        out,
        padding="SAME",
        stride_d=1,
        stride_w=1,
        stride_h=1,
        dilation_d_factor=1,
        dilation_w_factor=1,
        dilation_h_factor=1,
        fused_activation_function=act,
    )


LAYERS = {"conv": conv2d, "dwconv": dwconv, "tconv": tconv, "fc": fc, "conv3d": conv3d}


def chain(n: Net, x: str, steps, name: str = "bn") -> str:
    """Append affine ops to x. steps: (kind, constant shape or None for per-channel [C],
    constant first?, fused activation); returns the last output."""
    shape = n.shapes[x]
    for i, (kind, cshape, const_first, act) in enumerate(steps):
        cshape = [shape[-1]] if cshape is None else cshape
        low, high = (0.5, 2.0) if kind == "DIV" else (-2.0, 2.0)
        c = n.const(f"{name}_c{i}", cshape, low=low, high=high)
        out = f"{name}_{i}" if i < len(steps) - 1 else name
        x = n.op(kind, [c, x] if const_first else [x, c], out, shape, fused_activation_function=act)
    return x


def mul_add(cshape=None, act="NONE"):
    return [("MUL", cshape, False, "NONE"), ("ADD", cshape, False, act)]


def channel_shapes(rank: int, c: int) -> list[list[int]]:
    """Every per-channel constant shape for data of `rank`: [], [1], [C], [1,C], ... [1]*(rank-1)+[C]."""
    return [[], [1]] + [[1] * k + [c] for k in range(rank)]


# ---- the check ---------------------------------------------------------------------------------


def inputs_for(model, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 2.0, t.shape).astype(np.float32) for t in model.graphs[0].inputs]


def runnable(model):
    """LiteRT 2.3 refuses a float CONV_2D / DEPTHWISE_CONV_2D without a bias input ("Tensor at
    index 2 was optional but was expected"); give such layers an explicit zero bias, which
    computes the same function, so the original model can be run as the reference."""
    for graph in model.graphs:
        for op in graph.ops:
            if op.kind in ("CONV_2D", "DEPTHWISE_CONV_2D") and op.input(2) is None:
                channels = op.input(1).shape[0 if op.kind == "CONV_2D" else 3]
                graph.set_input(op, 2, graph.add_const(f"{op.outputs[0].name}/zero_bias", np.zeros(channels)))
    return model


def optimize_and_compare(recipe: dict, passes: list[str] | None, counts: dict[str, int], *, numerics: bool = True):
    """Build twice, optimize one, check operator counts and LiteRT outputs; returns (model, report)."""
    original, model = build(recipe), build(recipe)
    report = api.apply_passes(model, passes)
    got = model.op_counts()
    assert {k: got.get(k, 0) for k in counts} == counts, f"operator counts {dict(got)}"
    if numerics:
        assert_values_agree(original, model)
    return model, report


def assert_values_agree(original, model) -> None:
    """LiteRT's outputs of `model` as written and read back match the original's."""
    xs = inputs_for(original)
    for want, have in zip(litert.run(runnable(original), xs), litert.run(runnable(build_copy(model)), xs)):
        np.testing.assert_allclose(have, want, rtol=RTOL, atol=ATOL)


def without_options(recipe: dict, kinds: set[str]):
    """The recipe's model as a file that gives its `kinds` ops no options table reads (valid:
    the runtime uses the defaults then; the chef always writes the table)."""
    model = build(recipe)
    for op in model.graphs[0].ops:
        if op.kind in kinds:
            op.options = None
    return build_copy(model)


def build_copy(model):
    """The optimized model as written and read back (what a user gets), so runtime fix-ups for
    the comparison never touch the model under test."""
    import io

    from bnfold.io.reader import read_model
    from bnfold.io.writer import serialize

    buf = io.BytesIO()
    serialize(model, buf, model.format)
    global _COUNT
    _COUNT += 1
    path = _scratch() / f"model{_COUNT}.bin"
    path.write_bytes(buf.getvalue())
    return read_model(str(path))


def _scratch():
    import tempfile
    from pathlib import Path

    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = Path(tempfile.mkdtemp(prefix="bnfold-tests-"))
    return _SCRATCH


_SCRATCH = None
_COUNT = 0


ELEMENTWISE_ZERO = {"MUL": 0, "ADD": 0, "SUB": 0, "DIV": 0}


# ---- the chain forms every pass must fold completely -------------------------------------------

FORMS = {
    "mul_add": mul_add(),
    "mul_add_relu6_reversed": [("MUL", None, True, "NONE"), ("ADD", None, True, "RELU6")],
    "add_only": [("ADD", None, False, "RELU")],
    "mul_only": [("MUL", None, True, "NONE")],
    "sub_const": [("MUL", None, False, "NONE"), ("SUB", None, False, "NONE")],
    "const_sub": [("MUL", None, False, "NONE"), ("SUB", None, True, "RELU")],
    "div_add": [("DIV", None, False, "NONE"), ("ADD", None, True, "NONE")],
    "add_then_mul": [("ADD", None, False, "NONE"), ("MUL", None, False, "NONE")],
}


def positive(layer, steps, cshape=None) -> dict:
    n, y = layer()
    if cshape is not None:
        steps = [(kind, cshape, first, act) for kind, _, first, act in steps]
    chain(n, y, steps)
    return n.recipe()


# An activation inside a chain ends it: layer -> MUL(RELU) -> ADD folds the MUL and its RELU into
# the layer (any sign of the scale: the activation is applied to the scaled output either way);
# the ADD after the activation is a chain of its own, which no layer produces: it stays.
ACTIVATION_ENDS_CHAIN = [("MUL", None, False, "RELU"), ("ADD", None, False, "NONE")]


# ---- the candidates every pass must leave alone, with the reason it must give ------------------


def _neg_activation_on_layer(layer):
    n, y = layer(act="RELU")
    chain(n, y, mul_add())
    return n, "fused RELU"


def _neg_layer_output_is_graph_output(layer):
    n, y = layer()
    n.outputs = [chain(n, y, mul_add()), y]
    return n, "graph output"


def _neg_layer_output_read_elsewhere(layer):
    n, y = layer()
    bn = chain(n, y, mul_add())
    n.outputs = [bn, n.op("RELU", [y], "other_reader", n.shapes[y])]
    return n, "other readers"


def _neg_constant_not_constant(layer):
    n, y = layer()
    n.input("gate", [n.shapes[y][-1]])  # per-channel sized, but computed at runtime
    scaled = n.op("MUL", [y, "gate"], "scaled", n.shapes[y])
    chain(n, scaled, [("ADD", None, False, "NONE")])
    return n, "not a constant"


def _neg_weights_not_constant(layer):
    n, y = layer()
    weights = next(o for o in n.operations[0]["inputs"] if o in ("filter", "weights"))
    operand = next(o for o in n.operands if o["name"] == weights)
    del operand["filler"]
    n.inputs.append(weights)
    chain(n, y, mul_add())
    return n, "weights are not constant"


def _neg_constant_varies_spatially(layer):
    n, y = layer()
    shape = n.shapes[y]
    cshape = [1] * len(shape)
    cshape[-2], cshape[-1] = shape[-2], shape[-1]  # varies along the axis before the channels
    chain(n, y, [("MUL", cshape, False, "NONE"), ("ADD", None, False, "NONE")])
    return n, "varies along axis"


def _neg_non_finite(layer):
    n, y = layer()
    c = n.shapes[y][-1]
    x = n.op("MUL", [y, n.const("huge", [c], values=[3e38] * c)], "scaled", n.shapes[y])
    x = n.op("MUL", [x, n.const("huger", [c], values=[3e38] * c)], "scaled2", n.shapes[y])
    chain(n, x, [("ADD", None, False, "NONE")])
    return n, "not be finite"


def _neg_quantized_weights(layer):
    """Hybrid layer: int8 weights with a scale, float data. Quantized data is never touched."""
    n, y = layer()
    weights = next(o for o in n.operations[0]["inputs"] if o in ("filter", "weights"))
    operand = next(o for o in n.operands if o["name"] == weights)
    axis = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 3, "TRANSPOSE_CONV": 0, "FULLY_CONNECTED": 0, "CONV_3D": 4}[
        n.operations[0]["type"]
    ]
    channels = operand["shape"][axis]  # per-channel scales: LiteRT's hybrid depthwise kernel needs them
    operand.update(
        dtype="INT8",
        filler={"kind": "uniform", "low": -127, "high": 127},
        quant={"scale": [0.02] * channels, "quantized_dimension": axis},
    )
    chain(n, y, mul_add())
    return n, "not float32"


NEGATIVE = {
    "activation_on_layer": (_neg_activation_on_layer, {"MUL": 1, "ADD": 1}),
    "layer_output_is_graph_output": (_neg_layer_output_is_graph_output, {"MUL": 1, "ADD": 1}),
    "layer_output_read_elsewhere": (_neg_layer_output_read_elsewhere, {"MUL": 1, "ADD": 1}),
    "constant_not_constant": (_neg_constant_not_constant, {"MUL": 1, "ADD": 1}),
    "weights_not_constant": (_neg_weights_not_constant, {"MUL": 1, "ADD": 1}),
    "constant_varies_spatially": (_neg_constant_varies_spatially, {"MUL": 1, "ADD": 1}),
    "non_finite": (_neg_non_finite, {"MUL": 2, "ADD": 1}),
    "quantized_weights": (_neg_quantized_weights, {"MUL": 1, "ADD": 1}),
}


def check_negative(layer, pass_name: str, case: str):
    """The pass leaves the chain alone, records a skip with the expected reason, and the model
    still computes the same function."""
    build_case, counts = NEGATIVE[case]
    n, reason = build_case(layer)
    # non_finite: the original overflows to inf/nan itself; LiteRT has no hybrid (int8 weights)
    # CONV_3D kernel, and that model is unchanged anyway (checked by the counts)
    numerics = case != "non_finite" and not (case == "quantized_weights" and layer is conv3d)
    model, report = optimize_and_compare(n.recipe(), [pass_name], counts, numerics=numerics)
    assert not [f for f in report.folds if f["pass"] == pass_name], report.folds
    reasons = [s["reasons"][pass_name] for s in report.skips if pass_name in s["reasons"]]
    if case == "constant_not_constant":  # a MUL by a runtime tensor is no batch-norm candidate: no entry
        assert "scaled" not in [s["at"]["output"] for s in report.skips]
        reasons = [s.record["reason"] for s in report.said if s.pass_name == pass_name]
    assert any(reason in r for r in reasons), reasons
    return model, report


def apply_for_no_target(model, pass_name: str):
    """`pass_name` alone over graph 0, once, made for no runtime (graph.target None: engine/targets.py
    lets a pass make any operator), reported and gated as the manager does: the algebra of a fusion
    into an operator no runtime of the table runs (INSTANCE_NORM: LiteRT has none, onert 0.1.0
    fails to prepare it), which every target refuses."""
    from bnfold.engine import registry
    from bnfold.engine.report import Report
    from bnfold.ir.invariants import check_output

    graph = model.graphs[0]
    report = Report([pass_name])
    report.add(pass_name, 0, registry.BY_NAME[pass_name].run(graph))
    graph.cleanup()
    report.settle_into(model.graphs)
    check_output(model)
    return report


def said(report, pass_name: str) -> list[str]:
    """Every reason `pass_name` gave for a candidate it left: the report's not_folded, target
    refusals, batch-norm skips and TRANSPOSEs left (a Report or its JSON form)."""
    d = report if isinstance(report, dict) else report.to_dict()
    return [
        *(n["reason"] for n in d.get("not_folded", []) if n["pass"] == pass_name),
        *(r["reason"] for r in d["target"]["refused"] if r["pass"] == pass_name),
        *(s["reasons"][pass_name] for s in d["skips"] if pass_name in s.get("reasons", {})),
        *(t["reason"] for t in d.get("transposes", []) if t["pass"] == pass_name),
    ]


def assert_said(report, pass_name: str, reason: str | None) -> None:
    """`pass_name` gave `reason` (a part of it) for a candidate it left; None: it said nothing (a
    structural mismatch is no candidate)."""
    reasons = said(report, pass_name)
    if reason is None:
        assert reasons == [], reasons
    else:
        assert any(reason in r for r in reasons), reasons
