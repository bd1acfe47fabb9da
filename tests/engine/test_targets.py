"""The runtime a model is made for: no pass makes what the target cannot run, and says so in the
report; the default target follows the output's format (.tflite litert, .circle onert)."""

from __future__ import annotations

import numpy as np
import pytest

from bn_models import Net, build_copy, chain, conv2d, mul_add
from bnfold import api
from bnfold.engine.registry import PASSES, UNDOING
from bnfold.engine.report import PassResult
from bnfold.engine.targets import Target, default_target
from bnfold.errors import InternalError, UsageError
from bnfold.io.formats import CIRCLE
from bnfold.ir.runtimes import RUNS
from bnfold.recipe.chef import build, load_recipe, recipe_format
from bnfold.values import litert
from conftest import DATA, FIXTURES, RECIPES

RUNS_LITERT = RUNS["litert"]

SHAPE = [1, 5, 7, 6]


def _hard_swish_net() -> dict:
    """x -> ADD(3, RELU6) -> MUL(x, r) -> DIV(6): TICO's decomposed nn.Hardswish."""
    n = Net()
    x = n.input("x", SHAPE)
    r = n.op("ADD", [x, n.const("three", [], values=[3.0])], "r", SHAPE, fused_activation_function="RELU6")
    p = n.op("MUL", [r, x], "p", SHAPE)
    n.outputs = [n.op("DIV", [p, n.const("six", [], values=[6.0])], "y", SHAPE)]
    return n.recipe()


@pytest.mark.parametrize("target", ["onert", "any"])
def test_fuse_hardswish_is_refused_for_a_target_without_it(target):
    model = build(_hard_swish_net())
    report = api.apply_passes(model, ["fuse_hardswish"], target)
    assert "HARD_SWISH" not in model.op_counts() and not report.folds
    [refused] = report.to_dict()["target"]["refused"]
    assert refused["pass"] == "fuse_hardswish" and refused["at"]["output"] == "r"
    expected = "onert does not run HARD_SWISH" if target == "onert" else "the input has no HARD_SWISH"
    assert expected in refused["reason"]


def test_fuse_hardswish_on_litert_and_by_the_input_format():
    for target in ("litert", None):  # the recipe is TFLite: its format's target is litert
        model = build(_hard_swish_net())
        report = api.apply_passes(model, ["fuse_hardswish"], target)
        assert model.op_counts()["HARD_SWISH"] == 1 and report.to_dict()["target"] == {"name": "litert", "refused": []}


def test_a_fused_activation_no_runtime_computes_is_not_made():
    """Conv -> MUL -> ADD(TANH): both runtimes load CONV_2D with a fused TANH and ignore it (the
    table), so the chain is not folded into a conv that would carry it, whatever the target."""
    n, y = conv2d(channels=6, in_shape=(1, 5, 7, 3))
    n.outputs = [chain(n, y, mul_add(act="TANH"))]
    for target in ("litert", "onert"):
        model = build(n.recipe())
        report = api.apply_passes(model, ["fuse_batchnorm_with_conv"], target)
        assert model.op_counts()["ADD"] == 1 and not report.folds
        assert "does not run CONV_2D with a fused TANH" in report.unsupported[0]["reason"]


def test_the_default_target_follows_the_output(tmp_path):
    circle = DATA / "torch_conv_bn_nchw.circle"
    as_tflite = api.optimize_file(circle, tmp_path / "o.tflite")
    as_circle = api.optimize_file(circle, tmp_path / "o.circle")
    assert as_tflite.report["target"]["name"] == "litert" and as_circle.report["target"]["name"] == "onert"
    assert api.optimize(circle).report["target"]["name"] == "onert"  # nothing written: the input's format
    assert api.optimize(circle, target="any").report["target"]["name"] == "any"
    assert default_target("tflite") == "litert"


def test_an_unknown_target_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="target must be one of litert, onert, any"):
        api.optimize(DATA / "torch_conv_bn_nchw.circle", target="tpu")
    with pytest.raises(UsageError):
        Target("tpu")


def test_any_allows_what_the_input_had():
    target = Target("any", frozenset({"CONV_2D", "HARD_SWISH"}))
    assert target.refusal("HARD_SWISH") is None and target.refusal("CONV_2D", "RELU") is None
    assert "the input has no RESHAPE" in target.refusal("RESHAPE")
    assert "does not run CONV_2D with a fused TANH" in target.refusal("CONV_2D", "TANH")


@pytest.mark.parametrize("name", FIXTURES)
def test_any_makes_no_operator_kind_the_input_lacks(name):
    """Every fixture (keras, TICO, the converter's pre-activation ResNet): with target any, the
    output's operator kinds are among the input's, and the report says what that cost."""
    result = api.optimize(DATA / name, target="any")
    before, after = result.report["operators"]["before"], result.report["operators"]["after"]
    assert set(after) <= set(before), sorted(set(after) - set(before))


def test_any_refuses_the_pre_activation_relu_the_input_lacks():
    """resnet_v2_mini has no standalone RELU: the pre-activation fold leaves one, so for any it
    is refused with that reason (for litert it folds)."""
    for_any = api.optimize(DATA / "resnet_v2_mini.tflite", target="any").report
    for_litert = api.optimize(DATA / "resnet_v2_mini.tflite").report
    assert "RELU" in for_litert["operators"]["after"] and "RELU" not in for_any["operators"]["before"]
    reasons = {r["reason"] for r in for_any["target"]["refused"] if r["pass"] == "fuse_preactivation_batchnorm"}
    assert reasons == {"the input has no RELU, and the target is any (only operators the input already had)"}


def test_a_constant_operand_a_runtime_refuses_is_in_the_table():
    """onert 0.1.0 refuses a BATCH_MATMUL whose left operand is a constant (ONE #16064); LiteRT runs it."""
    assert Target("onert").refusal("BATCH_MATMUL", constant_inputs=[0]) == (
        "onert does not run BATCH_MATMUL with a constant input 0"
    )
    assert Target("onert").refusal("BATCH_MATMUL", constant_inputs=[1]) is None  # not probed: not refused
    assert Target("litert").refusal("BATCH_MATMUL", constant_inputs=[0]) is None
    assert "onert does not run" in Target("any", frozenset({"BATCH_MATMUL"})).refusal("BATCH_MATMUL", "NONE", [0])


RECIPE_PATHS = sorted(RECIPES.glob("*.toml"))
EVERY_PASS = [p.name for p in PASSES if not p.parameters]
# fuse_hardswish and decompose_hardswish undo each other: each run takes one of them
PASS_SETS = {undone: [name for name in EVERY_PASS if name != undone] for undone in sorted(UNDOING)}


@pytest.mark.parametrize("target", ["litert", "onert", "any"])
def test_every_pass_on_every_recipe_makes_only_what_the_target_runs(target):
    """Every pass (default, O1 and opt-in) over every recipe, for each target: the output gate
    (targets.check_made) finds no op a pass made that the target cannot run."""
    for path in RECIPE_PATHS:
        recipe = load_recipe(path)
        for passes in PASS_SETS.values():
            model = build(recipe, recipe_format(recipe), where=path.name)
            try:
                api.apply_passes(model, passes, target)
            except InternalError as e:
                pytest.fail(f"{path.name}: {e}")


def test_the_output_gate_refuses_what_a_pass_made_without_asking(monkeypatch):
    """A pass that makes HARD_SWISH for onert without asking the target: exit 3 naming it, not a
    model onert cannot load."""
    from bnfold.passes import fuse_hardswish

    def careless(graph):
        result = PassResult()
        add = graph.ops[0]
        result.fold(add, [add], into=[])
        graph.remove_op(add)
        result.made(graph.add_op("HARD_SWISH", [add.inputs[0]], list(add.outputs), None, after=add))
        return result

    monkeypatch.setattr(fuse_hardswish, "run", careless)
    with pytest.raises(InternalError, match=r"pass fuse_hardswish made subgraph 0 HARD_SWISH .*onert does not run"):
        api.apply_passes(build(_hard_swish_net()), ["fuse_hardswish"], "onert")
    model = build(_hard_swish_net())  # LiteRT runs it: the gate lets it through
    assert api.apply_passes(model, ["fuse_hardswish"], "litert").folds


def test_ranks_and_types_a_runtime_refuses_are_in_the_table():
    """onert 0.1.0 refuses a PAD or MEAN of rank 5, a TRANSPOSE of INT64 and a PAD of integers;
    LiteRT a PAD of rank 6: probed (schemas/derive_runtimes.py SHAPED_PROBES), asked by rank and type."""
    onert_, litert_ = Target("onert"), Target("litert")
    assert onert_.refusal("PAD", rank=5) == "onert does not run PAD of rank 5"
    assert onert_.refusal("MEAN", rank=5) == "onert does not run MEAN of rank 5"
    assert onert_.refusal("TRANSPOSE", rank=4, dtype="INT64") == "onert does not run TRANSPOSE of INT64"
    assert onert_.refusal("PAD", rank=4, dtype="INT32") == "onert does not run PAD of INT32"
    assert onert_.refusal("TRANSPOSE", rank=6, dtype="INT32") is None
    assert litert_.refusal("PAD", rank=5) is None
    assert litert_.refusal("PAD", rank=6) == "litert does not run PAD of rank 6"


def test_the_output_gate_holds_a_changed_op_to_what_it_was(monkeypatch):
    """A pass that turns a float TRANSPOSE into one of INT64 for onert is refused by the gate; the
    same change for litert passes."""
    from bnfold.passes import remove_unnecessary_transpose

    def retype(graph):
        result = PassResult()
        op = next(op for op in graph.ops if op.kind == "TRANSPOSE")
        graph.touch(op)  # what any mutation method records before changing the op
        op.outputs[0].dtype = "INT64"
        result.fold(op, [], into=[op])
        return result

    def net():
        n = Net()
        x = n.input("x", [1, 2, 3, 4])
        n.outputs = [n.op("TRANSPOSE", [x, n.ints("p", [0, 2, 3, 1])], "y", [1, 3, 4, 2])]
        return build(n.recipe())

    monkeypatch.setattr(remove_unnecessary_transpose, "run", retype)
    with pytest.raises(InternalError, match="remove_unnecessary_transpose .*onert does not run TRANSPOSE of INT64"):
        api.apply_passes(net(), ["remove_unnecessary_transpose"], "onert")
    assert api.apply_passes(net(), ["remove_unnecessary_transpose"], "litert").folds


def _int64_transposed_add() -> dict:
    """x, y INT64: TRANSPOSE(x) + y -> TRANSPOSE back -> z. Moving the first TRANSPOSE forward
    cancels it with the second and puts one on y: fewer transposes, but one of INT64."""
    n = Net()
    x, y = n.input("x", [1, 2, 3, 4]), n.input("y", [1, 3, 4, 2])
    t = n.op("TRANSPOSE", [x, n.ints("p", [0, 2, 3, 1])], "t", [1, 3, 4, 2])
    a = n.op("ADD", [t, y], "a", [1, 3, 4, 2])
    n.outputs = [n.op("TRANSPOSE", [a, n.ints("q", [0, 3, 1, 2])], "z", [1, 2, 3, 4])]
    recipe = n.recipe()
    for operand in recipe["operand"]:
        if operand["name"] in ("x", "y", "t", "a", "z"):
            operand["dtype"] = "INT64"
    return recipe


@pytest.mark.parametrize("passes", [["forward_transpose_op"], ["remove_redundant_transpose"]])
def test_the_propagation_makes_no_transpose_the_target_cannot_run(passes):
    """For onert the region is refused with the reason (onert has no TRANSPOSE of INT64); for
    LiteRT the move is made, and computes the same."""
    for_onert = build(_int64_transposed_add(), CIRCLE)
    report = api.apply_passes(for_onert, passes, "onert")
    assert dict(for_onert.op_counts()) == {"TRANSPOSE": 2, "ADD": 1} and not report.folds
    assert "onert does not run TRANSPOSE of INT64" in {t["reason"] for t in report.transposes}
    original, for_litert = build(_int64_transposed_add()), build(_int64_transposed_add())
    assert api.apply_passes(for_litert, passes, "litert").folds and for_litert.op_counts()["TRANSPOSE"] == 1
    xs = [np.arange(24).reshape(1, 2, 3, 4).astype(np.int64), np.arange(24).reshape(1, 3, 4, 2).astype(np.int64)]
    np.testing.assert_array_equal(litert.run(build_copy(for_litert), xs)[0], litert.run(original, xs)[0])


def test_an_int64_input_stays_nchw_for_onert():
    """--nchw_to_nhwc_input_shape would put a TRANSPOSE of INT64 after the input: onert has none,
    so the input is kept with that reason (for litert it changes)."""
    n = Net()
    x = n.input("x", [1, 2, 3, 4])
    n.outputs = [n.op("RESHAPE", [x, n.ints("s", [24])], "z", [24], new_shape=[24])]
    recipe = n.recipe()
    for operand in recipe["operand"]:
        if operand["name"] in ("x", "z"):
            operand["dtype"] = "INT64"
    passes = ["convert_nchw_to_nhwc", "nchw_to_nhwc_input_shape"]
    report = api.apply_passes(build(recipe, CIRCLE), passes, "onert")
    assert report.interface["kept"] == [
        {"name": "x", "side": "input", "shape": [1, 2, 3, 4], "reason": "onert does not run TRANSPOSE of INT64"}
    ]
    assert [r["name"] for r in api.apply_passes(build(recipe, CIRCLE), passes, "litert").interface["inputs"]] == ["x"]


# ---- onert 0.1.0's faults that are not an operator kind (schemas/derive_runtimes.py probes them) ------------


def test_onerts_faults_beside_the_kinds_are_in_the_table():
    """Derived, not written: a graph output another op reads (every reader kind probed), keep_num_dims,
    SPLIT_V, and the rank-4 reductions without keep_dims that onert prepares (the channel axis, or
    the two spatial ones) and those it does not. LiteRT runs them all."""
    from bnfold.ir import runtimes

    readers = {k for k, v in runtimes.PROBED if v == "form reads_graph_output"}
    assert {"RESHAPE", "STRIDED_SLICE", "SQUEEZE", "ABS", "ADD", "FULLY_CONNECTED"} <= readers
    assert not any((k, "form reads_graph_output") in runtimes.RUNS["onert"] for k in readers)
    assert all((k, "form reads_graph_output") in runtimes.RUNS["litert"] for k in readers)
    onert_, litert_ = Target("onert"), Target("litert")
    assert (
        onert_.refusal("FULLY_CONNECTED", form="keep_num_dims") == "onert does not run FULLY_CONNECTED (keep num dims)"
    )
    assert onert_.refusal("SPLIT_V") == "onert does not run SPLIT_V" and onert_.refusal("SPLIT") is None
    assert onert_.refusal("MEAN", form="rank_4_dropping_1") == "onert does not run MEAN (rank 4 dropping 1)"
    for prepared in ("rank_4_dropping_3", "rank_4_dropping_1_2"):
        assert onert_.refusal("MEAN", form=prepared) is None and onert_.refusal("SUM", form=prepared) is None
    assert litert_.refusal("MEAN", form="rank_4_dropping_1") is None and litert_.refusal("SPLIT_V") is None


def _output_read_net(reader: str = "RESHAPE") -> dict:
    """y = MUL(x, w) is a graph output, read by a RESHAPE (or ABS) whose result a TANH reads: onert
    0.1.0 returns the TANH's values in y (tests/data/tico_suite/onert_output_read_by_reshape)."""
    n = Net()
    x = n.input("x", [2, 3, 4])
    y = n.op("MUL", [x, n.const("w", [4])], "y", [2, 3, 4])
    if reader == "RESHAPE":
        r = n.op("RESHAPE", [y, n.ints("s", [6, 4])], "r", [6, 4], new_shape=[6, 4])
        n.outputs = [y, n.op("TANH", [r], "t", [6, 4])]
    else:
        r = n.op(reader, [y], "r", [2, 3, 4])
        n.outputs = [y, n.op("TANH", [r], "t", [2, 3, 4])]
    return n.recipe()


@pytest.mark.parametrize("reader", ["RESHAPE", "ABS"])
def test_onert_overwrites_a_graph_output_another_op_reads(reader):
    """The fault the table's probe records, on a model bnfold never touched: onert differs from LiteRT."""
    from bnfold.values import onert

    if onert.missing():
        pytest.skip(onert.missing())
    model = build(_output_read_net(reader), CIRCLE)
    xs = [np.random.default_rng(0).normal(0, 2, (2, 3, 4)).astype(np.float32)]
    got, expected = onert.Session(model)(xs), litert.run(model, xs)
    assert not np.allclose(got[0], expected[0]) and np.allclose(got[1], expected[1], atol=1e-6)


def test_a_graph_with_a_graph_output_another_op_reads_is_left_as_it_is_for_onert():
    """Whether onert keeps such an output is the luck of its memory plan, which any rewrite may change:
    no pass runs on the graph for onert (nor any), the report's target says why; for LiteRT the passes run."""
    n = Net()
    x = n.input("x", [2, 3, 4])
    y = n.op(
        "ADD",
        [n.op("MUL", [x, n.const("w", [4])], "m", [2, 3, 4]), n.const("z", [4], values=[0.0] * 4)],
        "y",
        [2, 3, 4],
    )
    n.outputs = [y, n.op("TANH", [n.op("ABS", [y], "r", [2, 3, 4])], "t", [2, 3, 4])]
    for target in ("onert", "any"):
        model = build(n.recipe(), CIRCLE)
        report = api.apply_passes(model, ["remove_unnecessary_add"], target)
        assert not report.folds and model.op_counts()["ADD"] == 1
        [refused] = report.to_dict()["target"]["refused"]
        assert refused["at"] == "subgraph 0"
        assert "onert may overwrite a graph output another op reads ('y', read by ABS)" in refused["reason"]
    model = build(n.recipe(), CIRCLE)
    assert api.apply_passes(model, ["remove_unnecessary_add"], "litert").folds and "ADD" not in model.op_counts()


def test_a_graph_with_a_keep_num_dims_fully_connected_is_left_as_it_is_for_onert():
    """onert ignores keep_num_dims (it flattens [2, 3, 4] to [6, 2]): what it computes on the input is
    not the model's, so no rewrite there; a rank-2 input (nothing to keep) leaves the passes free."""
    for shape, left in (([2, 3, 4], True), ([6, 4], False)):
        n = Net()
        x = n.input("x", shape)
        out = [*shape[:-1], 2] if left else [6, 2]
        f = n.op("FULLY_CONNECTED", [x, n.const("w", [2, 4]), n.const("b", [2])], "f", out, keep_num_dims=left)
        n.outputs = [n.op("ADD", [f, n.const("z", [2], values=[0.0, 0.0])], "y", out)]
        report = api.apply_passes(build(n.recipe(), CIRCLE), ["fuse_add_with_fully_connected"], "onert")
        refused = report.to_dict()["target"]["refused"]
        if left:
            assert (
                not report.folds
                and "onert runs FULLY_CONNECTED (keep num dims) computing something else (output 'f')"
                in refused[0]["reason"]
            )
        else:
            assert report.folds and refused == []


def test_the_output_gate_refuses_a_pass_that_gives_a_graph_output_a_reader(monkeypatch):
    """A pass that makes an op read a graph output for onert without asking (targets.unkept_output):
    exit 3 naming it; for LiteRT it goes through."""
    from bnfold.passes import remove_unnecessary_add

    def careless(graph):
        result = PassResult()
        relu = next(op for op in graph.ops if op.kind == "RELU")
        y = graph.outputs[0]
        result.fold(relu, [relu], into=[relu])
        graph.set_input(relu, 0, y)  # RELU now reads the graph output y
        return result

    def net():
        n = Net()
        x = n.input("x", [2, 3])
        y = n.op("ADD", [x, n.const("c", [3])], "y", [2, 3])
        n.outputs = [y, n.op("TANH", [n.op("RELU", [x], "r", [2, 3])], "t", [2, 3])]
        return build(n.recipe(), CIRCLE)

    monkeypatch.setattr(remove_unnecessary_add, "run", careless)
    with pytest.raises(InternalError, match=r"pass remove_unnecessary_add left subgraph 0 so: onert may overwrite"):
        api.apply_passes(net(), ["remove_unnecessary_add"], "onert")
    assert api.apply_passes(net(), ["remove_unnecessary_add"], "litert").folds


def test_litert_leaves_a_dequantized_float16_output_uncomputed_under_a_delegated_reader():
    """LiteRT's default run (XNNPACK) takes a float16 constant's DEQUANTIZE into the op it delegates
    and never writes the DEQUANTIZE's own output: a graph output read by a RESHAPE (delegated) is
    garbage, one read by a SQUEEZE (not delegated) is right. Probed per reader kind; asked by
    targets.unkept_output (engine/reshapes.py's replace_by_reshape: seed 40801's STRIDED_SLICE)."""
    from bnfold.ir import runtimes

    form = "form reads_float16_dequantize_output"
    assert ("RESHAPE", form) in runtimes.PROBED and ("RESHAPE", form) not in runtimes.RUNS["litert"]
    assert ("SQUEEZE", form) in runtimes.RUNS["litert"]
    n = Net()
    x = n.input("x", [3, 5])
    d = n.op("DEQUANTIZE", [n.const("k", [1, 3, 5, 1], dtype="FLOAT16")], "d", [1, 3, 5, 1])
    n.outputs = [d, n.op("ADD", [x, x], "y", [3, 5])]
    model = build(n.recipe())
    graph = model.graphs[0]
    graph.target = Target("litert")
    assert graph.target.unkept_output(graph) is None  # nothing reads d
    reason = graph.target.unkept_output(graph, [(graph.outputs[0], "RESHAPE")])
    assert reason is not None and "float16 constant's DEQUANTIZE writes ('d') once a RESHAPE" in reason
    assert graph.target.unkept_output(graph, [(graph.outputs[0], "SQUEEZE")]) is None


def test_a_graph_with_a_rank_5_minimum_is_left_as_it_is_for_onert():
    """onert 0.1.0 runs a MINIMUM broadcasting a constant over rank 5 computing part of it only (the rest
    is whatever its buffer held: seed 70136 ran right raw, wrong once a fold changed the plan): a graph
    holding one gets no pass for onert; for LiteRT it does."""
    from bnfold.ir.miscomputed import OTHERWISE

    assert ("MINIMUM", "rank 5") in OTHERWISE["onert"] and ("MINIMUM", "rank 5") in RUNS_LITERT
    n = Net()
    x = n.input("x", [2, 1, 2, 5, 1])
    m = n.op("MINIMUM", [x, n.const("k", [1], values=[6.5])], "m", [2, 1, 2, 5, 1])
    n.outputs = [n.op("ADD", [m, n.const("z", [1], values=[0.0])], "y", [2, 1, 2, 5, 1])]
    report = api.apply_passes(build(n.recipe(), CIRCLE), ["remove_unnecessary_add"], "onert")
    [refused] = report.to_dict()["target"]["refused"]
    assert not report.folds and "onert runs MINIMUM of rank 5 computing something else" in refused["reason"]
    assert api.apply_passes(build(n.recipe(), CIRCLE), ["remove_unnecessary_add"], "litert").folds
