"""fold_densify: a DENSIFY of a sparse constant (TFLite's format: a DENSE row axis over a
SPARSE_CSR column axis, and a block-sparse form) becomes the dense constant; LiteRT's own DENSIFY
computes the same."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, assert_said, optimize_and_compare

PASS = "fold_densify"
CSR = {  # rows 0..2 of [3,5]: columns {1,4}, {}, {0,2,3}
    "traversal_order": [0, 1],
    "dim_metadata": [
        {"format": "DENSE", "dense_size": 3},
        {"format": "SPARSE_CSR", "array_segments": [0, 2, 2, 5], "array_indices": [1, 4, 0, 2, 3]},
    ],
}
BLOCKED = {  # [4,6] in 2x3 blocks: block rows 0..1, block columns {1} and {0}; each block dense
    "traversal_order": [0, 1, 2, 3],
    "block_map": [0, 1],
    "dim_metadata": [
        {"format": "DENSE", "dense_size": 2},
        {"format": "SPARSE_CSR", "array_segments": [0, 1, 2], "array_indices": [1, 0]},
        {"format": "DENSE", "dense_size": 2},
        {"format": "DENSE", "dense_size": 3},
    ],
}


def densify_net(shape, sparsity, stored, *, densify_is_output=False) -> Net:
    n = Net()
    n.input("x", shape)
    n.const("w", shape, values=stored)
    n.operands[-1]["sparsity"] = sparsity
    d = n.op("DENSIFY", ["w"], "d", shape)
    n.outputs = [n.op("ADD", ["x", d], "y", shape)]
    if densify_is_output:
        n.outputs.append(d)
    return n


@pytest.mark.parametrize(
    "shape, sparsity, stored, at",
    [
        ([3, 5], CSR, [1.5, 2, 3, 4, 5], [(0, 1), (0, 4), (2, 0), (2, 2), (2, 3)]),
        (
            [4, 6],
            BLOCKED,
            [float(v) for v in range(1, 13)],
            [(0, 3), (0, 4), (0, 5), (1, 3), (1, 4), (1, 5), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2)],
        ),
    ],
)
def test_densify_of_a_sparse_constant_is_computed(shape, sparsity, stored, at):
    model, _ = optimize_and_compare(densify_net(shape, sparsity, stored).recipe(), [PASS], {"DENSIFY": 0, "ADD": 1})
    want = np.zeros(shape, np.float32)
    for value, index in zip(stored, at):
        want[index] = value
    np.testing.assert_array_equal(model.graphs[0].tensor("d").data, want)


def test_densify_that_is_a_model_output_stays_and_says_why():
    recipe = densify_net([3, 5], CSR, [1.5, 2, 3, 4, 5], densify_is_output=True).recipe()
    _, report = optimize_and_compare(recipe, [PASS], {"DENSIFY": 1, "ADD": 1})
    assert_said(report, PASS, "'d' is seen from outside the graph (a model output stays computed)")
