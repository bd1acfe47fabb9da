"""A model compared with itself is never called different: a backend that loads a model and fails
while running it hands the check to the next backend (exit 4 with each reason when none runs it),
and random inputs that index something are drawn in range (check, run, optimize --check)."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.cli import run
from bnfold.errors import CannotVerify
from bnfold.io.atomic import save_model
from bnfold.io.reader import read_model
from bnfold.recipe.chef import build
from bnfold.values import diff
from bnfold.values.backend import Backends
from bnfold.values.h5io import read_h5, write_h5
from bnfold.values.index_inputs import caveats, index_uses
from conftest import build_recipe


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("bnfold: error: ") and "Traceback" not in err
    return err


def test_reduce_max_on_bool_falls_back_to_the_reference_interpreter(tmp_path, capsys):
    path = str(build_recipe("Foundation_ReduceMax_Bool_000", tmp_path))
    assert run(["check", path, path, "--samples", "3"]) == 0  # LiteRT fails at invoke; was exit 1
    out = capsys.readouterr().out
    assert (
        "backend reference interpreter (LiteRT failed to run the model:" in out
        and "(REDUCE_MAX) failed to invoke" in out
    )
    assert run(["check", path, path, "--backend", "litert"]) == 4  # no fallback asked for: could not verify
    assert "LiteRT failed to run the model" in one_line_error(capsys)
    out_h5 = str(tmp_path / "out.h5")
    assert run(["run", path, "--seed", "2", "--write-input", str(tmp_path / "in.h5"), "--output", out_h5]) == 0
    ((_, x),) = read_h5(str(tmp_path / "in.h5"))
    ((_, y),) = read_h5(out_h5)
    assert np.array_equal(y.astype(bool), x.astype(bool).any(axis=2))


@pytest.mark.parametrize(
    "recipe, backend",
    [
        ("Foundation_Gather_Index_000", "litert"),
        ("Foundation_EmbeddingLookup_000", "litert"),
        ("Foundation_GatherND_000", "litert"),
    ],
)
def test_index_inputs_are_drawn_in_range_and_litert_runs_them(recipe, backend, tmp_path, capsys):
    path = str(build_recipe(recipe, tmp_path))
    assert run(["check", path, path, "--samples", "4", "--backend", backend]) == 0  # was exit 1: out of bounds
    assert "backend litert (builtin kernels" in capsys.readouterr().out
    assert run(["check", path, path, "--samples", "2", "--backend", "reference"]) == 0
    assert run(["optimize", path, str(tmp_path / "o.tflite"), "--check", "2"]) == 0


def test_index_ranges_follow_casts_reshapes_and_the_gather_axis(tmp_path):
    graph = read_model(str(build_recipe("Foundation_Gather_Index_000", tmp_path))).graphs[0]
    ids, cols = graph.inputs
    uses = index_uses(graph)
    assert (uses[id(ids)].rows, uses[id(cols)].rows) == (10, 4)  # table rows; axis 1 of the [6, 4] gather
    samples = diff.random_inputs(graph, 20, seed=5)
    got_ids = np.concatenate([s[0].reshape(-1) for s in samples])
    got_cols = np.concatenate([s[1] for s in samples])
    assert got_ids.dtype == np.int64 and got_cols.dtype == np.int32
    assert set(got_ids.tolist()) == set(range(10)) and set(got_cols.tolist()) == set(range(4))
    nd = read_model(str(build_recipe("Foundation_GatherND_000", tmp_path))).graphs[0]
    assert index_uses(nd)[id(nd.inputs[0])].rows == 5  # pairs address axes 0 and 1 of [6, 5, 2]


def test_run_writes_index_inputs_in_range(tmp_path):
    path = str(build_recipe("Foundation_EmbeddingLookup_000", tmp_path))
    inp, out = str(tmp_path / "in.h5"), str(tmp_path / "out.h5")
    assert run(["run", path, "--samples", "3", "--write-input", inp, "--output", out]) == 0  # was exit 1
    for i in range(3):
        ((_, ids),) = read_h5(str(tmp_path / f"in.{i}.h5"))
        assert ids.dtype == np.int32 and 0 <= ids.min() and ids.max() < 8


def arithmetic_index_recipe(offset: int) -> dict:
    """ids + offset as GATHER indices into a [10, 3] table: bnfold cannot tell ids' valid range."""
    return {
        "input": ["ids"],
        "output": ["rows"],
        "operand": [
            {"name": "ids", "shape": [4], "dtype": "INT32"},
            {"name": "offset", "shape": [1], "dtype": "INT32", "filler": {"kind": "explicit", "values": [offset]}},
            {"name": "shifted", "shape": [4], "dtype": "INT32"},
            {"name": "table", "shape": [10, 3], "filler": {"kind": "gaussian"}},
            {"name": "rows", "shape": [4, 3]},
        ],
        "operation": [
            {"type": "ADD", "inputs": ["ids", "offset"], "outputs": ["shifted"]},
            {"type": "GATHER", "inputs": ["table", "shifted"], "outputs": ["rows"]},
        ],
    }


def test_no_backend_runs_it_exit_4_with_each_reason_and_the_input_hint(tmp_path, capsys):
    path = str(tmp_path / "shifted.tflite")
    model = build(arithmetic_index_recipe(100))
    save_model(model, path, model.format)
    assert caveats(model.graphs[0]) == [
        "input 'ids' reaches the indices of GATHER (op 1) through ADD (op 0), so bnfold cannot tell its valid range: "
        "give its values with --input"
    ]
    assert run(["check", path, path]) == 4  # was exit 1
    err = one_line_error(capsys)
    assert err.startswith("bnfold: error: no backend runs the model: LiteRT failed to run the model: ")
    assert "(GATHER) failed to invoke" in err
    assert "reference interpreter failed to run the model: GATHER (op 1) index" in err
    assert "out of range [0, 10)" in err and "--input" in err
    assert run(["optimize", path, str(tmp_path / "o.tflite"), "--check", "1", "--check-mode", "whole"]) == 4
    assert not (tmp_path / "o.tflite").exists()
    good = str(tmp_path / "in.h5")
    write_h5(good, [("ids", np.array([0, -100, -95, -91], np.int32))])  # -> rows 100, 0, 5, 9: still out of range
    assert run(["check", path, path, "--input", good]) == 4  # user values out of range: could not verify, not 1
    capsys.readouterr()
    write_h5(good, [("ids", np.array([-100, -95, -91, -98], np.int32))])
    assert run(["check", path, path, "--input", good]) == 0


def test_a_dynamic_params_axis_is_named_in_the_caveat():
    recipe = {
        "input": ["table", "ids"],
        "output": ["rows"],
        "operand": [
            {"name": "table", "shape": [1, 3]},
            {"name": "ids", "shape": [2], "dtype": "INT64"},
            {"name": "rows", "shape": [2, 3]},
        ],
        "operation": [{"type": "GATHER", "inputs": ["table", "ids"], "outputs": ["rows"]}],
    }
    graph = build(recipe).graphs[0]
    graph.inputs[0].shape_signature = (-1, 3)  # as a converter writes a dynamic batch of rows
    assert index_uses(graph)[id(graph.inputs[1])].rows is None
    assert caveats(graph) == [
        "input 'ids' indexes GATHER (op 0), whose params 'table' have no fixed length along "
        "axis 0, so bnfold cannot tell its valid range: give its values with --input"
    ]


def test_a_backend_that_fails_mid_way_hands_the_sample_to_the_next_for_every_model(tmp_path, monkeypatch):
    from bnfold.errors import RunFailed
    from bnfold.values import litert

    graph_model = read_model(str(build_recipe("Foundation_EmbeddingLookup_000", tmp_path)))
    calls = []
    real_invoke = litert.invoke

    def invoke(interp, inputs):  # both resolvers run sample 0 for both models, then fail from model B on
        calls.append(len(calls))
        if len(calls) >= 4:
            raise RunFailed("LiteRT failed to run the model: injected")
        return real_invoke(interp, inputs)

    monkeypatch.setattr(litert, "invoke", invoke)
    result = diff.check_models(graph_model, graph_model, samples=3)
    assert result.passed and result.samples == 3
    assert len(calls) == 5  # A, B on sample 0; B fails on sample 1; so does A under the default resolver
    assert result.backend == "reference interpreter from sample 1 (LiteRT failed to run the model: injected)"


def test_a_failure_on_a_later_sample_is_could_not_verify_never_a_difference():
    model = build(arithmetic_index_recipe(0))
    backends = Backends([model, model])
    assert backends.description.startswith("litert")
    assert len(backends([np.array([1, 2, 3, 9], np.int32)])) == 2
    with pytest.raises(CannotVerify, match="no backend runs the model: LiteRT failed"):
        backends([np.array([1, 2, 3, 10], np.int32)])


def test_a_shape_read_from_a_random_input_is_could_not_verify_not_an_internal_error(tmp_path, capsys):
    recipe = {
        "input": ["x", "shape"],
        "output": ["y"],
        "operand": [
            {"name": "x", "shape": [2, 6]},
            {"name": "shape", "shape": [2], "dtype": "INT32"},
            {"name": "y", "shape": [3, 4]},
        ],
        "operation": [{"type": "RESHAPE", "inputs": ["x", "shape"], "outputs": ["y"]}],
    }
    path = str(tmp_path / "shape_input.tflite")
    model = build(recipe)
    save_model(model, path, model.format)
    assert run(["check", path, path]) == 4  # was 3 (numpy's ValueError) once LiteRT's failure fell back
    err = one_line_error(capsys)
    assert (
        "(RESHAPE) failed to invoke" in err
        and "reference interpreter failed to run the model: RESHAPE (op 0): cannot reshape" in err
    )
    values = str(tmp_path / "in.h5")
    write_h5(values, [("x", np.arange(12, dtype=np.float32).reshape(2, 6)), ("shape", np.array([3, 4], np.int32))])
    assert run(["check", path, path, "--input", values]) == 0
