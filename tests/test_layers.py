"""The library is one layer (api.py, exposed as `bnfold.<name>`) and the CLI a shell over it."""

from __future__ import annotations

import ast
import os
import pydoc
import stat
from pathlib import Path

import click
import pytest

import bnfold
from bnfold import api
from bnfold.cli import run
from conftest import DATA, ROOT, build_recipe

SRC = ROOT / "src" / "bnfold"  # the checkout's sources (CI installs a copy; docs/ and scripts/ are beside src/)
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


# ---- the layers: what each part may import (docs/design.md, "Layers") ---------------------------

DESIGN = SRC.parents[1] / "docs" / "design.md"
SCRIPTS = SRC.parents[1] / "scripts"


def _layers() -> dict[str, set[str]]:
    """docs/design.md's layer table: part -> the parts it may import (parts named as the table
    names them, without `/` or `.py`)."""
    section = DESIGN.read_text().split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    allowed: dict[str, set[str]] = {}
    for row in section.splitlines():
        cells = row.split("|")
        if not row.startswith("| `") or len(cells) < 4:
            continue
        parts = [name.strip("/").removesuffix(".py") for name in cells[1].split("`")[1::2]]
        for part in parts:
            allowed[part] = set(cells[2].split("`")[1::2])
    return allowed


def _part(module: str) -> str:
    """The part of bnfold a module belongs to: its package under bnfold, or its own name."""
    names = module.split(".")
    return "__init__" if len(names) == 1 else names[1]


def _imports(path: Path, package: str) -> set[str]:
    """Every module of bnfold the file at `path` (of `package`) imports, wherever the import
    stands (top, function, TYPE_CHECKING): a name imported from a package is its module when
    there is one."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "bnfold"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == "bnfold":
                module = node.module or ""
            else:
                continue
            for alias in node.names:
                name = f"{module}.{alias.name}"
                as_file = SRC.parent / name.replace(".", "/")
                found.add(name if as_file.with_suffix(".py").exists() or as_file.is_dir() else module)
    return found


def _modules() -> dict[str, Path]:
    """bnfold's modules by dotted name (a package by its __init__.py)."""
    modules = {}
    for path in SRC.rglob("*.py"):
        names = path.relative_to(SRC.parent).with_suffix("").parts
        modules[".".join(names[:-1] if names[-1] == "__init__" else names)] = path
    return modules


def test_the_layer_table_names_every_part_once_and_goes_one_way():
    allowed = _layers()
    parts = {_part(m) for m in _modules()} - {"__main__"} | {"__main__"}
    assert set(allowed) == parts, set(allowed) ^ parts
    for part, below in allowed.items():
        assert below <= set(allowed), (part, below - set(allowed))
    order: list[str] = []  # each part after everything it may import: the table is a hierarchy
    while len(order) < len(allowed):
        ready = [p for p in allowed if p not in order and allowed[p] <= set(order)]
        assert ready, f"the table goes round: {sorted(set(allowed) - set(order))}"
        order += ready


def test_each_part_imports_only_what_its_layer_may():
    allowed = _layers()
    crossing = []
    for module, path in sorted(_modules().items()):
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        part = _part(module)
        for target in sorted(_imports(path, package)):
            if _part(target) != part and _part(target) not in allowed[part]:
                crossing.append(f"{path.relative_to(SRC)} imports {target}")
    assert crossing == []


def test_a_pass_reaches_neither_the_registry_nor_the_manager():
    """The registry and the manager know a pass by its PassSpec (its interface hook included)."""
    for path in sorted((SRC / "passes").glob("*.py")):
        imported = _imports(path, "bnfold.passes")
        assert not imported & {"bnfold.engine.registry", "bnfold.engine.manager"}, path.name


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph` (module -> the modules it imports), or []."""
    state: dict[str, int] = {}  # 1: on the path being followed, 2: done
    for start in sorted(graph):
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = state.get(start) or 1
        if state[start] == 2:
            continue
        while stack:
            node, successors = stack[-1]
            step = next(successors, None)
            if step is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(step) == 1:
                return path[path.index(step) :] + [step]
            elif step in graph and not state.get(step):
                state[step] = 1
                stack.append((step, iter(sorted(graph[step]))))
                path.append(step)
    return []


def test_no_import_cycle_type_only_ones_included():
    """Among bnfold's modules, and among the scripts (which import each other by file name)."""
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        # a module imports its package's __init__ too, but that is Python's doing, not a dependency
        graph[module] = {t for t in _imports(path, package) if t in modules and t != module}
    assert _cycle(graph) == []
    scripts = {p.stem: p for p in SCRIPTS.glob("*.py")}
    graph = {}
    for name, path in scripts.items():
        tree = ast.parse(path.read_text())
        graph[name] = {
            n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module in scripts
        } | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if a.name in scripts}
    assert _cycle(graph) == []


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


# What `bnfold optimize IN OUT --quiet` loads of bnfold, whatever the model: the command line and the
# library's one-model path, reading, the manager and the report, copying the output. Each module
# costs every start its import; one that joins this path should be one every run needs (else:
# import it where it is used). The list is exact: a module that leaves it must leave the list too.
OPTIMIZE_PATH = {
    *("bnfold", "bnfold.version", "bnfold.errors", "bnfold.exits", "bnfold.check_names"),
    *("bnfold.cli", "bnfold.cli.optimize", "bnfold.cli.flags", "bnfold.cli.options"),
    *("bnfold.api", "bnfold.arguments", "bnfold.selection", "bnfold.results"),
    *("bnfold.ir", "bnfold.ir.graph", "bnfold.ir.const", "bnfold.ir.ops", "bnfold.ir.model"),
    *("bnfold.ir.changes", "bnfold.ir.invariants"),
    *("bnfold.io", "bnfold.io.reader", "bnfold.io.validate", "bnfold.io.tables", "bnfold.io.formats"),
    *("bnfold.io.schema_layout_tflite", "bnfold.io.paths", "bnfold.io.atomic", "bnfold.io.gcpause"),
    "bnfold.io.copier",
    *("bnfold.engine", "bnfold.engine.registry", "bnfold.engine.pass_specs", "bnfold.engine.manager"),
    "bnfold.engine.report",
    # the target, the dead-code sweep, and the shared-buffer rules the layout folds use
    *("bnfold.engine.targets", "bnfold.engine.deadcode", "bnfold.engine.reshapes"),
    "bnfold.ir.miscomputed",  # asked of every graph before the passes (targets.Target.left_as_is)
    *("bnfold.engine.leftovers", "bnfold.engine.candidates"),  # the report's skips
    "bnfold.passes",
}
# what the default folds share (engine/), loaded when one of them runs
FOLDING = {"bnfold.engine.affine", "bnfold.engine.backward", "bnfold.engine.forward", "bnfold.engine.layout"}
# only a model a pass changed: the shape rules (the gate), the runtime table (a pass about to make
# an op asks it), LiteRT's plan of what changed (engine/manager.py: check_in_place), serializing
# the new file (a model nothing changed is a copy of its input)
CHANGED = {
    *("bnfold.ir.shapes", "bnfold.ir.runtimes", "bnfold.engine.planner"),
    *("bnfold.io.writer", "bnfold.io.transcode", "bnfold.io.builder"),
}

IMPORTS_PROBE = """
import sys
import numpy
before = set(sys.modules)
from bnfold.cli import run
code = run(["optimize", sys.argv[1], sys.argv[2], "--quiet"])
print(code, " ".join(sorted(name for name in sys.modules if name.startswith("bnfold"))))
"""


def _optimize_imports(model: Path, out: Path) -> set[str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", IMPORTS_PROBE, str(model), str(out)], capture_output=True, text=True)
    code, *modules = done.stdout.split()
    assert code == "0", done.stderr[-2000:]
    return set(modules)


def test_optimize_imports_only_what_it_uses(tmp_path):
    """`bnfold optimize --quiet` in a fresh interpreter, on a model the default passes fold and
    then on their output, which nothing changes: bnfold's modules it loads are exactly the path
    every run takes, the passes that ran (those whose kinds the model held before or after) and
    the engine they use; the unchanged run neither the shape rules, the runtime table, LiteRT's
    planner nor the writer (a copy of the input is the output). Nothing of values/, reference/, recipe/,
    explorer/, the other commands, batch runs, ONE's tables or the printed summaries (text.py:
    --quiet prints nothing). A count and a list, not a time: it cannot flake."""
    from bnfold.engine import registry
    from bnfold.io.reader import read_model

    folded = tmp_path / "folded.tflite"
    first = _optimize_imports(DATA / "resnet_v2_mini.tflite", folded)
    again = _optimize_imports(folded, tmp_path / "again.tflite")
    assert folded.read_bytes() == (tmp_path / "again.tflite").read_bytes()  # nothing changed the second time

    def ran(path: Path) -> set[str]:
        kinds = {op.kind for graph in read_model(str(path)).graphs for op in graph.ops}
        return {f"bnfold.passes.{p.name}" for p in registry.PASSES if p.default and not p.needs.isdisjoint(kinds)}

    passes = ran(DATA / "resnet_v2_mini.tflite") | ran(folded)
    assert first - passes == OPTIMIZE_PATH | FOLDING | CHANGED, "optimize loads other modules than it uses"
    assert again - ran(folded) == OPTIMIZE_PATH | FOLDING, "an unchanged optimize loads other modules than it uses"
    assert first & passes == passes and again & ran(folded) == ran(folded)  # each pass that ran, as its module
    # unchanged and folding: 61 and 63 before issue 48, 56 and 60 after its first step (a284a56), 52 and 58
    # after its second; one more since the target asks every graph what its runtime computes otherwise;
    # the planner only for a changed graph since the input's plan is taken only for an output left
    # with a clobber (s10-startup)
    assert (len(again), len(first)) == (52, 59), (len(again), len(first))


def test_the_group_that_loads_one_command_still_lists_and_suggests_them_all(capsys):
    """Commands are loaded when looked up (cli/__init__.py: Commands), yet help lists every one
    as click lists a group's, and a misspelt command gets click's suggestion."""
    assert run(["--help"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.split("Commands:")[1].strip().splitlines()]
    assert listed == sorted(["optimize", "convert", "inspect", "passes", "check", "run", "h5diff", "recipe"])
    assert run(["optimise", "a.tflite", "b.tflite"]) == 2
    assert "Did you mean 'optimize'?" in capsys.readouterr().err or not hasattr(click.exceptions, "NoSuchCommand")
