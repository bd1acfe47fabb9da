"""The exit code is the command's verdict whatever happens to what it prints (exits.py: guarded_output).

Each command runs as the `bnfold` program four ways: bare, under `set -o pipefail` into `head -1` and
into `true` (a reader that closes the pipe before or after the first line), and into /dev/full. A
closed reader changes nothing but what is seen: the same exit code, the same error line on stderr,
the same files written. A stdout that cannot take a write is exit 5 with one line, unless the
command failed already (its own code and line stand)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA

REPO = Path(__file__).resolve().parents[1]
MODEL = str(DATA / "resnet_v2_mini.tflite")
SMALL = str(DATA / "bn_conv_valid.tflite")
RECIPE = str(REPO / "recipes" / "Net_Conv3DTranspose_BN_000.toml")
NO_SPACE = "bnfold: error: cannot write to stdout: No space left on device"

# name: (arguments, files it writes, its verdict). {prepared} is a directory the fixture fills:
# the optimized model (whose check at rtol=atol=0 fails: float rounding differs) and two h5 files
# of the same model's outputs at different seeds (which differ).
COMMANDS = {
    "optimize": ("optimize {m} o.tflite", ["o.tflite"], 0),
    "optimize --check": ("optimize {m} o.tflite --check 2 --rtol 0 --atol 0 --report r.json", ["r.json"], 1),
    "check": ("check {m} {prepared}/o.tflite --samples 3 --rtol 0 --atol 0", [], 1),
    "run": ("run {m} --output out.h5 --write-input in.h5", ["out.h5", "in.h5"], 0),
    "h5diff": ("h5diff {prepared}/a.h5 {prepared}/b.h5", [], 1),
    "recipe test": ("recipe test {recipe} --junit j.xml", ["j.xml"], 0),
    "inspect": ("inspect {m} --leftovers", [], 0),
    "passes": ("passes", [], 0),
    "batch": ("optimize --out-dir out {m} {small}", ["out/resnet_v2_mini.tflite", "out/bn_conv_valid.tflite"], 0),
}
WAYS = {"bare": "", "head -1": " | head -1", "true": " | true", "/dev/full": " > /dev/full"}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("prepared")
    for argv in (
        ["optimize", MODEL, "o.tflite"],
        ["run", MODEL, "--output", "a.h5", "--seed", "0"],
        ["run", MODEL, "--output", "b.h5", "--seed", "1"],
    ):
        subprocess.run([sys.executable, "-m", "bnfold", *argv], cwd=where, check=True, capture_output=True)
    return where


def _shell(command: str, way: str, prepared: Path, cwd: Path) -> subprocess.CompletedProcess:
    line = command.format(m=MODEL, small=SMALL, recipe=RECIPE, prepared=prepared)
    program = f"{shlex.quote(sys.executable)} -m bnfold {line}{WAYS[way]}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as a user's is
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {program}"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.skipif(not shutil.which("bash") or not os.path.exists("/dev/full"), reason="needs bash and /dev/full")
@pytest.mark.parametrize("name", list(COMMANDS))
def test_what_reads_stdout_never_changes_the_verdict(name, prepared, tmp_path):
    command, writes, verdict = COMMANDS[name]
    seen = {}
    for way in WAYS:
        cwd = tmp_path / way.replace(" ", "_").replace("/", "_")
        cwd.mkdir()
        seen[way] = done = _shell(command, way, prepared, cwd)
        assert [f for f in writes if not (cwd / f).is_file()] == [], (way, done.stderr)
        assert not (name == "optimize --check" and (cwd / "o.tflite").exists())  # a failed check writes no model
    assert seen["bare"].returncode == verdict, seen["bare"].stderr
    for way in ("head -1", "true"):
        assert (seen[way].returncode, seen[way].stderr) == (verdict, seen["bare"].stderr), way
    assert seen["head -1"].stdout == seen["bare"].stdout.splitlines(keepends=True)[0]
    full = seen["/dev/full"]
    if verdict == 0:
        assert full.returncode == 5 and full.stderr.startswith(NO_SPACE) and full.stderr.count("\n") == 1
        # the table's row 5: the printing failed, and the files the command wrote are complete
        if not writes:
            assert full.stderr == NO_SPACE + "\n"
        elif len(writes) == 1 and name == "optimize":
            assert full.stderr == f"{NO_SPACE}; {writes[0]} was written in full\n"
        else:
            assert f"; the files it wrote are complete (the last: {writes[-1]})" in full.stderr
    else:  # the command's own failure stands: its code and its one line
        assert (full.returncode, full.stderr) == (verdict, seen["bare"].stderr)


def test_a_closed_stderr_is_not_a_failure_and_a_full_one_is(prepared, tmp_path):
    """The error line's own stream: a reader gone leaves the code as it was; a full stderr with
    nothing else wrong is exit 5 (there is nowhere left to say so)."""
    closed = _shell("check {m} {prepared}/o.tflite --rtol 0 --atol 0 2>&1 >/dev/null", "true", prepared, tmp_path)
    assert closed.returncode == 1
    full = _shell("passes > /dev/null 2> /dev/full", "bare", prepared, tmp_path)
    assert full.returncode == 0  # nothing was written to stderr
    failed = _shell("inspect missing.tflite 2> /dev/full", "bare", prepared, tmp_path)
    assert failed.returncode == 2  # its own verdict, though the line was lost
