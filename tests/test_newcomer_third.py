"""The newcomer's third list (issue 47): twelve things a new user met, each as the user meets it,
on the shipped models."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest

import bnfold
from bnfold.cli import run
from conftest import DATA, RECIPES, ROOT, TEST_RECIPES, build_recipe

MODEL = str(DATA / "resnet_v2_mini.tflite")
SMALL = str(DATA / "bn_conv_valid.tflite")


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bnfold: error: "), err
    return err


def _write_h5(path, names, values):
    with h5py.File(path, "w") as f:
        group, data = f.create_group("name"), f.create_group("value")
        for i, (name, value) in enumerate(zip(names, values)):
            group.attrs[str(i)] = np.bytes_(name)
            data.create_dataset(str(i), data=value)


# 1. a numbered series beside an older single file (or a longer series) is refused at the write;
#    check says which files it read; unequal counts name both sides


def test_a_series_is_not_written_where_the_next_step_would_read_something_else(tmp_path, capsys):
    given, out = tmp_path / "in.h5", tmp_path / "exp.h5"
    assert run(["run", SMALL, "--write-input", str(given), "--output", str(out), "-q"]) == 0
    assert run(["run", SMALL, "--samples", "3", "--write-input", str(given), "--output", str(out)]) == 2
    err = _error(capsys)
    assert "exists beside the series" in err and "exp.0.h5 ... exp.2.h5" in err
    assert not (tmp_path / "exp.0.h5").exists()  # refused before any work
    out.unlink(), given.unlink()
    assert run(["run", SMALL, "--samples", "3", "--write-input", str(given), "--output", str(out), "-q"]) == 0
    # a shorter series over it would leave exp.2.h5 for `--expected exp.h5` to read on into
    assert run(["run", SMALL, "--samples", "2", "--write-input", str(given), "--output", str(out)]) == 2
    assert "exp.2.h5: is left from a longer series" in _error(capsys)
    check = tmp_path / "c.h5"
    check.write_bytes(b"")
    assert run(["check", SMALL, SMALL, "--samples", "2", "--write-input", str(check)]) == 2
    assert "c.h5: exists beside the series --write-input writes c.0.h5 ... c.1.h5" in _error(capsys)


def test_check_says_which_files_it_read_and_refuses_unequal_counts_naming_them(tmp_path, capsys):
    given, out, other = (str(tmp_path / n) for n in ("in.h5", "exp.h5", "two.h5"))
    assert run(["run", SMALL, "--samples", "3", "--write-input", given, "--output", out, "-q"]) == 0
    assert run(["run", SMALL, "--samples", "2", "--output", other, "-q"]) == 0
    assert run(["check", SMALL, "--input", given, "--expected", out]) == 0
    footer = capsys.readouterr().out.splitlines()[-1]
    assert f"3 sample(s) read from {tmp_path / 'in.0.h5'} ... {tmp_path / 'in.2.h5'} (--input) and " in footer
    assert f"{tmp_path / 'exp.0.h5'} ... {tmp_path / 'exp.2.h5'} (--expected)" in footer
    assert run(["check", SMALL, "--input", given, "--expected", other]) == 2
    err = _error(capsys)
    assert "--input files hold 3 sample(s) (" in err and "in.0.h5 ... " in err
    assert "the --expected files 2 (" in err and "two.0.h5 ... " in err
    assert run(["h5diff", str(tmp_path / "in.0.h5"), str(tmp_path / "in.0.h5")]) == 0
    capsys.readouterr()


# 2. a check that proved nothing: a warning even under -q, and exit 4 under --require-variation


def test_a_check_that_proved_nothing_can_fail_and_is_never_silent(tmp_path, capsys):
    weak = str(build_recipe("Weak_Outputs_000", tmp_path, directory=TEST_RECIPES))
    assert run(["check", weak, weak, "--samples", "3", "-q"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "bnfold: warning: weak check: 'zero:0' proves nothing (does not change across the 3 samples)\n"
    )
    assert run(["check", weak, weak, "--samples", "3", "-q", "--require-variation"]) == 4
    assert _error(capsys).endswith(
        "--require-variation: 'zero:0' proves nothing (does not change across the 3 samples)\n"
    )
    assert run(["check", weak, weak, "--require-variation", "-q"]) == 4  # one sample cannot tell
    assert "2 or more samples" in _error(capsys)
    assert run(["check", SMALL, SMALL, "--samples", "2", "--require-variation", "-q"]) == 0
    assert capsys.readouterr() == ("", "")


# 3. a stdout that cannot take the summary: exit 5, and the line says the files are complete


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_stdout_after_the_files_were_written_says_they_are_complete(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "bnfold", "optimize", SMALL, "o.tflite"],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 5 and (tmp_path / "o.tflite").is_file()
    assert (
        done.stderr == "bnfold: error: cannot write to stdout: No space left on device; o.tflite was written in full\n"
    )
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| 5 |"))
    assert "the files the command wrote are complete" in row and "nothing of that run's files was written" in row


# 4. optimize DIR OUT


def test_a_directory_given_as_in_says_it_takes_out_dir(tmp_path, capsys):
    for out in ("out", "o.tflite"):
        assert run(["optimize", str(DATA / "zoo"), str(tmp_path / out)]) == 2
        assert "is a directory: to optimize the models in it, use --out-dir" in _error(capsys)
    assert not list(tmp_path.iterdir())


# 5. -q prints nothing on success, warnings about the command line included


def test_quiet_optimize_prints_nothing_for_an_ignored_one_option(tmp_path, capsys):
    out = tmp_path / "o.tflite"
    assert run(["optimize", SMALL, str(out), "--verbose", "-q", "--report", str(tmp_path / "r.json")]) == 0
    assert capsys.readouterr() == ("", "")
    assert bnfold.api.results.read_report(str(tmp_path / "r.json"))["ignored_options"] == ["verbose"]
    assert run(["optimize", SMALL, str(out), "--verbose"]) == 0
    assert "verbose is a ONE option bnfold does not implement; ignored" in capsys.readouterr().err
    assert run(["optimize", SMALL, str(out), "--verbose", "-q", "--strict"]) == 2
    _error(capsys)


# 6. a failed optimize --check shows what the passes did, then the check


def test_a_failed_optimize_check_prints_the_operator_table_and_each_pass(tmp_path, capsys):
    out = tmp_path / "o.tflite"
    assert run(["optimize", MODEL, str(out), "--check", "2", "--rtol", "0", "--atol", "0"]) == 1
    printed, err = capsys.readouterr()
    lines = printed.splitlines()
    assert lines[0].split() == ["operator", "before", "after"] and "total                 46       37" in lines
    assert "fuse_preactivation_batchnorm: 6 folded, 0 skipped" in lines
    assert lines.index("fuse_preactivation_batchnorm: 6 folded, 0 skipped") < lines.index(
        next(line for line in lines if line.startswith("output "))
    )
    assert "outside rtol=0 atol=0" in err and not out.exists()


# 7. inspect() without leftovers does not say "0 candidates"


def test_inspect_without_leftovers_lists_none_rather_than_zero():
    found = bnfold.inspect(MODEL)
    assert found.candidates is None and found.transposes is None
    assert repr(found) == "Inspection(tflite, 46 operators; leftovers not listed: inspect(..., leftovers=True))"
    listed = bnfold.inspect(MODEL, leftovers=True)
    assert repr(listed) == "Inspection(tflite, 46 operators, 12 candidates, 0 transposes)"


# 8. --timeout 0 and -1


def test_timeout_zero_and_negative_say_the_same(capsys):
    said = set()
    for value in ("0", "-1", "nan", "x"):
        assert run(["check", SMALL, SMALL, "--timeout", value]) == 2
        said.add(_error(capsys).replace(repr(value), "V"))
    assert said == {"bnfold: error: Invalid value for '--timeout': V is not a number of seconds greater than 0\n"}


# 9. h5diff: mismatches are not "outside" a tolerance; -d has a footer; tensors, one spelling


def test_h5diff_tells_mismatches_from_differences_and_states_its_criterion(tmp_path, capsys):
    a, b, c = (str(tmp_path / n) for n in ("a.h5", "b.h5", "c.h5"))
    _write_h5(a, ["x:0", "y:0"], [np.ones(3, np.float32), np.ones((2, 2), np.float32)])
    _write_h5(b, ["x:0", "z:0"], [np.ones(3, np.float32) * 1.5, np.ones((2, 2), np.float32)])
    _write_h5(c, ["x:0", "y:0"], [np.ones(3, np.float32) * 1.5, np.ones((2, 3), np.float32)])
    assert run(["h5diff", a, b]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("tensor ")
    assert out.splitlines()[-1] == f"{a} and {b}: 1 sample(s), paired by name, |a - b| <= atol + rtol * max|a|, " + (
        "rtol=1e-05 atol=1e-05"
    )
    assert err == (
        "bnfold: error: 1 of 3 tensors outside rtol=1e-05 atol=1e-05: x:0 (scaled err 5.000e-01, max abs err "
        f"5.000e-01); 2 not comparable: y:0 (only in {a}), z:0 (only in {b})\n"
    )
    assert run(["h5diff", a, c, "-d", "1"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].endswith("paired by name, |a - b| <= 1 for every value, integers too (-d)")
    assert err == "bnfold: error: 1 of 2 tensors not comparable: y:0 (shape [2, 2] vs [2, 3])\n"
    assert run(["h5diff", a, b, "-d", "0.1", "--by-position"]) == 1
    assert "1 of 2 tensors outside -d 0.1: x:0" in capsys.readouterr().err


def test_check_and_h5diff_spell_a_tensor_the_same(tmp_path, capsys):
    model = str(build_recipe("Net_Conv_Add_Mul_000", tmp_path))
    given, want, again = (str(tmp_path / n) for n in ("in.h5", "exp.h5", "again.h5"))
    assert run(["run", model, "--write-input", given, "--output", want, "-q"]) == 0
    assert run(["run", model, "--input", given, "--output", again, "-q"]) == 0
    spelt = []
    for argv in (
        ["check", model, model],
        ["check", model, "--input", given, "--expected", want],
        ["h5diff", want, again],
    ):
        assert run(argv) == 0
        spelt.append(capsys.readouterr().out.splitlines()[1].split()[0])
    assert spelt == ["ofm:0"] * 3


# 10. recipe test: ERROR says the recipe once; UNVERIFIED keeps LiteRT's messages apart


def test_recipe_test_lines_say_each_thing_once(tmp_path, capsys):
    broken = tmp_path / "Typo_000.toml"
    broken.write_text((RECIPES / "Net_Conv_Add_Mul_000.toml").read_text().replace("[[operation]]", "[[operations]]"))
    assert run(["recipe", "test", str(broken)]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("ERROR Typo_000: unknown key 'operations'") and line.count("Typo_000") == 1
    assert run(["recipe", "test", str(TEST_RECIPES / "Shipped_000.toml")]) == 4
    line = capsys.readouterr().out.splitlines()[0]
    assert line.count("LiteRT cannot load the model") == 1 and "filter width" not in line
    assert not re.search(r"#\d+[A-Z]", line)  # no message glued to the next


# 11. check and run say what they are doing on a terminal


def _on_a_terminal(*argv, cwd) -> tuple[int, str]:
    """Runs bnfold with stderr a terminal; returns its exit code and what that terminal got."""
    leader, follower = pty.openpty()
    done = subprocess.Popen(
        [sys.executable, "-m", "bnfold", *argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=follower, stdin=None
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal's other end closed: the process is gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return done.wait(timeout=300), seen.decode()


def test_check_and_run_show_their_steps_on_a_terminal_only(tmp_path):
    code, seen = _on_a_terminal("check", MODEL, MODEL, "--samples", "2", cwd=tmp_path)
    assert code == 0 and f"bnfold: reading {MODEL} (0:0" in seen and "bnfold: sample 2 of 2 (" in seen
    assert seen.endswith("\r\x1b[K")  # erased at the end
    code, seen = _on_a_terminal("run", MODEL, "--samples", "2", "--output", "o.h5", cwd=tmp_path)
    assert code == 0 and "bnfold: sample 1 of 2 (" in seen
    code, seen = _on_a_terminal("run", MODEL, "--output", "q.h5", "-q", cwd=tmp_path)
    assert (code, seen) == (0, "")
    done = subprocess.run(
        [sys.executable, "-m", "bnfold", "check", MODEL, MODEL], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stderr == ""  # not a terminal: nothing


# 12. convert -q; --seed S; the weak line's words; the target's; the README's O1 example


def test_convert_and_recipe_build_take_quiet(tmp_path, capsys):
    assert run(["convert", SMALL, str(tmp_path / "m.circle"), "-q"]) == 0
    assert run(["recipe", "build", str(RECIPES / "Net_Conv_Add_Mul_000.toml"), str(tmp_path / "r.tflite"), "-q"]) == 0
    assert capsys.readouterr() == ("", "") and (tmp_path / "m.circle").is_file()


def test_optimize_help_says_seed_s(capsys):
    assert run(["optimize", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--seed S " in text and "INTEGER RANGE" not in text


def test_optimize_check_weak_line_uses_checks_words(tmp_path, capsys):
    weak = str(build_recipe("Weak_Outputs_000", tmp_path, directory=TEST_RECIPES))
    assert run(["optimize", weak, str(tmp_path / "o.tflite"), "--check", "3"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("check: weak")]
    assert line.startswith("check: weak: 'probability:0' barely varies (as few as 3 distinct values")
    assert "'zero:0' proves nothing (does not change across the 3 samples)" in line
    assert "weak for" not in line and " none:" not in line


def test_a_target_refusal_names_the_target_once(tmp_path, capsys):
    from bnfold.engine.targets import Target

    assert Target("onert").refusal("HARD_SWISH") == "onert does not run HARD_SWISH"
    assert (
        Target("any", frozenset({"CONV_2D"}))
        .refusal("CONV_2D", "TANH")
        .endswith("(the target any takes only what every runtime runs)")
    )


def test_readme_library_example_of_o1_changes_the_model():
    readme = (ROOT / "README.md").read_text()
    [block] = re.findall(r"^```python\n(.*?)^```", readme, re.M | re.S)
    [line] = [line for line in block.splitlines() if "O1=True" in line]
    model = re.search(r'optimize\("([^"]+)"', line).group(1)
    result = bnfold.optimize(str(ROOT / model), O1=True)
    assert result.model.changed and result.report["folds"]
