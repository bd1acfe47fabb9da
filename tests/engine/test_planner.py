"""LiteRT's planner simulated (engine/planner.py): the clobbers it finds are the ones LiteRT makes
(checked against LiteRT itself: its default run against the run with every tensor preserved), the
cleanup keeps a dead reader whose reference keeps LiteRT from one, and a pass that makes one is
exit 3 with nothing written."""

from __future__ import annotations

import io

import pytest

from bn_models import Net
from bnfold import api, cli
from bnfold.engine import registry
from bnfold.engine.planner import clobbers
from bnfold.engine.report import PassResult
from bnfold.errors import BnfoldError
from bnfold.io.reader import read_model
from bnfold.io.writer import serialize
from bnfold.ir.graph import Graph
from bnfold.recipe.chef import build
from conftest import DATA
from layout_fuzzing import _close, _interpreter, _invoke, in_place_graph, run_case, sample_inputs

BUILTIN = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


def masked(*, dead_reader: bool, second_reader: bool = True) -> Net:
    """x -> TANH -> h -> MUL(k) -> m -> SQUEEZE -> s -> SOFTMAX -> TANH -> y; ADD(x, m) -> z after
    it (m's second reader; else ADD(x, x)); RESHAPE(h), which nothing reads (the dead reader).
    Its reference keeps h at two: the MUL cannot run in place over h, so m roots its own buffer,
    which has two readers, so the SOFTMAX does not run in place over it either. Without it the
    MUL shares h's buffer, and the SOFTMAX, seeing one reader on s and on the root h, writes over
    m before the ADD reads it (seed 42170 of the layout fuzzer, shrunk)."""
    n = Net()
    n.input("x", [1, 5, 1])
    h = n.op("TANH", ["x"], "h", [1, 5, 1])
    m = n.op("MUL", [h, n.const("k", [1])], "m", [1, 5, 1])
    if dead_reader:
        n.op("RESHAPE", [h, n.ints("flat", [5, 1])], "unread", [5, 1])
    s = n.op("SQUEEZE", [m], "s", [5], squeeze_dims=[])
    soft = n.op("SOFTMAX", [s], "soft", [5], beta=1.0)
    y = n.op("TANH", [soft], "y", [5])
    z = n.op("ADD", ["x", m if second_reader else "x"], "z", [1, 5, 1])
    n.outputs = [y, z]
    return n


def _bytes(n: Net) -> bytes:
    model = n.model()
    out = io.BytesIO()
    serialize(model, out, model.format)
    return out.getvalue()


def _litert_shares_wrongly(content: bytes) -> bool:
    """LiteRT's default run (buffers shared) differs from its run with every tensor preserved."""
    preserved = _interpreter(content, preserve=True, resolver=BUILTIN)
    xs = sample_inputs(preserved, 0)
    shared = _invoke(_interpreter(content, resolver=BUILTIN), xs)
    return not all(_close(a, b) for a, b in zip(_invoke(preserved, xs), shared, strict=True))


def test_a_clobber_found_is_one_litert_makes():
    without = masked(dead_reader=False).model().graphs[0]
    [clobber] = clobbers(without)
    assert (clobber.writer.kind, clobber.tensor.name) == ("SOFTMAX", "m")
    assert _litert_shares_wrongly(_bytes(masked(dead_reader=False)))
    assert clobbers(masked(dead_reader=True).model().graphs[0]) == []
    assert not _litert_shares_wrongly(_bytes(masked(dead_reader=True)))


def test_the_cleanup_keeps_the_dead_reader_litert_needs(tmp_path, capsys):
    src, out = tmp_path / "masked.tflite", tmp_path / "out.tflite"
    src.write_bytes(_bytes(masked(dead_reader=True)))
    assert cli.run(["optimize", str(src), str(out)]) == 0
    assert "dead code kept: 1 operator(s)" in capsys.readouterr().out
    assert "RESHAPE" in [op.kind for op in read_model(str(out)).graphs[0].ops]
    assert run_case(src.read_bytes(), "default").kind == "ok"
    assert api.optimize(src.read_bytes()).report["notes"][-1]["dead_code_kept"]["operators"] == 1


def test_the_dead_reader_goes_where_nothing_needs_it(tmp_path, capsys):
    src, out = tmp_path / "masked.tflite", tmp_path / "out.tflite"
    src.write_bytes(_bytes(masked(dead_reader=True, second_reader=False)))
    assert cli.run(["optimize", str(src), str(out)]) == 0
    said = capsys.readouterr().out
    assert "dead code removed: 1 operators" in said and "dead code kept" not in said
    assert "RESHAPE" not in [op.kind for op in read_model(str(out)).graphs[0].ops]
    assert run_case(src.read_bytes(), "default").kind == "ok"


def test_the_simulation_finds_every_clobber_litert_makes_on_random_graphs():
    """In-place-heavy random graphs, no pass run: every graph LiteRT computes wrongly (its default
    run against the preserved one) has a clobber, read later by an op an output needs. (The
    converse fails only where the clobbered value cannot show: a SOFTMAX over an axis of 1.)"""
    wrong = found = 0
    for seed in range(1000):
        try:
            model = build(in_place_graph(seed, max_ops=24))
        except BnfoldError:
            continue
        out = io.BytesIO()
        serialize(model, out, model.format)
        if not _litert_shares_wrongly(out.getvalue()):
            continue
        wrong += 1
        found += bool(clobbers(model.graphs[0]))
    assert wrong >= 10 and found == wrong, (wrong, found)


PASS = "remove_unnecessary_reshape"


def _rewired(tmp_path, monkeypatch, *, after_the_writer: bool):
    """masked(...) with ADD(x, x), and y also reshaped to [1, 5, 1] (y2); a broken PASS makes the
    ADD read m in its slot 1, and, `after_the_writer`, y2 in its slot 0: LiteRT would then run the
    SOFTMAX in place over m before the ADD reads it. Returns the model's path."""
    net = masked(dead_reader=False, second_reader=False)
    net.op("RESHAPE", ["y", net.ints("back", [1, 5, 1])], "y2", [1, 5, 1])
    net.outputs = ["y2", "z"]
    src = tmp_path / "in.tflite"
    src.write_bytes(_bytes(net))

    def broken(graph: Graph) -> PassResult:
        result = PassResult()
        add = next(op for op in graph.ops if op.kind == "ADD")
        if add.inputs[1].name != "m":
            graph.touch(add)
            graph.set_input(add, 1, graph.tensor("m"))
            if after_the_writer:
                graph.set_input(add, 0, graph.tensor("y2"))
                graph.move_before(graph.ops[-1], add)  # y2's RESHAPE, then the ADD reading it
            result.fold(add, [])
        return result

    monkeypatch.setattr(registry.BY_NAME[PASS].module, "run", broken)
    return src


def test_a_clobber_a_pass_makes_is_undone_by_order(monkeypatch, tmp_path, capsys):
    """The ADD reads only what is written before the SOFTMAX: it runs before it instead, and the
    model computes the original's values in LiteRT as deployed, with no op added."""
    src, out = _rewired(tmp_path, monkeypatch, after_the_writer=False), tmp_path / "out.tflite"
    assert cli.run(["optimize", str(src), str(out), "--passes", PASS]) == 0
    assert "reordered: 1 operator(s)" in capsys.readouterr().out
    kinds = [op.kind for op in read_model(str(out)).graphs[0].ops]
    assert kinds.index("ADD") < kinds.index("SOFTMAX") and len(kinds) == 7
    assert clobbers(read_model(str(out)).graphs[0]) == []
    assert not _litert_shares_wrongly(out.read_bytes())


def test_a_clobber_order_cannot_undo_is_exit_3_naming_the_pass(monkeypatch, tmp_path, capsys):
    """The ADD also reads y2, written after the SOFTMAX: it cannot run before it. The manager's
    check over the whole output names the pass; nothing is written."""
    src, out = _rewired(tmp_path, monkeypatch, after_the_writer=True), tmp_path / "out.tflite"
    assert cli.run(["optimize", str(src), str(out), "--passes", PASS]) == 3
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and f"pass {PASS} left subgraph 0 unsafe" in said[0], said
    assert "SOFTMAX (writing soft) in place over m, read after it by ADD" in said[0] and not out.exists()


def test_optimize_plans_the_input_only_for_an_output_left_with_a_clobber(monkeypatch, tmp_path):
    """optimize runs the passes without simulating LiteRT's plan of the input first (engine/
    manager.py: check_in_place): an output without a clobber has no new one, whatever the input
    had; one left with a clobber (InputPlanNeeded) has them run again on the input read anew, with
    the plan, and the output is the one a run with the plan from the start makes."""
    from bnfold.engine import planner

    plans = []
    simulate = planner.overwrites
    monkeypatch.setattr(planner, "overwrites", lambda graph: plans.append(graph) or simulate(graph))
    assert api.optimize(str(DATA / "bn_conv_valid.tflite")).report["folds"] and plans == []
    src = _rewired(tmp_path, monkeypatch, after_the_writer=False)
    result = api.optimize_file(src, tmp_path / "out.tflite", PASS)
    assert len(plans) == 1 and any("reordered" in note for note in result.report["notes"])
    planned = api.load(str(src))
    api.apply_passes(planned, [PASS])  # the plan first, as every library caller's run takes it
    api.save(planned, tmp_path / "planned.tflite")
    assert (tmp_path / "out.tflite").read_bytes() == (tmp_path / "planned.tflite").read_bytes()


@pytest.mark.parametrize("dead_reader", [True, False])
def test_an_input_litert_already_miscomputes_is_not_refused(dead_reader):
    """The check holds bnfold to the input: a graph LiteRT already runs wrongly is the runtime's."""
    content = _bytes(masked(dead_reader=dead_reader))
    assert bool(clobbers(api.optimize(content).model.graphs[0])) is not dead_reader
