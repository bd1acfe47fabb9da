"""The library is one layer (api.py, exposed as `bnfold.<name>`) and the CLI a shell over it."""

from __future__ import annotations

import ast
import os
import pydoc
import stat
from pathlib import Path

import pytest

import bnfold
from bnfold import api
from bnfold.cli import run
from conftest import DATA, build_recipe

SRC = Path(bnfold.__file__).parent
COMMANDS = (
    "optimize",
    "optimize_file",
    "optimize_many",
    "convert",
    "inspect",
    "check",
    "run",
    "h5diff",
    "build_recipe",
    "test_recipes",
)


def test_dir_and_help_show_the_library():
    from bnfold import batch

    for name in COMMANDS:
        assert name in dir(bnfold)
        function = getattr(bnfold, name)
        assert function is getattr(batch if name == "optimize_many" else api, name)  # batch.py is built on api.py
        assert function.__doc__ and len(function.__doc__.split()) > 12, name  # its own words, not a pointer
    assert "optimize_file" in pydoc.render_doc(bnfold) and "check=3" in pydoc.render_doc(bnfold.api)
    assert "    check(model: " in pydoc.render_doc(bnfold.api, renderer=pydoc.plaintext)  # listed, loaded on first use
    assert "optimize_many(paths" in pydoc.render_doc(bnfold.batch, renderer=pydoc.plaintext)


@pytest.mark.parametrize("module", sorted(p.name for p in (SRC / "cli").glob("*.py")))
def test_cli_is_a_shell_over_the_library(module):
    source = (SRC / "cli" / module).read_text()
    assert len(source.splitlines()) <= 300
    inner = [
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module and node.level != 1
    ]  # .x: the cli package itself
    assert not {m for m in inner if m.split(".")[0] in ("values", "passes", "engine", "io", "ir", "recipe")}, inner


def test_the_programs_exit_handling_stays_outside_the_library():
    """exits.py turns failures into lines and codes; what it needs of the library's insides (the
    signals that interrupt a write, the files written in full) comes through errors.py."""
    tree = ast.parse((SRC / "exits.py").read_text())
    inner = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not {m for m in inner if m.split(".")[0] in ("values", "passes", "engine", "io", "ir", "recipe")}, inner


@pytest.mark.parametrize("module", sorted(p.name for p in (SRC / "values").glob("*.py")))
def test_the_proof_does_not_import_what_it_proves(module):
    """values/ (what runs and compares models) imports neither engine/ nor passes/: what a lossy
    measurement needs from a run comes in as data (issue 36)."""
    tree = ast.parse((SRC / "values" / module).read_text())
    imported = {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 2
    }
    assert not imported & {"engine", "passes"}, imported


def test_no_source_file_over_600_lines():
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}


def test_optimize_result_indexes_like_it_unpacks(tmp_path):
    result = bnfold.optimize(build_recipe("Net_Conv_Add_Mul_000", tmp_path))
    data, report = result
    assert result[0] == data and result[1] is report and len(result) == 2


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, 100_001])
def test_library_refuses_the_check_counts_the_cli_refuses(bad):
    with pytest.raises(bnfold.errors.UsageError, match="check must be"):
        bnfold.optimize(DATA / "bn_conv_valid.tflite", check=bad)


def test_garbage_bytes_are_named_bytes_not_a_temporary_file():
    with pytest.raises(bnfold.errors.BnfoldError) as info:
        bnfold.optimize(b"garbage, not a model at all")
    assert str(info.value).startswith("<bytes>: ") and "bnfold-" not in str(info.value)


# ---- one rule for every input file: exit 2, one line naming the file ----------------------------


def _inputs(tmp_path):
    """Each kind of input with the command line that reads it; {} is where the bad path goes."""
    model = str(DATA / "bn_conv_valid.tflite")
    return {
        "model": ["inspect", "{}"],
        "h5": ["h5diff", "{}", "{}"],
        "cfg": ["optimize", "--config", "{}"],
        "recipe": ["recipe", "build", "{}", str(tmp_path / "o.tflite")],
        "recipe test": ["recipe", "test", "{}"],
        "check input": ["check", model, model, "--input", "{}"],
    }


def _bad_paths(tmp_path):
    paths = {"missing": tmp_path / "missing.x", "directory": tmp_path / "dir.x"}
    paths["directory"].mkdir()
    if hasattr(os, "mkfifo"):
        paths["fifo"] = tmp_path / "fifo.x"
        os.mkfifo(paths["fifo"])
    if os.geteuid() != 0:  # root reads anything
        paths["unreadable"] = tmp_path / "unreadable.x"
        paths["unreadable"].write_bytes(b"x" * 64)
        paths["unreadable"].chmod(0)
    return paths


@pytest.mark.parametrize("kind", ["model", "h5", "cfg", "recipe", "recipe test", "check input"])
def test_every_input_kind_has_one_exit_code(kind, tmp_path, capsys):
    for problem, path in _bad_paths(tmp_path).items():
        if kind == "recipe test" and problem == "directory":
            continue  # a directory of recipes is an argument recipe test takes
        argv = [a.replace("{}", str(path)) for a in _inputs(tmp_path)[kind]]
        code = run(argv)
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and str(path) in lines[0], (kind, problem, lines)
    assert not (tmp_path / "o.tflite").exists()


def test_open_input_does_not_block_on_a_fifo(tmp_path):
    from bnfold.io.paths import open_input

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with pytest.raises(bnfold.errors.UsageError, match="FIFO"):
        open_input(str(fifo), "an h5 file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# A one-model optimize pays for every class its modules define, at each start: a dataclass costs
# ~0.5 to 1 ms of CPU (Python compiles its generated methods), a NamedTuple or a written-out class
# far less.
STARTUP_PROBE = """
import sys
from bnfold.cli import run
code = run(["optimize", sys.argv[1], sys.argv[2], "--quiet"])
loaded = sorted(sys.modules)
import dataclasses, json
defined = sorted({name for name, module in list(sys.modules.items()) if name.startswith("bnfold")
                  for value in vars(module).values()
                  if dataclasses.is_dataclass(value) and isinstance(value, type) and value.__module__ == name})
print(json.dumps({"code": code, "dataclasses_in": defined, "modules": loaded}))
"""


def test_optimize_start_up_defines_no_dataclass_and_loads_no_runtime(tmp_path):
    """No dataclass is on optimize's path (not even the dataclasses module), and without
    --check it loads neither LiteRT's interpreter, h5py nor bnfold's value-checking modules; nor
    what only other options need: the batch machinery (--out-dir), json (--report), the cfg
    reader (-C), the near-name suggestions (a misspelt option), the passes not selected and the
    selected ones whose operator kinds the model lacks (a pass's module is imported when it runs)."""
    import json
    import subprocess
    import sys

    from bnfold.engine import registry

    probe = [sys.executable, "-c", STARTUP_PROBE, str(DATA / "bn_relu_conv.tflite"), str(tmp_path / "out.tflite")]
    seen = json.loads(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)
    assert seen["code"] == 0
    assert seen["dataclasses_in"] == [] and "dataclasses" not in seen["modules"], seen["dataclasses_in"]
    runtime = {"h5py", "ai_edge_litert.interpreter", "bnfold.values.litert", "bnfold.values.verify"}
    other_options = {
        "bnfold.batch",
        "bnfold.progress",
        "multiprocessing",
        "configparser",
        "difflib",
        "json",
    }  # (--report; the schema layouts are Python modules)
    # the model is CONV_2D, MUL and ADD: no pass needing a CONCATENATION, TRANSPOSE, RESHAPE, PAD,
    # RELU or another layer kind runs (registry.PassSpec.needs); the backward fold does
    kinds = {"CONV_2D", "MUL", "ADD"}
    idle = {f"bnfold.passes.{p.name}" for p in registry.PASSES if not p.default or p.needs.isdisjoint(kinds)}
    assert len(idle) >= 23 and "bnfold.passes.fuse_batchnorm_with_conv" in seen["modules"]  # 23 before O1 came
    assert not (runtime | other_options | idle) & set(seen["modules"])
