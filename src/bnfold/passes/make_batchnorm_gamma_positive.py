"""make_batchnorm_gamma_positive: LOSSY. Replaces negative scales of a pre-activation batch norm by
1e-10 (ONE's MakeBatchNormGammaPositive), so that fuse_preactivation_batchnorm can fold it.

    before:  x -> MUL(γ) -> ADD(β, RELU) -> y        γ_c < 0 for some channels c
    after:   x -> MUL(γ') -> ADD(β, RELU) -> y       γ'_c = 1e-10 where γ_c < 0, else γ_c

A changed channel goes from relu(γ_c·x + β_c) to relu(1e-10·x + β_c) ≈ relu(β_c): it collapses to a
constant. The error is of the order |γ_c·x| wherever the channel was active, unbounded in general.
Never in the default set; whenever it changes a model, bnfold measures the output error on random
inputs (values/lossy.py) and prints and reports it.

Only the pattern ONE touches: a MUL with a float32 per-channel constant whose only reader is an ADD
with a per-channel constant and a fused RELU. Unlike ONE, a γ constant shared with another op is
copied, not edited (Graph.set_const_input).
"""

from __future__ import annotations

import numpy as np

from ..engine.affine import AffineChain, channel_vector, match_chain
from ..engine.match import read_elsewhere
from ..engine.report import PassResult, Refusal
from ..ir.graph import Graph, Op, Tensor

REPLACEMENT = np.float32(1e-10)


def run(graph: Graph) -> PassResult:
    result = PassResult()
    for mul in [op for op in graph.ops if op.kind == "MUL"]:
        gamma_index = _gamma_index(mul)
        if gamma_index is None:
            continue
        x, gamma = mul.inputs[1 - gamma_index], mul.inputs[gamma_index]
        if x is None or gamma is None or len(x.shape) == 0:
            continue
        chain = match_chain(graph, x, len(x.shape) - 1, start=mul)
        if (
            not isinstance(chain, AffineChain)
            or [op.kind for op in chain.ops] != ["MUL", "ADD"]
            or chain.activation != "RELU"
        ):
            why = chain if isinstance(chain, Refusal) else read_elsewhere(graph, mul.outputs[0], "ADD")
            if why and _before_add_relu(graph, mul) and _has_negative(gamma, x.shape):
                result.skip(mul, f"negative scales kept: {why}")
            continue
        values = channel_vector(gamma, x.shape, len(x.shape) - 1)
        if isinstance(values, Refusal) or not np.any(values < 0):
            continue
        negative = np.flatnonzero(values < 0)
        new = np.where(values < 0, REPLACEMENT, values).astype(np.float32)
        result.fold(
            mul,
            [],
            lossy=True,
            output=chain.output.name,
            negative_channels=negative.tolist(),
            replaced_values=values[negative],
            replacement=float(REPLACEMENT),
        )
        shape = (1,) * (len(x.shape) - 1) + (len(new),)  # kept as the old shape when the sizes agree
        graph.set_const_input(mul, gamma_index, new.reshape(shape), f"{gamma.name}/positive")
    return result


def _before_add_relu(graph: Graph, mul: Op) -> bool:
    """An ADD with a fused RELU reads the MUL: the batch norm this pass is for, whatever else reads it."""
    return any(op.kind == "ADD" and op.fused_activation == "RELU" for op in graph.consumers(mul.outputs[0]))


def _has_negative(gamma: Tensor, shape: tuple[int, ...]) -> bool:
    values = channel_vector(gamma, shape, len(shape) - 1)
    return not isinstance(values, Refusal) and bool(np.any(values < 0))


def _gamma_index(mul) -> int | None:
    a, b = mul.input(0), mul.input(1)
    if a is None or b is None:
        return None
    if b.is_const and not a.is_const:
        return 1
    if a.is_const and not b.is_const:
        return 0
    return None
