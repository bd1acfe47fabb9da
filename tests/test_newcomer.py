"""What a new user meets (issue 25): help with no arguments, a quiet summary, the run command's
first sample without delay, nothing on stderr from LiteRT, late Ctrl-C, empty h5 comparisons."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np

from bnfold.cli import run
from conftest import DATA, RECIPES, build_recipe

FIXTURE = str(DATA / "bn_conv_valid.tflite")


def _bnfold(*argv, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bnfold", *map(str, argv)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_no_command_shows_the_help(capsys):
    for argv, listed in (([], "optimize"), (["recipe"], "build")):
        assert run(argv) == 0
        captured = capsys.readouterr()
        assert captured.err == "" and captured.out.startswith("Usage: bnfold")
        assert len(captured.out.splitlines()) > 8 and re.search(rf"^  {listed}\b", captured.out, re.M)
    assert run(["frobnicate"]) == 2  # a command that does not exist is still a usage error
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_summary_names_only_passes_that_found_something(tmp_path, capsys):
    src = build_recipe("Net_Conv_Add_Mul_000", tmp_path)
    assert run(["optimize", str(src), str(tmp_path / "o.tflite")]) == 0
    out = capsys.readouterr().out
    assert "fuse_batchnorm_with_conv: 1 folded, 0 skipped" in out
    assert ": 0 folded, 0 skipped" not in out


def test_passes_columns_line_up(capsys):
    assert run(["passes"]) == 0
    listing = capsys.readouterr().out
    lines = listing.split("\n\n", 1)[0].splitlines()  # the passes; then ONE's options bnfold lacks
    summary_at = {len(re.match(r"\S+\s+\[[^]]*\]\s+", line).group(0)) for line in lines}
    assert len(lines) > 5 and len(summary_at) == 1
    missing = listing.split("\n\n", 1)[1].splitlines()[1:]
    assert {line.index("[") for line in missing} == {lines[0].index("[")}  # the tags in one column too


def test_ctrl_c_while_the_program_loads_is_one_line_and_exit_130():
    """SIGINT before the command line's modules are loaded (here: when click is imported)."""
    interrupt_on_import = textwrap.dedent("""
        import runpy, sys
        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == "click":
                    raise KeyboardInterrupt
        sys.meta_path.insert(0, Interrupt())
        sys.argv = ["bnfold", "passes"]
        runpy.run_module("bnfold", run_name="__main__")
    """)
    done = subprocess.run([sys.executable, "-c", interrupt_on_import], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr, done.stdout) == (130, "bnfold: error: interrupted\n", "")


def test_optimize_help_names_the_config_file_and_every_side_file_force_lets_replace(capsys):
    assert run(["optimize", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "-C, --config ONE.cfg" in text
    assert "--force Let --report/--node-data/--node-data-input replace" in text
    for argv in (["check"], ["run"], ["recipe", "test"]):  # README's synopsis names: --samples N --seed S
        assert run([*argv, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "--samples N " in text and "--seed S " in text and "INTEGER RANGE" not in text


def test_run_names_every_file_it_wrote(tmp_path, capsys):
    out, given = tmp_path / "expected.h5", tmp_path / "in.h5"
    assert run(["run", FIXTURE, "--write-input", str(given), "--output", str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"wrote {out} and {given} (") and out.exists() and given.exists()
    out.unlink(), given.unlink()  # a series beside them would be ambiguous: refused (tests/test_newcomer_third.py)
    assert run(["run", FIXTURE, "--samples", "3", "--write-input", str(given), "--output", str(out)]) == 0
    assert f"and {tmp_path / 'in.0.h5'} ... {tmp_path / 'in.2.h5'}" in capsys.readouterr().out


def test_run_with_the_most_samples_starts_at_once(tmp_path, monkeypatch):
    """The clobber check of 2 x 100,000 sample files was quadratic (18.9 s of 20.6 s at 1,000
    samples): it now lists the directory once and compares names as sets."""
    from bnfold import api
    from bnfold.values import samples

    class FirstSample(Exception):
        pass

    def sink(*args):
        def first(index, inputs, outputs):
            raise FirstSample()

        return first

    stats = []
    real_stat = os.stat
    monkeypatch.setattr(samples, "sample_sink", sink)
    monkeypatch.setattr(os, "stat", lambda *a, **k: stats.append(a[0]) or real_stat(*a, **k))
    (tmp_path / "out.7.h5").write_bytes(b"")  # one of the series exists already: examined, not refused
    started = time.process_time()
    try:
        api.run(FIXTURE, str(tmp_path / "out.h5"), samples=api.MAX_SAMPLES, write_input=str(tmp_path / "in.h5"))
    except FirstSample:
        pass
    assert time.process_time() - started < 1.0
    assert len(stats) < 50  # the existing files, not one per sample path


def test_litert_says_nothing_on_stderr_when_a_resolver_is_tried(tmp_path):
    """The default resolver's XNNPACK delegate announced itself on stderr when the builtin one
    could not load a model (CONV_2Ds without a bias LiteRT refuses; the reference interpreter runs them)."""
    done = _bnfold("recipe", "test", RECIPES / "Neg_Concat_BN_Axis_000.toml", cwd=tmp_path)
    assert done.returncode == 0 and "PASS" in done.stdout
    assert done.stderr == ""


def test_h5_files_holding_no_values_are_not_a_passing_comparison(tmp_path, capsys):
    for name in ("a.h5", "b.h5"):
        with h5py.File(tmp_path / name, "w") as f:
            f.create_group("value/0")  # a record where /value/0 should be a dataset: no values
    assert run(["h5diff", str(tmp_path / "a.h5"), str(tmp_path / "b.h5")]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "a.h5: holds no values to compare" in line


def test_h5diff_still_compares_files_with_values(tmp_path, capsys):
    for name in ("a.h5", "b.h5"):
        with h5py.File(tmp_path / name, "w") as f:
            f.create_dataset("value/0", data=np.ones(3, np.float32))
    assert run(["h5diff", str(tmp_path / "a.h5"), str(tmp_path / "b.h5")]) == 0


def _script(body: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )


def test_ctrl_c_after_the_command_finished_does_not_kill_the_process(tmp_path):
    done = _script(
        f"""
        import os, signal, sys
        from bnfold import cli, exits
        real = exits.run
        def run(*args, **kwargs):
            code = real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the process is about to exit
            return code
        exits.run = run
        sys.argv = ["bnfold", "convert", {FIXTURE!r}, "o.circle"]
        cli.entry()
    """,
        tmp_path,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("wrote o.circle")


def test_ctrl_c_just_after_the_write_says_the_output_is_complete(tmp_path):
    done = _script(
        f"""
        import os, signal, sys
        from bnfold import cli
        from bnfold.io import atomic
        real = os.replace
        def replace(a, b):
            real(a, b)
            os.kill(os.getpid(), signal.SIGINT)
        atomic.os.replace = replace
        sys.exit(cli.run(["convert", {FIXTURE!r}, "o.circle"]))
    """,
        tmp_path,
    )
    assert done.returncode == 130
    assert done.stderr.strip().splitlines() == ["bnfold: error: interrupted after o.circle was written in full"]
    assert (tmp_path / "o.circle").read_bytes()[4:8] == b"CIR0"
    assert [p.name for p in tmp_path.iterdir()] == ["o.circle"]


def test_sigterm_default_is_restored_for_library_callers():
    """exits.run(process=True) ignores late signals only for the program; cli.run leaves handlers alone."""
    before = signal.getsignal(signal.SIGINT)
    assert run(["passes"]) == 0
    assert signal.getsignal(signal.SIGINT) is before
