"""fold_dwconv: a DEPTHWISE_CONV_2D of a constant input, filter and bias becomes the constant it
computes (its fused activation too); one of a computed input stays."""

from __future__ import annotations

import numpy as np

from bn_models import Net, optimize_and_compare
from bnfold.reference import interpreter

PASS = "fold_dwconv"


def dwconv_net(*, input_is_const=True) -> Net:
    """c [1,5,4,2] -> DEPTHWISE_CONV_2D(M=3, RELU6) -> d [1,3,3,6] -> ADD(x) -> y."""
    n = Net()
    n.input("x", [1, 3, 3, 6])
    c = n.const("c", [1, 5, 4, 2]) if input_is_const else n.input("c", [1, 5, 4, 2])
    inputs = [c, n.const("filter", [1, 3, 2, 6]), n.const("bias", [6])]
    d = n.op(
        "DEPTHWISE_CONV_2D",
        inputs,
        "d",
        [1, 3, 3, 6],
        padding="VALID",
        stride_w=1,
        stride_h=1,
        depth_multiplier=3,
        fused_activation_function="RELU6",
    )
    n.outputs = [n.op("ADD", ["x", d], "y", [1, 3, 3, 6])]
    return n


def test_dwconv_of_constants_is_computed():
    recipe = dwconv_net().recipe()
    model, _ = optimize_and_compare(recipe, [PASS], {"DEPTHWISE_CONV_2D": 0, "ADD": 1})
    zero = np.zeros([1, 3, 3, 6], np.float32)
    # the folded constant is the layer's output: y - x at x = 0, as the original computes it
    from bnfold.recipe.chef import build

    want = interpreter.run(build(recipe), [zero])[0]
    np.testing.assert_allclose(model.graphs[0].tensor("d").data, want, rtol=1e-6, atol=1e-6)
    assert want.min() >= 0 and want.max() <= 6


def test_dwconv_of_a_computed_input_stays():
    optimize_and_compare(dwconv_net(input_is_const=False).recipe(), [PASS], {"DEPTHWISE_CONV_2D": 1})
