"""convert_nchw_to_nhwc and its parameters: an NCHW graph computed in NHWC inside, the interface
made NHWC only where a parameter names it. Values are checked in LiteRT: the optimized model on
the NHWC-transposed input gives the original's output transposed the same way."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, build_copy
from bnfold import api
from bnfold.passes import convert_nchw_to_nhwc
from bnfold.recipe.chef import build, load_recipe
from bnfold.values import litert
from conftest import RECIPES

PASS = "convert_nchw_to_nhwc"
BOTH = [PASS, "nchw_to_nhwc_input_shape", "nchw_to_nhwc_output_shape"]
REGRESS = load_recipe(RECIPES / "Regress_ONNX_Conv_BN_000.toml")
TO_NHWC = (0, 2, 3, 1)


def nhwc(a: np.ndarray) -> np.ndarray:
    return a.transpose(TO_NHWC) if a.ndim == 4 else a


def outputs_of(model, xs):
    return litert.run(build_copy(model), xs)


def convert(recipe: dict, names: list[str]):
    """(original, optimized, report) for `recipe` optimized with `names`."""
    original, model = build(recipe), build(recipe)
    report = api.apply_passes(model, names)
    return original, model, report


def inputs_for(model, seed=5):
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 2.0, t.shape).astype(np.float32) for t in model.graphs[0].inputs]


def assert_transposed_outputs(original, model, changed_inputs, changed_outputs):
    """model(x with the changed inputs made NHWC) == original(x) with the changed outputs made NHWC."""
    xs = inputs_for(original)
    names_in = [t.name for t in original.graphs[0].inputs]
    names_out = [t.name for t in original.graphs[0].outputs]
    moved = [nhwc(x) if name in changed_inputs else x for name, x in zip(names_in, xs)]
    for name, want, have in zip(names_out, litert.run(original, xs), outputs_of(model, moved)):
        want = nhwc(want) if name in changed_outputs else want
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)


def test_ones_regression_holds_with_ones_option_set():
    """ONE's rule for REGRESS_ONNX_Conv_BN_001, on a model of its shape with every size different."""
    original, model, report = convert(REGRESS, REGRESS["expect"]["passes"])
    assert model.op_counts() == {"CONV_2D": 2, "PAD": 1}
    graph = model.graphs[0]
    assert [(t.name, list(t.shape)) for t in graph.inputs] == [("x", [2, 17, 13, 5])]
    assert [(t.name, list(t.shape)) for t in graph.outputs] == [("y", [2, 16, 14, 6])]
    assert report.interface == {
        "parameters": BOTH[1:],
        "kept": [],
        "inputs": [{"name": "x", "shape": [2, 17, 13, 5], "was": [2, 5, 17, 13]}],
        "outputs": [{"name": "y", "shape": [2, 16, 14, 6], "was": [2, 6, 16, 14]}],
    }
    assert_transposed_outputs(original, model, {"x"}, {"y"})


def test_without_parameters_the_interface_stays():
    original, model, report = convert(REGRESS, [PASS, "fuse_batchnorm_with_conv"])
    # the unit-axis RESHAPEs around the PAD cancel; the model's own boundary transposes stay
    assert model.op_counts() == {"CONV_2D": 2, "PAD": 1, "TRANSPOSE": 2}
    assert [list(t.shape) for t in model.graphs[0].inputs] == [[2, 5, 17, 13]]
    assert [list(t.shape) for t in model.graphs[0].outputs] == [[2, 6, 16, 14]]
    assert report.interface is None
    assert_transposed_outputs(original, model, set(), set())


@pytest.mark.parametrize(
    "parameter, changed_in, changed_out",
    [
        ("nchw_to_nhwc_input_shape", {"x"}, set()),
        ("nchw_to_nhwc_output_shape", set(), {"y"}),
    ],
)
def test_one_parameter_changes_only_its_side(parameter, changed_in, changed_out):
    original, model, report = convert(REGRESS, [PASS, parameter])
    assert model.op_counts().get("TRANSPOSE", 0) == 1
    assert {t["name"] for t in report.interface["inputs"]} == changed_in
    assert {t["name"] for t in report.interface["outputs"]} == changed_out
    assert_transposed_outputs(original, model, changed_in, changed_out)


def test_parameters_without_the_pass_change_nothing():
    original, model, report = convert(REGRESS, BOTH[1:])
    assert model.op_counts() == original.op_counts() and report.interface is None


def two_inputs() -> Net:
    """x [2,5,7,3] (NCHW) -> RELU -> y;   s [3,4] -> ABS -> w: s is not 4-D."""
    n = Net()
    n.input("x", [2, 5, 7, 3])
    n.input("s", [3, 4])
    n.op("RELU", ["x"], "y", [2, 5, 7, 3])
    n.op("ABS", ["s"], "w", [3, 4])
    n.outputs = ["y", "w"]
    return n


def test_a_non_4d_input_and_output_are_left_as_they_are_and_reported():
    original, model, report = convert(two_inputs().recipe(), BOTH)
    kept = [(t["side"], t["name"], t["reason"]) for t in report.interface["kept"]]
    assert kept == [("input", "s", "rank 2, not 4-D"), ("output", "w", "rank 2, not 4-D")]
    assert [list(t.shape) for t in model.graphs[0].inputs] == [[2, 7, 3, 5], [3, 4]]
    assert model.op_counts() == {"RELU": 1, "ABS": 1}  # the boundary transposes met across the RELU
    assert_transposed_outputs(original, model, {"x"}, {"y"})


def output_read_in_both_layouts() -> Net:
    """x [2,5,9,7] -> TRANSPOSE(0,2,3,1) -> CONV_2D -> TRANSPOSE(0,3,1,2) -> y (a graph output, NCHW)
    -> MEAN over H, W -> m [2,4] (a graph output too): y is read inside the graph as NCHW."""
    n = Net()
    n.input("x", [2, 5, 9, 7])
    t = n.op("TRANSPOSE", ["x", n.ints("to_nhwc", [0, 2, 3, 1])], "x_nhwc", [2, 9, 7, 5])
    c = n.op(
        "CONV_2D",
        [t, n.const("w", [4, 3, 2, 5]), n.const("b", [4])],
        "conv",
        [2, 9, 7, 4],
        padding="SAME",
        stride_w=1,
        stride_h=1,
    )
    y = n.op("TRANSPOSE", [c, n.ints("to_nchw", [0, 3, 1, 2])], "y", [2, 4, 9, 7])
    n.op("MEAN", [y, n.ints("axes", [2, 3])], "m", [2, 4], keep_dims=False)
    n.outputs = ["y", "m"]
    return n


def test_a_graph_output_read_in_both_layouts_stays_correct():
    original, model, report = convert(output_read_in_both_layouts().recipe(), BOTH)
    assert [t["name"] for t in report.interface["outputs"]] == ["y"]
    assert [t["name"] for t in report.interface["kept"]] == ["m"]
    graph = model.graphs[0]
    assert [(t.name, list(t.shape)) for t in graph.outputs] == [("y", [2, 9, 7, 4]), ("m", [2, 4])]
    (mean,) = [op for op in graph.ops if op.kind == "MEAN"]
    assert list(mean.inputs[0].shape) == [2, 9, 7, 4] and list(mean.inputs[1].data) == [1, 2]  # NHWC, axes moved
    # the conv writes y itself, and the MEAN reads it: no transpose is left
    assert model.op_counts() == {"CONV_2D": 1, "MEAN": 1} and mean.inputs[0] is graph.outputs[0]
    assert_transposed_outputs(original, model, {"x"}, {"y"})


def test_unit_axis_reshape_that_cannot_cancel_stays_a_reshape():
    """A lone RESHAPE [2,15,12,1] -> [2,1,15,12] before a graph output: offered to the propagation
    as a TRANSPOSE, which has nothing to cancel with, so it is the same RESHAPE again."""
    n = Net()
    n.input("x", [2, 15, 12, 1])
    h = n.op("RELU", ["x"], "h", [2, 15, 12, 1])
    n.outputs = [n.op("RESHAPE", [h, n.ints("shape", [2, 1, 15, 12])], "y", [2, 1, 15, 12], new_shape=[2, 1, 15, 12])]
    original, model = build(n.recipe()), build(n.recipe())
    tensors, opcodes = [t.name for t in model.graphs[0].tensors], [oc.kind for oc in model.opcodes]
    result = convert_nchw_to_nhwc.run(model.graphs[0])
    assert not result.changed and result.skips == []
    assert model.op_counts() == {"RELU": 1, "RESHAPE": 1}
    # nothing the offer added is left behind: the same tensors and operator codes
    assert [t.name for t in model.graphs[0].tensors] == tensors and [oc.kind for oc in model.opcodes] == opcodes
    assert_transposed_outputs(original, model, set(), set())


def test_unit_axis_reshape_that_changes_scale_is_not_a_transpose():
    """An int8 RESHAPE [2,1,1,4] -> [2,4,1,1] whose output has another scale also changes the
    values the ADD sees: it is not offered as a transpose, so it cannot cancel with the RESHAPE back
    after the ADD (as the two would at one scale) and both stay."""
    n = Net()
    for name, shape, scale in (
        ("x", [2, 1, 1, 4], 0.1),
        ("r", [2, 4, 1, 1], 0.2),
        ("a", [2, 4, 1, 1], 0.4),
        ("y", [2, 1, 1, 4], 0.4),
    ):
        n.tensor(name, shape, "INT8")
        n.operands[-1]["quant"] = {"scale": [scale], "zero_point": [0]}
    n.inputs.append("x")
    r = n.op("RESHAPE", ["x", n.ints("shape", [2, 4, 1, 1])], "r", [2, 4, 1, 1], new_shape=[2, 4, 1, 1])
    a = n.op("ADD", [r, r], "a", [2, 4, 1, 1])
    n.outputs = [n.op("RESHAPE", [a, n.ints("back", [2, 1, 1, 4])], "y", [2, 1, 1, 4], new_shape=[2, 1, 1, 4])]
    model = build(n.recipe())
    result = convert_nchw_to_nhwc.run(model.graphs[0])
    assert not result.changed and model.op_counts() == {"RESHAPE": 2, "ADD": 1}


@pytest.mark.parametrize("mode", ["whole", "local"])
def test_library_report_names_the_interface_and_the_check_compares_like_with_like(mode, tmp_path):
    import bnfold
    from conftest import build_recipe

    path = build_recipe("Regress_ONNX_Conv_BN_000", tmp_path)
    result = bnfold.optimize(
        path,
        check=2,
        check_mode=mode,
        convert_nchw_to_nhwc=True,
        nchw_to_nhwc_input_shape=True,
        nchw_to_nhwc_output_shape=True,
        fuse_batchnorm_with_conv=True,
    )
    interface = result.report["interface"]
    assert [t["name"] for t in interface["inputs"]] == ["x"] and [t["name"] for t in interface["outputs"]] == ["y"]
    assert result.report["check"]["passed"] and result.report["check"]["mode"] == mode


def test_an_input_quantized_per_channel_keeps_its_layout():
    # its quantized_dimension counts NCHW axes; moving the data would need it moved too
    from types import SimpleNamespace

    model = two_inputs().model()
    graph = model.graphs[0]
    graph.inputs[0].quantization = SimpleNamespace(scale=[0.5] * 5, zeroPoint=[0] * 5, quantizedDimension=1)
    record = convert_nchw_to_nhwc.change_interface(graph, inputs=True, outputs=False)
    assert record["inputs"] == [] and record["kept"][0]["reason"] == "quantized per channel"
    assert list(graph.inputs[0].shape) == [2, 5, 7, 3]


@pytest.mark.parametrize(
    "name, counts",
    [
        ("torch_conv_bn_nchw", {"CONV_2D": 1}),  # read: TRANSPOSE 2, CONV_2D, MUL, ADD
        ("torch_resblock_nchw", {"CONV_2D": 2, "ADD": 1}),  # read: TRANSPOSE 4, CONV_2D 2, MUL 2, ADD 3
    ],
)
def test_tico_exports_lose_every_transpose_with_an_nhwc_interface(name, counts):
    from bnfold.engine import registry
    from bnfold.io.reader import read_model
    from conftest import DATA

    model = read_model(str(DATA / f"{name}.circle"))
    api.apply_passes(model, registry.default_passes() + BOTH)
    assert model.op_counts() == counts
    x, ref = np.load(DATA / f"{name}.input.npy"), np.load(DATA / f"{name}.ref.npy")
    (got,) = outputs_of(model, [nhwc(x)])
    np.testing.assert_allclose(got, nhwc(ref), rtol=1e-5, atol=1e-5)


def test_the_registry_states_the_permutation_the_pass_applies():
    """The manager holds the interface change to its spec's permutation (registry.Interface); the
    module makes it: the two must say the same."""
    from bnfold.engine import registry

    assert registry.BY_NAME["convert_nchw_to_nhwc"].interface.permutation == convert_nchw_to_nhwc.TO_NHWC
