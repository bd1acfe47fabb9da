"""The operator table agrees with the schemas of both formats, and with itself."""

from __future__ import annotations

import pytest

from bnfold.io.formats import CIRCLE, TFLITE
from bnfold.ir.ops import (
    ACTIVATION_KINDS,
    FUSED_ACTIVATIONS,
    HOMOGENEOUS_ACTIVATIONS,
    LAYERS,
    PADDINGS,
    RANGE_ACTIVATIONS,
    TABLE,
    info,
)

CIRCLE_ONLY = {"INSTANCE_NORM", "RMS_NORM", "ROPE", "ATTENTION"}


@pytest.mark.parametrize("fmt", [TFLITE, CIRCLE], ids=lambda f: f.name)
def test_every_kind_and_options_table_exists_in_the_format(fmt):
    kinds = set(fmt.op_names.values())
    for entry in TABLE:
        if fmt is TFLITE and entry.kind in CIRCLE_ONLY:
            assert entry.kind not in kinds
            continue
        assert entry.kind in kinds, entry.kind
        if entry.options is not None:
            assert entry.options in fmt.options_codes and fmt.layout.has_table(entry.options), entry.options


@pytest.mark.parametrize("fmt", [TFLITE, CIRCLE], ids=lambda f: f.name)
def test_enums_are_in_the_schema_order(fmt):
    activation = fmt.cls("ActivationFunctionType")
    assert [getattr(activation, name) for name in FUSED_ACTIVATIONS] == list(range(len(FUSED_ACTIVATIONS)))
    padding = fmt.cls("Padding")
    assert [getattr(padding, name) for name in PADDINGS] == list(range(len(PADDINGS)))


def test_layer_axes_fit_the_weights_rank():
    for kind, layer in LAYERS.items():
        assert 0 <= layer.out_axis < layer.rank and 0 <= layer.in_axis < layer.rank, kind
        assert layer.input_channels in ("exact", "repeat", "tile"), kind
        assert info(kind).arity[0] > layer.weights, kind


def test_activation_sets_are_consistent():
    assert set(RANGE_ACTIVATIONS) <= set(FUSED_ACTIVATIONS) & ACTIVATION_KINDS
    assert HOMOGENEOUS_ACTIVATIONS <= set(FUSED_ACTIVATIONS)
    assert info("NO_SUCH_KIND").layer is None and info("NO_SUCH_KIND").options is None
