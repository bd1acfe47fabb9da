"""The output gate (ir/invariants.py: check_output, engine/manager.py: check_interface): a pass
that breaks the graph is exit 3 naming it, with nothing written; a sound output passes."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import numpy as np
import pytest

import bnfold
from bnfold import api, cli
from bnfold.engine import registry
from bnfold.engine.report import PassResult
from bnfold.errors import InternalError
from bnfold.ir.graph import Graph, Options
from bnfold.ir.ops import TABLE, info
from bnfold.ir.shapes import RULES, shape_problem
from conftest import DATA, RECIPES, TEST_RECIPES

MODEL = DATA / "bn_conv_valid.tflite"  # input -> MUL -> ADD -> CONV_2D -> output
BROKEN = "fuse_batchnorm_with_conv"  # the pass whose run a test replaces with a broken one
REPROS = DATA / "layout_repros"
NHWC = (0, 2, 3, 1)


def _ops(graph: Graph) -> tuple:
    mul, add, conv = graph.ops
    return mul, add, conv


def _tensor(graph: Graph, like, shape, name: str = "broken"):
    return graph.add_tensor(name, like.dtype, shape)


def _const(graph: Graph, values) -> object:
    return graph.add_const("broken/const", np.array(values, dtype=np.int32), "INT32")


def unproduced(graph: Graph) -> None:
    _, add, conv = _ops(graph)
    graph.set_input(conv, 0, _tensor(graph, add.outputs[0], add.outputs[0].shape))


def two_writers(graph: Graph) -> None:
    mul, add, _ = _ops(graph)
    graph.add_op("RELU", [mul.outputs[0]], [add.outputs[0]], after=add)


def cycle(graph: Graph) -> None:
    mul, add, _ = _ops(graph)
    graph.set_input(mul, 0, add.outputs[0])


def wrong_options_table(graph: Graph) -> None:
    conv = _ops(graph)[2]
    conv.options = Options("AddOptions", fusedActivationFunction=0)


def _between(graph: Graph, kind: str, extra: list, options, out_shape) -> None:
    """An op of `kind` between ADD and the conv, its output recorded as `out_shape`."""
    _, add, conv = _ops(graph)
    x = add.outputs[0]
    y = _tensor(graph, x, out_shape)
    graph.add_op(kind, [x, *extra(graph)], [y], options, after=add)
    graph.set_input(conv, 0, y)


def reshape_size(graph: Graph) -> None:
    _between(graph, "RESHAPE", lambda g: [_const(g, [1, 8, 8, 4])], Options("ReshapeOptions"), (1, 8, 8, 4))


def transpose_perm(graph: Graph) -> None:
    _between(graph, "TRANSPOSE", lambda g: [_const(g, [0, 2, 1])], Options("TransposeOptions"), (1, 8, 8, 3))


def transpose_shape(graph: Graph) -> None:
    _between(graph, "TRANSPOSE", lambda g: [_const(g, [0, 3, 1, 2])], Options("TransposeOptions"), (1, 8, 8, 3))


def squeeze_dims(graph: Graph) -> None:
    _between(graph, "SQUEEZE", lambda g: [], Options("SqueezeOptions", squeezeDims=np.array([1])), (1, 8, 3))


def concatenation_sizes(graph: Graph) -> None:
    mul = _ops(graph)[0]
    opts = Options("ConcatenationOptions", axis=3, fusedActivationFunction=0)
    _between(graph, "CONCATENATION", lambda g: [mul.outputs[0]], opts, (1, 8, 8, 3))


def conv_stride(graph: Graph) -> None:
    conv = _ops(graph)[2]
    conv.options = conv.options.copy(strideW=2)


def tensor_shape(graph: Graph) -> None:
    _ops(graph)[1].outputs[0].shape = (1, 8, 8, 4)


def extra_output(graph: Graph) -> None:
    graph.outputs.append(graph.outputs[0])


def crash(graph: Graph) -> None:
    raise RuntimeError("boom")


BREAKAGES = {
    unproduced: "which no operator produces",
    two_writers: "is written by operators",
    cycle: "has a cycle through operator",
    wrong_options_table: "carries AddOptions, expected Conv2DOptions",
    reshape_size: "(RESHAPE) inconsistent: new shape [1, 8, 8, 4] holds 256 elements, its input [1, 8, 8, 3] holds 192",
    transpose_perm: "(TRANSPOSE) inconsistent: permutation [0, 2, 1] is not one of the 4 axes",
    transpose_shape: "(TRANSPOSE) inconsistent: output 'broken' is recorded as [1, 8, 8, 3], its inputs and "
    "options make [1, 3, 8, 8]",
    squeeze_dims: "(SQUEEZE) inconsistent: squeeze dims [1] name axis 1 of [1, 8, 8, 3], which is not 1",
    concatenation_sizes: "(CONCATENATION) inconsistent: output 'broken' is recorded as [1, 8, 8, 3], its inputs "
    "and options make [1, 8, 8, 6]",
    conv_stride: "(CONV_2D) inconsistent: output 'StatefulPartitionedCall_1:0' is recorded as [1, 6, 6, 6], its "
    "inputs and options make [1, 6, 3, 6]",
    tensor_shape: "(ADD) inconsistent: output 'sequential_7_1/batch_normalization_7_1/batchnorm/add_1' is recorded "
    "as [1, 8, 8, 4], its inputs and options make [1, 8, 8, 3]",
    extra_output: "left graph 0 with 2 outputs, not 1",
    crash: "failed on subgraph 0: RuntimeError: boom",
}


def install(monkeypatch, breakage, only: str | None = None) -> None:
    """Make the pass BROKEN apply `breakage` once per graph (only in a graph whose first input is
    named `only`, when given; elsewhere it runs as it is)."""
    module = registry.BY_NAME[BROKEN].module
    real = module.run

    def broken(graph: Graph) -> PassResult:
        done = getattr(graph, "_broken", False)
        if done or (only is not None and graph.inputs[0].name != only):
            return real(graph)
        graph._broken = True
        breakage(graph)
        result = PassResult()
        result.fold(graph.ops[-1], [])
        return result

    monkeypatch.setattr(module, "run", broken)
    monkeypatch.setattr(Graph, "_broken", False, raising=False)


@pytest.mark.parametrize("breakage", list(BREAKAGES), ids=lambda f: f.__name__)
def test_a_broken_pass_is_exit_3_naming_it_and_nothing_is_written(breakage, monkeypatch, tmp_path, capsys):
    install(monkeypatch, breakage)
    out, report = tmp_path / "out.tflite", tmp_path / "report.json"
    code = cli.run(["optimize", str(MODEL), str(out), "--passes", BROKEN, "--report", str(report)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 3 and len(lines) == 1, (code, lines)
    assert f"pass {BROKEN} " in lines[0] and BREAKAGES[breakage] in lines[0], lines[0]
    assert "a bug in bnfold; nothing written" in lines[0]
    assert os.listdir(tmp_path) == []  # no output, no report, no temporary file


def test_the_library_raises_it_and_writes_nothing(monkeypatch, tmp_path):
    install(monkeypatch, squeeze_dims)
    with pytest.raises(InternalError, match="squeeze dims") as caught:
        bnfold.optimize(MODEL.read_bytes(), BROKEN)
    assert caught.value.exit_code == 3
    with pytest.raises(InternalError):
        bnfold.optimize_file(MODEL, tmp_path / "o.tflite", BROKEN, check=2)  # before the check runs
    assert os.listdir(tmp_path) == []


def test_the_writer_is_the_last_gate(tmp_path):
    """A model broken outside any pass (by library code, whose edits are not recorded: the reader's
    checks hold them) is refused by the writer itself, before a temporary file exists; so is
    Optimized.data."""
    model = api.load(MODEL)
    unproduced(model.graphs[0])
    model.changed = True
    with pytest.raises(InternalError, match="bnfold left a model bnfold's reader refuses: .* no operator produces"):
        api.save(model, str(tmp_path / "o.tflite"))
    assert os.listdir(tmp_path) == []
    result = bnfold.optimize(MODEL, "")
    cycle(result.model.graphs[0])
    with pytest.raises(InternalError, match="has a cycle"):
        assert result.data
    with pytest.raises(InternalError, match="has a cycle"):
        result.save(str(tmp_path / "o.tflite"))
    assert os.listdir(tmp_path) == []


def test_in_batch_mode_only_the_broken_model_fails(monkeypatch, tmp_path):
    """The pass breaks only bn_conv_valid's graph: that model fails with 3, the others are written."""
    install(monkeypatch, cycle, only=api.load(MODEL).graphs[0].inputs[0].name)
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name in ("bn_conv_valid.tflite", "conv_relu_bn.tflite", "bn_relu_conv.tflite"):
        (inputs / name).write_bytes((DATA / name).read_bytes())
    result = bnfold.optimize_many([inputs], tmp_path / "out", BROKEN, jobs=2)
    codes = {Path(m.input).name: m.exit_code for m in result.models}
    assert codes == {"bn_conv_valid.tflite": 3, "conv_relu_bn.tflite": 0, "bn_relu_conv.tflite": 0}, codes
    assert result.exit_code == 3
    (failed,) = [m for m in result.models if m.exit_code == 3]
    assert f"bn_conv_valid.tflite: pass {BROKEN} left a model bnfold's reader refuses" in failed.error, failed.error
    assert sorted(os.listdir(tmp_path / "out")) == ["bn_relu_conv.tflite", "conv_relu_bn.tflite"]


# ---- the repros of issue 38 ------------------------------------------------------------------


def _repro_commands() -> list[tuple[str, list[str]]]:
    found = []
    for txt in sorted(REPROS.glob("*.txt")):
        for line in txt.read_text().splitlines():
            if line.startswith("command: bnfold "):
                found.append((txt.stem, shlex.split(line.removeprefix("command: bnfold "))))
    return found


@pytest.mark.parametrize("name, argv", _repro_commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_no_repro_is_written_broken(name, argv, tmp_path, capsys):
    """Under its .txt command each repro either fails with exit 3 naming a pass and writes nothing,
    or (once its bug is fixed) writes a model bnfold reads back, LiteRT runs, and whose interface
    is the input's (its 4-D inputs and outputs NHWC under the interface parameters)."""
    from ai_edge_litert.interpreter import Interpreter

    out = tmp_path / f"{name}.opt.tflite"
    argv = [str(REPROS / a) if a == f"{name}.tflite" else str(out) if a.endswith(".opt.tflite") else a for a in argv]
    code = cli.run(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    if code != 0:
        # a pass that breaks the graph is named by the gate, one that crashes (internal-*) by the manager
        assert code == 3 and len(lines) == 1 and "pass " in lines[0] and "nothing written" in lines[0], (code, lines)
        assert os.listdir(tmp_path) == []
        return
    before, after = api.load(REPROS / f"{name}.tflite").graphs[0], api.load(out).graphs[0]
    converted = {"input": "--nchw_to_nhwc_input_shape" in argv, "output": "--nchw_to_nhwc_output_shape" in argv}
    # "...: input in0 [2, 5, 2, 1] left as it was: <reason>": the report names what kept its layout
    kept = {line.split(": ")[1].split()[1] for line in captured.out.splitlines() if " left as it was: " in line}
    sides = ["input"] * len(before.inputs) + ["output"] * len(before.outputs)
    for side, was, now in zip(sides, before.inputs + before.outputs, after.inputs + after.outputs, strict=True):
        nhwc = converted[side] and len(was.shape) == 4 and was.name not in kept
        expected = tuple(was.shape[i] for i in NHWC) if nhwc else was.shape
        assert now.shape == expected, (now, was)
    runner = Interpreter(model_path=str(out))
    runner.allocate_tensors()
    for detail in runner.get_input_details():
        runner.set_tensor(detail["index"], np.ones(detail["shape"], detail["dtype"]))
    runner.invoke()


# ---- the shape rules -------------------------------------------------------------------------


def test_every_rule_the_table_names_exists():
    assert {i.shape for i in TABLE if i.shape is not None} <= set(RULES)


def _fixtures() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.suffix in (".tflite", ".circle") and "layout_repros" not in p.parts)


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.relative_to(DATA).as_posix())
def test_the_rules_agree_with_the_converters_shapes(path):
    """Every op of every real fixture (TFLite and ONE converters, the chef) has the output shapes
    its kind's rule computes: the rules are the runtimes', not a guess."""
    model = api.load(path)
    for graph in model.graphs:
        for op in graph.ops:
            assert shape_problem(op, info(op.kind).shape) is None, (
                path.name,
                op,
                shape_problem(op, info(op.kind).shape),
            )


def test_the_writer_checks_only_what_changed_since_the_last_check(monkeypatch, tmp_path):
    """A model as read, or as the manager's gate left it, is not validated a second time by the
    writer (a 12k-operator graph costs 0.4 s a sweep); any mutation after that is."""
    from bnfold.ir import invariants

    calls = []
    real = invariants.check_output
    monkeypatch.setattr(invariants, "check_output", lambda model, path=None: calls.append(path) or real(model, path))
    api.convert(MODEL, tmp_path / "a.circle")
    bnfold.optimize_file(MODEL, tmp_path / "b.tflite")
    assert calls == []
    result = bnfold.optimize(MODEL)
    result.model.graphs[0].ops[0].fused_activation = "RELU6"  # the one CONV_2D left after the folds
    result.save(str(tmp_path / "c.tflite"))
    assert calls == [str(tmp_path / "c.tflite")]


RECIPE_NAMES = sorted(p.stem for p in RECIPES.glob("*.toml"))
COVERED: set[str] = set()  # the kinds whose rule LiteRT confirmed (the last test checks the list)


def _compare_with_litert(path: Path) -> None:
    """Every op's rule, applied to the shapes as read, gives the shapes LiteRT computes when it
    prepares the model (its kernels' Prepare recomputes every output shape)."""
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path))
    try:
        runner.allocate_tensors()
    except RuntimeError as e:
        pytest.skip(f"LiteRT does not prepare it: {str(e)[:80]}")
    prepared = {d["index"]: tuple(int(x) for x in d["shape"]) for d in runner.get_tensor_details()}
    graph = api.load(path).graphs[0]
    index = {id(t): i for i, t in enumerate(graph.tensors)}
    for op in graph.ops:
        rule = info(op.kind).shape
        computed = RULES[rule](op) if rule is not None else None
        if computed is None:
            continue
        assert [tuple(s) for s in computed] == [prepared[index[id(t)]] for t in op.outputs], (op, computed)
        COVERED.add(op.kind)


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_the_rules_compute_what_litert_computes(name, tmp_path):
    """Each recipe's model, written as TFLite."""
    from bnfold.errors import BnfoldError
    from bnfold.io.atomic import save_model
    from bnfold.io.formats import TFLITE
    from bnfold.recipe.chef import build, load_recipe, recipe_format

    recipe = load_recipe(RECIPES / f"{name}.toml")
    path = tmp_path / "m.tflite"
    try:
        save_model(build(recipe, recipe_format(recipe)), str(path), TFLITE)
    except BnfoldError:
        pytest.skip("not representable in TFLite")
    _compare_with_litert(path)


@pytest.mark.parametrize(
    "path", [p for p in sorted(DATA.rglob("*.tflite"))], ids=lambda p: p.relative_to(DATA).as_posix()
)
def test_the_rules_compute_what_litert_computes_on_the_fixtures(path):
    """The real fixtures (converters' exports, the zoo) and the layout repros' inputs."""
    _compare_with_litert(path)


def test_the_rules_compute_what_litert_computes_for_kinds_no_recipe_holds(tmp_path):
    """EXPAND_DIMS, SUM with keep_dims, SQUEEZE of named dims, TILE, ARG_MAX, MIRROR_PAD, a strided
    SAME AVERAGE_POOL_2D (tests/data/recipes/Shape_Rules_000.toml)."""
    from bnfold.recipe.chef import build, load_recipe

    model = build(load_recipe(TEST_RECIPES / "Shape_Rules_000.toml"))
    api.save(model, str(tmp_path / "m.tflite"))
    before = set(COVERED)
    COVERED.clear()
    _compare_with_litert(tmp_path / "m.tflite")
    assert COVERED == {"EXPAND_DIMS", "SUM", "SQUEEZE", "TILE", "ARG_MAX", "MIRROR_PAD", "AVERAGE_POOL_2D"}
    COVERED.update(before)


def test_litert_confirmed_the_rules_of_the_kinds_passes_rewrite():
    """Run after the recipes above (file order): the kinds the layout passes and folds create or
    change had their rule checked against LiteRT at least once."""
    if len(COVERED) < 5:
        pytest.skip("run with the recipe test above")
    wanted = {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "CONV_3D", "TRANSPOSE"}
    wanted |= {"RESHAPE", "CONCATENATION", "MEAN", "PAD", "SLICE", "STRIDED_SLICE", "SPLIT", "SPLIT_V", "MUL", "ADD"}
    wanted |= {"SQUEEZE", "AVERAGE_POOL_2D"}
    assert wanted <= COVERED, sorted(wanted - COVERED)


def test_the_gate_and_the_planner_look_again_only_at_a_graph_something_changed(monkeypatch, tmp_path):
    """A model the passes leave as read (every graph still sound, no pass said it changed it) is
    not swept again (the reader's checks hold) nor simulated a second time (its clobbers are the
    input's); a model a pass folded is, and so is one library code changed before the run (its
    edits are recorded by no pass: only the sweep holds them)."""
    from bnfold.engine import manager, planner

    calls = {"check_output": 0, "new_clobbers": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(manager, "check_output", counted("check_output", manager.check_output))
    monkeypatch.setattr(planner, "new_clobbers", counted("new_clobbers", planner.new_clobbers))
    folded = tmp_path / "folded.tflite"
    model = api.load(MODEL)  # its MUL and ADD fold into the conv
    report = api.apply_passes(model)
    assert report.folds and calls == {"check_output": 1, "new_clobbers": 1}
    api.save(model, folded)
    calls.update(check_output=0, new_clobbers=0)
    unchanged = api.load(folded)
    report = api.apply_passes(unchanged)
    assert not report.folds and not unchanged.changed and calls == {"check_output": 0, "new_clobbers": 0}
    edited = api.load(folded)
    conv = edited.graphs[0].ops[0]
    edited.graphs[0].set_input(conv, 0, conv.inputs[0])  # library code's edit, outside any pass
    api.apply_passes(edited)
    assert calls == {"check_output": 1, "new_clobbers": 1}
