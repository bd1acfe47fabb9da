"""ONE's quantized recipes (every recipe of recipes/ holding a quantized tensor: ONE's *_U8_* recipes
with ONE's uint8 parameters, and the rule-bearing recipes of ONE's quantized-graph options) through
-O1 and every exact pass for quantized graphs: the TFLite form bit-identical in LiteRT, the Circle
form bit-identical in onert wherever onert 0.1.0 runs the original and computes what LiteRT does.

What onert 0.1.0 makes of the originals is pinned here as derived (scripts/one_quant_table.py
prints the whole table): the recipes it refuses, with its words, and those whose per-channel
DEQUANTIZE it computes with the first channel's scale and zero point, where the optimized model
(the DEQUANTIZE folded into float constants) gives LiteRT's outputs bit for bit instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.io.reader import read_model
from bnfold.values import onert
from one_quant_recipes import check_form, quantized_recipes, same
from quant_models import quant_inputs

NAMES = quantized_recipes()

# recipe -> onert 0.1.0's words for not running its original (derived: scripts/one_quant_table.py)
ONERT_REFUSES = {
    "CSE_Quantize_000": "Quantize: Unsupported  data type",  # uint8 -> uint8 requantize
    "CSE_Quantize_001": "Quantize: Unsupported  data type",
    "Net_Conv_Quantize_000": "Quantize: Unsupported  data type",  # int8 -> int8 requantize
    "Net_Quantize_Quantize_000": "Quantize: Unsupported  data type",
    "Neg_FC_QDQ_QDQ_000": "OperationValidator failed",  # int16 QUANTIZE
    "Net_FC_QDQ_QDQ_000": "OperationValidator failed",
    "Net_Dequantize_Quantize_000": "cker::MaxPool : Unsupported data type",  # int8 MAX_POOL_2D
    "Quant_Conv_BN_Relu_000": "ElementwiseActivationLayer(ReLU): unsupported data type",  # int8 RELU
}
# recipes with a per-channel DEQUANTIZE, which onert 0.1.0 computes with channel 0's parameters
ONERT_PER_CHANNEL_DEQUANTIZE = {
    "Net_Dequantize_Mul_000",
    "Net_Dequantize_Transpose_Conv_000",
    "Net_Quantize_Weights_000",
}


def test_the_recipes_include_ones_uint8_and_rule_recipes():
    assert {"Conv2D_U8_000", "DepthwiseConv2D_U8_000", "Add_U8_000", "Net_FC_QDQ_QDQ_000"} <= set(NAMES)
    assert len(NAMES) >= 20


@pytest.mark.parametrize("name", NAMES)
def test_tflite_form_is_bit_identical_in_litert(name, tmp_path):
    form = check_form(name, ".tflite", "litert", tmp_path)
    assert not form.refused and not form.refused_after
    assert form.identical


@pytest.mark.skipif(onert.missing() is not None, reason="onert is not installed")
@pytest.mark.parametrize("name", NAMES)
def test_circle_form_in_onert(name, tmp_path):
    form = check_form(name, ".circle", "onert", tmp_path)
    if name in ONERT_REFUSES:
        assert ONERT_REFUSES[name] in form.refused, form.refused
        if form.after:  # the passes removed what onert refused (fuse_output_requantize): LiteRT's outputs
            assert same(form.after, check_form(name, ".tflite", "litert", tmp_path).before)
        return
    assert not form.refused, form.refused
    if name in ONERT_PER_CHANNEL_DEQUANTIZE:
        reference = check_form(name, ".tflite", "litert", tmp_path)
        assert not same(form.before, reference.before)  # onert's own result for the original is off
        assert same(form.after, reference.before)  # the folded constants give LiteRT's, bit for bit
        return
    assert form.identical


@pytest.mark.skipif(onert.missing() is not None, reason="onert is not installed")
def test_onert_dequantizes_per_channel_with_the_first_channels_parameters(tmp_path):
    """Net_Dequantize_Mul_000: y = x * DEQUANTIZE(w), w int8 [3, 5] with scales 0.5/0.25/0.125 and
    zero points 1/-2/3 along axis 0; onert's y is x * (w - 1) * 0.5 in every row."""
    form = check_form("Net_Dequantize_Mul_000", ".circle", "onert", tmp_path)
    w = np.arange(-10, 5, dtype=np.float32).reshape(3, 5)
    scale = np.array([[0.5], [0.25], [0.125]], np.float32)
    zero = np.array([[1], [-2], [3]], np.float32)
    original = read_model(str(tmp_path / "Net_Dequantize_Mul_000.circle"))
    for seed, (y,) in enumerate(form.before):
        (x,) = quant_inputs(original, seed)
        np.testing.assert_array_equal(y, x * ((w - 1) * np.float32(0.5)))
        assert not np.array_equal(y, x * ((w - zero) * scale))
