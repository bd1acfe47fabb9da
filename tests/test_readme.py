"""README's shell examples run as written, in order, in one shell, as a new user would run them
after the two setup commands: from a checkout, with `.venv/bin/activate` putting `bnfold` on PATH.
They must succeed and leave no file in the checkout. An example that is not meant to run is
fenced as ```text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

README = (ROOT / "README.md").read_text()


def shell_examples(text: str) -> list[str]:
    """Every ```sh block after "## First steps" (the setup block before it is what CI runs,
    .ci/run) and every `$ ` line of a ```console block, in document order."""
    text = text.split("## First steps\n", 1)[1]
    commands = []
    for kind, body in re.findall(r"^```(sh|console)\n(.*?)^```", text, re.M | re.S):
        if kind == "sh":
            commands.append(body)
        else:
            commands += [line[2:] + "\n" for line in body.splitlines() if line.startswith("$ ")]
    return commands


def _checkout(tmp_path: Path) -> Path:
    """What the examples see of a checkout after the setup commands: tests/data, recipes, and a
    .venv whose activate script puts a `bnfold` running this interpreter on PATH."""
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    for name in ("tests", "recipes"):
        (repo / name).symlink_to(ROOT / name)
    program = repo / ".venv" / "bin" / "bnfold"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} -m bnfold "$@"\n')
    program.chmod(0o755)
    (repo / ".venv" / "bin" / "activate").write_text(f'PATH="{program.parent}:$PATH"\ndeactivate() {{ :; }}\n')
    return repo


def _setup_commands() -> list[str]:
    block = README.split("## Set up\n", 1)[1].split("## First steps\n", 1)[0]
    return re.search(r"^```sh\n(.*?)^```", block, re.M | re.S).group(1).splitlines()


def test_readme_has_the_examples_a_newcomer_needs():
    setup = "\n".join(_setup_commands())
    assert "python3 -m venv .venv && .venv/bin/pip install '.[test]' && .venv/bin/bnfold optimize tests/data/" in setup
    assert setup.endswith("\n.venv/bin/python -m pytest") and "Python 3.11" in README.split("## First steps")[0]
    assert ". .venv/bin/activate" in shell_examples(README)[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/pip install --quiet '.[test]'" in ci and ci.rstrip().endswith(".venv/bin/python -m pytest")


def test_readme_shell_examples_run_as_written_and_leave_the_checkout_clean(tmp_path):
    repo = _checkout(tmp_path)
    before = sorted(p.name for p in repo.iterdir())
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    script = "set -euo pipefail\n" + "".join(shell_examples(README))
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert sorted(p.name for p in repo.iterdir()) == before
    [work] = scratch.iterdir()  # everything went to the one scratch directory `mktemp -d` made
    assert (work / "resnet_v2_mini.opt.tflite").exists() and (work / "model.opt.circle").exists()


def test_readme_first_command_optimizes_a_shipped_model_outside_the_checkout(tmp_path):
    """The part of setup command 1 after the install, as written, with its `.venv/bin/bnfold`."""
    repo = _checkout(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    job = _setup_commands()[0].split(" && ", 2)[2]
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + job], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [work] = scratch.iterdir()
    written = work / "resnet_v2_mini.opt.tflite"
    assert str(written) in done.stdout + done.stderr
    assert written.stat().st_size > 0 and written.read_bytes()[4:8] == b"TFL3"


def _synopsis() -> dict[str, str]:
    """README's synopsis, command (as "optimize", "recipe test") -> its lines joined."""
    block = README.split("## Commands\n", 1)[1].split("```\n", 2)[1]
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        if line.startswith("bnfold "):
            words = line.split()
            name = " ".join(words[1:3]) if words[1] == "recipe" else words[1]
            entries[name] = entries.get(name, "") + line
        elif name:
            entries[name] += line
    return entries


def test_readme_synopsis_names_every_option_of_every_command():
    import click

    from bnfold import api
    from bnfold.cli import main

    passes = {f"--{p.name}" for p in api.PASSES}
    synopsis = _synopsis()
    every = {name: main.get_command(None, name) for name in main.list_commands(None)}  # each loaded on demand
    commands = [(name, c) for name, c in every.items() if not isinstance(c, click.Group)]
    commands += [(f"recipe {name}", c) for name, c in every["recipe"].commands.items()]
    missing = []
    for name, command in commands:
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not set(param.opts) & passes:
                if not any(
                    re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", synopsis[name].replace("-O1", "-O"))
                    for o in param.opts
                ):
                    missing.append((name, param.opts[0]))
    assert missing == []


def test_readme_python_block_runs_as_written_from_the_checkout(tmp_path):
    """The "As a library" block, as written, from the checkout's root: no name it uses is left
    undefined, no path it opens is missing, and it writes only into its scratch directory."""
    [block] = re.findall(r"^```python\n(.*?)^```", README, re.M | re.S)
    repo = _checkout(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run([sys.executable, "-c", block], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in repo.iterdir()) == [".venv", "recipes", "tests"]
    [work] = scratch.iterdir()
    assert {"model.opt.circle", "opt.tflite", "r.json", "out.0.h5", "in.1.h5"} <= {p.name for p in work.iterdir()}


def test_no_model_lies_at_the_checkout_root_for_an_example_to_open_by_mistake():
    assert sorted(p.name for p in ROOT.glob("*.tflite")) + sorted(p.name for p in ROOT.glob("*.circle")) == []


def _pass_names(row: str) -> list[str]:
    """The passes a table row names: `fuse_batchnorm_with_conv`, `_dwconv` -> both in full."""
    names, full = [], None
    for name in re.findall(r"`(\w+)`", row.split("|")[1]):
        full = (full.rsplit("_", 1)[0] + name) if name.startswith("_") and full else name
        names.append(full)
    return names


def test_readme_pass_tables_are_the_registry_in_run_order():
    """The first table is the default set and the lossy pass, in the order `bnfold passes` prints
    (the registry's run order); the tables after it hold every other pass, each once."""
    from bnfold.engine import registry

    section = README.split("## Passes\n", 1)[1].split("\n### ", 1)[0]
    tables = [
        [n for row in table.splitlines()[2:] for n in _pass_names(row)]
        for table in re.findall(r"^\| pass \|.*?(?=\n\n)", section, re.M | re.S)
    ]
    first, others = tables[0], [name for table in tables[1:] for name in table]
    order = [spec.name for spec in registry.PASSES]
    assert first == [n for n in order if n in registry.default_passes() or not registry.BY_NAME[n].exact]
    assert sorted(others) == sorted(set(order) - set(first))


def test_readme_and_help_give_the_batch_exit_precedence_the_code_uses():
    from bnfold.cli import main
    from bnfold.errors import EXIT_PRECEDENCE

    said = re.search(r"in this precedence: (.*?)\. ", " ".join(README.split()))
    assert [int(code) for code in re.findall(r"(?:^|> )(\d)", said.group(1))] == [*EXIT_PRECEDENCE, 0]
    [out_dir] = [p for p in main.get_command(None, "optimize").params if p.name == "out_dir"]
    assert " > ".join(map(str, (*EXIT_PRECEDENCE, 0))) in out_dir.help
