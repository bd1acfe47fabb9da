"""fold_sparse_to_dense: a SPARSE_TO_DENSE of constants becomes the dense constant; an index
outside the output leaves it, with the reason in the report."""

from __future__ import annotations

import numpy as np

from bn_models import Net, optimize_and_compare

PASS = "fold_sparse_to_dense"


def sparse_to_dense_net(indices) -> Net:
    """(indices [3,2], shape [3,4], values [3], default -1.5) -> SPARSE_TO_DENSE -> d -> ADD(x) -> y."""
    n = Net()
    n.input("x", [3, 4])
    n.tensor("idx", [3, 2], "INT32", {"kind": "explicit", "values": indices})
    inputs = [
        "idx",
        n.ints("shape", [3, 4]),
        n.const("v", [3], values=[2.0, 4.0, 8.0]),
        n.const("dflt", [], values=[-1.5]),
    ]
    d = n.op("SPARSE_TO_DENSE", inputs, "d", [3, 4])
    n.outputs = [n.op("ADD", ["x", d], "y", [3, 4])]
    return n


def test_sparse_to_dense_of_constants_is_computed():
    model, _ = optimize_and_compare(
        sparse_to_dense_net([0, 1, 1, 3, 2, 0]).recipe(), [PASS], {"SPARSE_TO_DENSE": 0, "ADD": 1}
    )
    want = np.full([3, 4], -1.5, np.float32)
    want[0, 1], want[1, 3], want[2, 0] = 2, 4, 8
    np.testing.assert_array_equal(model.graphs[0].tensor("d").data, want)


def test_index_outside_the_output_stays():
    _, report = optimize_and_compare(
        sparse_to_dense_net([0, 1, 1, 4, 2, 0]).recipe(), [PASS], {"SPARSE_TO_DENSE": 1}, numerics=False
    )
    assert "outside the output" in report.not_folded[0]["reason"]
