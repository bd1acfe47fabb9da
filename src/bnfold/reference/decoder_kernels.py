"""Kernels of the reference interpreter for Circle's decoder operators, RMS_NORM and ROPE (the
interpreter joins their table with kernels.py's). Same contract as kernels.py: f(interp, op, index,
args) -> list of outputs. They compute the operators' functions as ONE defines them; what a runtime
computes of them is the runtime table's business (ir/runtimes.py: onert 0.1.0 reads the first row of
RoPE tables for every position).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .kernels import UnsupportedOperator, float32_only, opt


def k_rms_norm(interp, op, index, args):
    """Circle RMS_NORM: x · γ / √(mean(x²) + ε) over the last axis (γ of one or C values), in float64
    as onert's kernel computes it, rounded once."""
    x, gamma = float32_only(args[0], op, index).astype(np.float64), args[1].astype(np.float64)
    eps = float(np.float32(opt(op, "epsilon", 1e-6)))
    rms = np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return [(gamma.reshape(-1) * (x / rms)).astype(np.float32)]


def k_rope(interp, op, index, args):
    """Circle ROPE: each pair of the last axis rotated by the sin/cos tables (broadcast over the input).
    Mode 0 (GPT-NeoX) pairs element i with i + D/2 (rotate_half: [-x2, x1]); mode 1 (GPT-J) pairs 2i with
    2i + 1 (interleaved: [-x1, x0])."""
    x, sin, cos = float32_only(args[0], op, index), args[1], args[2]
    mode = int(opt(op, "mode", 0))
    if mode == 0:
        half = x.shape[-1] // 2
        rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    elif mode == 1:
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        rotated = np.stack([-pairs[..., 1], pairs[..., 0]], axis=-1).reshape(x.shape)
    else:
        raise UnsupportedOperator(f"reference interpreter cannot run ROPE mode {mode} (op {index})")
    return [(x * cos + rotated * sin).astype(np.float32)]


DECODER_KERNELS: dict[str, Callable] = {"RMS_NORM": k_rms_norm, "ROPE": k_rope}
