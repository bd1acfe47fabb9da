"""replace_quantized_mul_add_with_depthwise_conv (lossy, opt-in): an int8 MUL -> ADD by per-channel
constants becomes one int8 1x1 DEPTHWISE_CONV_2D; in LiteRT its integers stay within a step of the
original's and come closer to the real function; the CLI measures the error in quantization steps.
A fused activation on the MUL, a constant varying along another axis, or a MUL output read
elsewhere keep the chain."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bn_models import build_copy
from bnfold.cli import run
from bnfold.engine import registry
from bnfold.io.writer import serialize
from bnfold.recipe.chef import build
from bnfold.values import litert
from quant_models import QNet, optimize_quantized, quant_inputs, reasons

PASS = "replace_quantized_mul_add_with_depthwise_conv"
SHAPE = [1, 5, 6, 4]
X, M, Y = (0.05, -3), (0.08, 2), (0.06, -128)
GAMMA, BETA = [90, -40, 127, 5], [-100, 60, 20, 127]  # int8, scale 0.01 (γ) and 0.02 (β), zero point 0


def bn_net(*, mul_act="NONE", gamma_shape=(4,), shared=False) -> QNet:
    """x int8 -> MUL(γ) -> m -> ADD(β, RELU) -> y (int8)."""
    n = QNet()
    n.qinput("x", SHAPE, "INT8", *X)
    values = np.array(GAMMA * (int(np.prod(gamma_shape)) // 4)).reshape(gamma_shape)
    g = n.qconst("g", values, "INT8", 0.01, 0)
    n.op("MUL", ["x", g], n.q("m", SHAPE, "INT8", *M), SHAPE, fused_activation_function=mul_act)
    b = n.qconst("b", np.array(BETA), "INT8", 0.02, 0)
    n.outputs = [n.op("ADD", ["m", b], n.q("y", SHAPE, "INT8", *Y), SHAPE, fused_activation_function="RELU")]
    if shared:
        n.outputs.append("m")
    return n


def real_y(x: np.ndarray) -> np.ndarray:
    """The real function's y in y's integers (unclamped above, RELU below)."""
    real = 0.01 * np.array(GAMMA) * X[0] * (x.astype(np.float64) - X[1]) + 0.02 * np.array(BETA)
    return np.maximum(real, 0) / Y[0] + Y[1]


def test_mul_add_becomes_one_depthwise_conv_within_a_step():
    original, model, report = optimize_quantized(
        bn_net().recipe(), [PASS], {"MUL": 0, "ADD": 0, "DEPTHWISE_CONV_2D": 1}, exact=False
    )
    [fold] = report.folds
    assert fold["lossy"] and fold["saved_operators"] == 1
    optimized = build_copy(model)
    closer = 0
    for seed in range(4):
        xs = quant_inputs(original, seed)
        a, b = litert.run(original, xs)[0].astype(int), litert.run(optimized, xs)[0].astype(int)
        assert np.abs(a - b).max() <= 1
        want = np.clip(real_y(xs[0]), -128, 127)
        closer += int(np.abs(b - want).sum() <= np.abs(a - want).sum())
    assert closer == 4  # one rounding instead of three: no farther from the real values


@pytest.mark.parametrize(
    "case,words",
    [
        (dict(mul_act="RELU"), "the MUL has a fused RELU"),
        (dict(gamma_shape=(1, 1, 6, 4)), "varies along another axis"),
    ],
)
def test_what_it_cannot_take_stays(case, words):
    _, _, report = optimize_quantized(bn_net(**case).recipe(), [PASS], {"MUL": 1, "ADD": 1})
    assert any(words in r for r in reasons(report)), reasons(report)


def test_a_mul_output_read_elsewhere_is_not_the_pattern():
    optimize_quantized(bn_net(shared=True).recipe(), [PASS], {"MUL": 1, "ADD": 1})


def test_lossy_opt_in_and_the_cli_states_the_error_in_steps(tmp_path, capsys):
    spec = registry.BY_NAME[PASS]
    assert not spec.exact and not spec.default
    path, out, rep = tmp_path / "bn.tflite", tmp_path / "o.tflite", tmp_path / "r.json"
    model = build(bn_net().recipe())
    with open(path, "wb") as f:
        serialize(model, f, model.format)
    assert run(["optimize", str(path), str(out), "--report", str(rep), f"--{PASS}"]) == 0
    assert "quantization step(s) at a quantized output" in capsys.readouterr().out
    [note] = json.loads(rep.read_text())["notes"]
    assert note["measured"] and note["max_steps"] <= 1 and note["outputs"][0]["steps"] == note["max_abs"]
