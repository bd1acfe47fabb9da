"""Small quantized models for the tests of the passes on quantized graphs, and their check: the
optimized model's outputs in LiteRT are bit-identical to the original's (integers and floats
alike), under the builtin kernels and under XNNPACK, on inputs that cover each input's whole range.

Integer inputs are drawn over their type's whole range; float inputs uniformly over +-1.5 times
the range the first QUANTIZE reading them can hold (or +-4 when none does), so the clamps at
both ends and every rounding in between are exercised.
"""

from __future__ import annotations

import numpy as np

from bn_models import Net, build_copy, runnable
from bnfold import api
from bnfold.ir.const import NUMPY_DTYPES
from bnfold.recipe.chef import build
from bnfold.values import litert

SAMPLES = 4


class QNet(Net):
    """A Net whose tensors may be quantized per tensor or per channel."""

    def q(self, name: str, shape, dtype: str, scale, zero_point=None, axis: int = 0) -> str:
        scales = list(scale) if isinstance(scale, (list, tuple)) else [scale]
        zeros = list(zero_point) if isinstance(zero_point, (list, tuple)) else [zero_point or 0] * len(scales)
        self.tensor(name, shape, dtype)
        self.operands[-1]["quant"] = {"scale": scales, "zero_point": zeros, "quantized_dimension": axis}
        return name

    def qinput(self, name: str, shape, dtype: str, scale, zero_point=0) -> str:
        self.inputs.append(self.q(name, shape, dtype, scale, zero_point))
        return name

    def qconst(self, name: str, values: np.ndarray, dtype: str, scale, zero_point=None, axis: int = 0) -> str:
        self.q(name, values.shape, dtype, scale, zero_point, axis)
        self.operands[-1]["filler"] = {"kind": "explicit", "values": [int(v) for v in values.reshape(-1)]}
        return name


def quant_inputs(model, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    graph = model.graphs[0]
    xs = []
    for t in graph.inputs:
        if t.dtype == "FLOAT32":
            reader = next((op for op in graph.consumers(t) if op.kind == "QUANTIZE"), None)
            bound = 4.0
            if reader is not None and reader.outputs[0].is_quantized:
                q = reader.outputs[0].quantization
                info = np.iinfo(NUMPY_DTYPES[reader.outputs[0].dtype])
                scale, zero = float(q.scale[0]), int(q.zeroPoint[0])
                bound = 1.5 * scale * max(abs(info.min - zero), abs(info.max - zero))
            xs.append(rng.uniform(-bound, bound, t.shape).astype(np.float32))
        else:
            info = np.iinfo(NUMPY_DTYPES[t.dtype])
            xs.append(rng.integers(info.min, info.max, t.shape, endpoint=True).astype(NUMPY_DTYPES[t.dtype]))
    return xs


def assert_bit_identical(original, model, samples: int = SAMPLES, *, float_kernels_may_change: bool = False) -> None:
    """LiteRT's outputs of `model` (written and read back) equal the original's, bit for bit, under
    the builtin kernels and under the default ones (XNNPACK), each against the original run alike
    (the two kernel sets may round differently from each other, never a model from its rewrite).
    `float_kernels_may_change`: a float layer that now reads constant weights may run in XNNPACK
    where it ran in the builtin kernel before; under the default kernels its float outputs then
    agree up to float32 rounding (rtol 1e-5 of the output's largest magnitude), not bit for bit."""
    optimized = runnable(build_copy(model))
    for resolver in ("plain", "default"):
        for seed in range(samples):
            xs = quant_inputs(original, seed)
            want = litert.run(runnable(original), xs, resolver=resolver)
            have = litert.run(optimized, xs, resolver=resolver)
            for w, h in zip(want, have):
                assert w.dtype == h.dtype
                if float_kernels_may_change and resolver == "default" and w.dtype.kind == "f":
                    assert np.abs(h.astype(np.float64) - w).max() <= 1e-5 * np.abs(w).max()
                else:
                    np.testing.assert_array_equal(h.view(np.uint8), w.view(np.uint8), err_msg=resolver)


def optimize_quantized(
    recipe: dict, passes: list[str], counts: dict[str, int], *, exact: bool = True, float_kernels_may_change=False
):
    """Build twice, optimize one, check operator counts and (when `exact`) bit-identical LiteRT
    outputs; returns (original, optimized, report)."""
    original, model = build(recipe), build(recipe)
    report = api.apply_passes(model, passes)
    got = model.op_counts()
    assert {k: got.get(k, 0) for k in counts} == counts, f"operator counts {dict(got)}"
    if exact:
        assert_bit_identical(original, model, float_kernels_may_change=float_kernels_may_change)
    return original, model, report


def reasons(report) -> list[str]:
    """Every refusal the passes recorded about ops that are not batch-norm candidates."""
    return [entry["reason"] for entry in report.not_folded]
