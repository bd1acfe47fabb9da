"""Kernels of the reference interpreter that build dense tensors from sparse descriptions:
SPARSE_TO_DENSE and DENSIFY (the interpreter joins their table with kernels.py's). Same contract
as kernels.py: f(interp, op, index, args) -> list of outputs.

SPARSE_TO_DENSE (TFLite's rule): out = default_value everywhere, then out[indices[i]] = values[i]
(values a scalar: the same for every index); indices [N, R] (or [N] for a rank-1 output, or a
scalar); an index outside the output is a failed run.

DENSIFY: the input is a constant stored in TFLite's sparse format (SparsityParameters): its
dimensions in `traversal_order` (the tensor's axes, then the block axes of `block_map`), each one
DENSE (all `dense_size` positions) or SPARSE_CSR (positions `array_indices[segments[p] ..
segments[p+1]]` under parent position p); the buffer holds the stored values in that order. A
block axis b of tensor axis d = block_map[b] splits d into d // size blocks of `size`, so element
(d-block k, in-block j) is at k·size + j.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import RunFailed
from ..ir.const import NUMPY_DTYPES
from .kernels import UnsupportedOperator

DENSE = 0  # DimensionType.DENSE; SPARSE_CSR = 1


def k_sparse_to_dense(interp, op, index, args):
    indices, shape, values, default = args
    shape = [int(d) for d in np.asarray(shape).reshape(-1)]
    out = np.full(shape, np.asarray(default).reshape(()), dtype=values.dtype)
    coords = np.asarray(indices, dtype=np.int64).reshape(-1, len(shape)) if len(shape) else None
    if coords is None:
        raise UnsupportedOperator(f"reference interpreter cannot run SPARSE_TO_DENSE to a scalar (op {index})")
    if np.any(coords < 0) or np.any(coords >= np.array(shape)):
        raise RunFailed(f"SPARSE_TO_DENSE (op {index}): an index is outside the output shape {shape}")
    values = np.broadcast_to(np.asarray(values).reshape(-1) if values.size > 1 else values.reshape(()), (len(coords),))
    out[tuple(coords.T)] = values
    return [out]


def k_densify(interp, op, index, args):
    tensor = op.inputs[0]
    sparsity = getattr(tensor.record, "sparsity", None)
    dtype = NUMPY_DTYPES.get(tensor.dtype)
    if sparsity is None or dtype is None:
        raise UnsupportedOperator(f"reference interpreter cannot run DENSIFY of {tensor.name!r} (op {index})")
    stored = tensor.buffer.data.view(dtype)
    return [densify(stored, tensor.shape, sparsity)]


def densify(stored: np.ndarray, shape: tuple[int, ...], sparsity) -> np.ndarray:
    """The dense tensor a sparse constant stores (see the module doc)."""
    order = _ints(sparsity.traversalOrder)
    block_map = _ints(sparsity.blockMap)
    levels = list(sparsity.dimMetadata) if sparsity.dimMetadata is not None else []
    rank = len(shape)
    if len(levels) != len(order) or sorted(order) != list(range(rank + len(block_map))):
        raise RunFailed("sparse constant: traversal_order and dim_metadata do not describe its axes")
    block_size = {axis: _size(levels[order.index(rank + b)]) for b, axis in enumerate(block_map)}
    out = np.zeros(shape, stored.dtype)
    coords = [0] * len(order)

    def visit(level: int, position: int) -> None:
        if level == len(order):
            if position >= stored.size:
                raise RunFailed("sparse constant: more positions than stored values")
            out[tuple(_dense_index(coords, rank, block_map, block_size))] = stored[position]
            return
        meta = levels[level]
        if meta.format == DENSE:
            size = _size(meta)
            for i in range(size):
                coords[order[level]] = i
                visit(level + 1, position * size + i)
            return
        segments, indices = _ints(meta.arraySegments.values), _ints(meta.arrayIndices.values)
        for j in range(segments[position], segments[position + 1]):
            coords[order[level]] = indices[j]
            visit(level + 1, j)

    visit(0, 0)
    return out


def _ints(values) -> list[int]:
    """A vector of the record as read (a list, a numpy array or None) as Python ints."""
    return [] if values is None else [int(v) for v in values]


def _size(meta) -> int:
    return int(meta.denseSize or 0)


def _dense_index(coords: list[int], rank: int, block_map: list[int], block_size: dict[int, int]) -> list[int]:
    index = list(coords[:rank])
    for b, axis in enumerate(block_map):
        index[axis] = index[axis] * block_size[axis] + coords[rank + b]
    return index


SPARSE_KERNELS: dict[str, Callable] = {"SPARSE_TO_DENSE": k_sparse_to_dense, "DENSIFY": k_densify}
