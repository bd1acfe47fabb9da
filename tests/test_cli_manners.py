"""The command line's small manners (issue 36's friction list): -q on every command that prints,
one prefix for warnings and notes, singular nouns, no `inf` on a passing row."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from bnfold.cli import run
from bnfold.values.h5io import write_h5
from conftest import DATA, build_recipe

MODEL = str(DATA / "resnet_v2_mini.tflite")
ONE_RELU = """
input = ["x"]
output = ["y"]

[[operand]]
name = "x"
dtype = "FLOAT32"
shape = [1, 4]

[[operand]]
name = "y"
dtype = "FLOAT32"
shape = [1, 4]

[[operation]]
type = "RELU"
inputs = ["x"]
outputs = ["y"]
"""


@pytest.fixture
def optimized(tmp_path):
    assert run(["optimize", MODEL, str(tmp_path / "o.tflite"), "-q"]) == 0
    return str(tmp_path / "o.tflite")


def test_quiet_prints_nothing_on_success_and_everything_on_failure(optimized, tmp_path, capsys):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    passing = {
        "check": ["check", MODEL, optimized],
        "run": ["run", MODEL, "--output", a],
        "h5diff": ["h5diff", a, a],
        "recipe test": ["recipe", "test", str(DATA.parent.parent / "recipes" / "Net_Conv3DTranspose_BN_000.toml")],
    }
    for name, argv in passing.items():
        capsys.readouterr()
        assert run([*argv, "-q"]) == 0, name
        assert capsys.readouterr() == ("", ""), name
    assert run(["run", MODEL, "--output", b, "--seed", "1", "-q"]) == 0
    for argv in (["check", MODEL, optimized, "--rtol", "0", "--atol", "0"], ["h5diff", a, b]):
        assert run([*argv, "-q"]) == 1
        out, err = capsys.readouterr()
        assert "FAIL" in out and err.startswith("bnfold: error: ")  # the table and the verdict still print


def test_one_operator_is_singular(tmp_path, capsys):
    recipe = tmp_path / "relu.toml"
    recipe.write_text(ONE_RELU)
    assert run(["recipe", "build", str(recipe), str(tmp_path / "relu.tflite")]) == 0
    assert capsys.readouterr().out.strip().endswith("(1 operator)")


def test_a_passing_row_shows_no_infinite_relative_error(tmp_path, capsys):
    """A zero in the reference against 1e-7 is an infinite relative error, within the tolerance
    the verdict uses: the row passes, and says `-` rather than `inf`; a failing row keeps `inf`."""
    zero, near, far = (str(tmp_path / f"{n}.h5") for n in ("zero", "near", "far"))
    write_h5(zero, [("y", np.array([0.0, 1.0], np.float32))])
    write_h5(near, [("y", np.array([1e-7, 1.0], np.float32))])
    write_h5(far, [("y", np.array([0.5, 1.0], np.float32))])
    assert run(["h5diff", zero, near]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[2] == "-" and row[-1] == "ok" and "inf" not in row
    assert run(["h5diff", zero, far]) == 1
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[2] == "inf" and row[-1] == "FAIL"


def test_every_warning_and_note_has_one_prefix(tmp_path, capsys):
    cfg = tmp_path / "one.cfg"
    cfg.write_text(f"[onecc]\ninclude=O1\n[one-optimize]\ninput_path={MODEL}\noutput_path={tmp_path / 'o.tflite'}\n")
    assert run(["optimize", "-C", str(cfg), "--verbose"]) == 0
    out, err = capsys.readouterr()
    said = [line for line in (out + err).splitlines() if "warning:" in line or "note:" in line]
    assert said and all(line.startswith(("bnfold: warning: ", "bnfold: note: ")) for line in said), said
    negative = str(build_recipe("Net_Preactivation_BN_001", tmp_path))  # negative scales: the lossy pass acts
    lossy_passes = "make_batchnorm_gamma_positive,fuse_preactivation_batchnorm"
    assert run(["optimize", negative, str(tmp_path / "g.tflite"), "--passes", lossy_passes]) == 0
    lossy = [line for line in capsys.readouterr().out.splitlines() if "LOSSY" in line]
    assert lossy and all(line.startswith("bnfold: warning: ") for line in lossy)


def test_the_numbered_series_run_wrote_is_the_next_steps_input(tmp_path, capsys):
    """`run --samples 2 --write-input in.h5` writes in.0.h5 and in.1.h5; `--input in.h5` then
    reads them, in order, and `--expected out.h5` the outputs beside them."""
    model, inputs, outputs = str(DATA / "bn_conv_valid.tflite"), str(tmp_path / "in.h5"), str(tmp_path / "out.h5")
    assert run(["run", model, "--samples", "2", "--write-input", inputs, "--output", outputs, "-q"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.0.h5", "in.1.h5", "out.0.h5", "out.1.h5"]
    assert run(["check", model, "--input", inputs, "--expected", outputs]) == 0
    assert "2 sample(s)" in capsys.readouterr().out
    assert run(["run", model, "--input", inputs, "--output", str(tmp_path / "again.h5"), "-q"]) == 0
    assert (tmp_path / "again.1.h5").is_file() and not (tmp_path / "again.2.h5").exists()
    assert run(["check", model, "--input", str(tmp_path / "nothing.h5"), "--expected", outputs]) == 2
    assert "nothing.h5: no such file" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--samples", "5"], ["--seed", "3"], ["--samples", "1"]])
@pytest.mark.parametrize("command", ["check", "run"])
def test_sampling_options_with_input_files_are_refused_not_ignored(command, option, tmp_path, capsys):
    model, inputs = str(DATA / "bn_conv_valid.tflite"), str(tmp_path / "in.h5")
    assert run(["run", model, "--write-input", inputs, "--output", str(tmp_path / "o.h5"), "-q"]) == 0
    argv = ["check", model, model] if command == "check" else ["run", model, "--output", str(tmp_path / "p.h5")]
    assert run([*argv, "--input", inputs, *option]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and f"{option[0]} is for random inputs" in err[0]
    assert not (tmp_path / "p.h5").exists()


@pytest.mark.parametrize("directory", ["/sys", "/proc"])
def test_a_directory_that_takes_no_file_is_a_usage_error(directory, capsys):
    """Even for root, whom the permission bits do not stop: the create is refused, exit 2 as the
    README's table says for an output that may not be written (not 5, a failed write)."""
    if not os.path.isdir(directory):
        pytest.skip(f"no {directory} here")
    assert run(["optimize", str(DATA / "bn_conv_valid.tflite"), f"{directory}/o.tflite"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"bnfold: error: {directory}/o.tflite: ")


def test_no_pass_drops_one_default_pass_and_only_it(tmp_path):
    """`--no-PASS` on the bare command line: the default set without PASS (here resnet_v2_mini's
    pre-activation batch norms stay); with passes named, it switches that one off among them."""
    report = tmp_path / "r.json"
    assert run(["optimize", MODEL, str(tmp_path / "o.tflite"), "--no-fuse_preactivation_batchnorm", "-q"]) == 0
    assert run(["optimize", MODEL, str(tmp_path / "p.tflite"), "--report", str(report), "-q"]) == 0
    from bnfold.engine import registry

    ran = json.loads(report.read_text())["passes"]
    assert ran == registry.default_passes()
    assert (
        run(
            [
                "optimize",
                MODEL,
                str(tmp_path / "q.tflite"),
                "--no-fuse_preactivation_batchnorm",
                "-q",
                "--report",
                str(report),
                "--force",
            ]
        )
        == 0
    )
    without = json.loads(report.read_text())
    assert without["passes"] == [p for p in ran if p != "fuse_preactivation_batchnorm"]
    assert without["operators"]["after"].get("MUL", 0) > 0  # the batch norms it would have folded
    named = ["--fuse_batchnorm_with_conv", "--fuse_activation_function", "--no-fuse_activation_function"]
    assert run(["optimize", MODEL, str(tmp_path / "r.tflite"), *named, "-q", "--report", str(report), "--force"]) == 0
    assert json.loads(report.read_text())["passes"] == ["fuse_batchnorm_with_conv"]


def test_optimize_help_shows_the_options_before_the_pass_flags(capsys):
    assert run(["optimize", "--help"]) == 0
    shown = capsys.readouterr().out
    first_pass = min(shown.index(f"--{name} ") for name in ("remove_unnecessary_concat", "fuse_batchnorm_with_conv"))
    assert max(shown.index(option) for option in ("--config", "--report", "--check N", "--out-dir")) < first_pass


@pytest.mark.parametrize(
    "text, where, words",
    [
        (
            b"[one-optimize]\ninput_path=m.tflite\nfuse_batchnorm_with_conv\n",
            ":3",
            "'fuse_batchnorm_with_conv' is not key=value",
        ),
        (b"junk\n[one-optimize]\n", ":1", "'junk' comes before any [section] header"),
        (
            b"[one-optimize]\ninput_path=a\ninput_path=b\n",
            ":3",
            "option 'input_path' in section 'one-optimize' already exists",
        ),
        (b"[one-optimize]\noutput_path=o.tflite\n", "", "[one-optimize] has no input_path, and no IN was given"),
        (
            b"[one-optimize]\n\ninput_path=nothere.tflite\noutput_path=o.tflite\n",
            ":3",
            "input_path=nothere.tflite: no such file",
        ),
    ],
)
def test_cfg_errors_name_the_file_and_line(text, where, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.cfg").write_bytes(text)
    assert run(["optimize", "-C", "one.cfg"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"bnfold: error: one.cfg{where}: ") and words in err[0], err
    assert list(tmp_path.iterdir()) == [tmp_path / "one.cfg"]


def test_a_cfg_with_a_byte_order_mark_reads_as_without(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    body = f"[one-optimize]\ninput_path={MODEL}\noutput_path=o.tflite\nfuse_preactivation_batchnorm=True\n"
    (tmp_path / "bom.cfg").write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert run(["optimize", "-C", "bom.cfg", "--report", "r.json", "-q"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["passes"] == ["fuse_preactivation_batchnorm"]


def _summary(argv: list[str], capsys) -> list[str]:
    assert run(argv) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    "model, passes",
    [
        ("zoo/keras_concat_input_bn.tflite", []),
        ("zoo/keras_concat_input_bn.tflite", ["-O1"]),
        ("resnet_v2_mini.tflite", ["-O1"]),
        ("torch_resblock_nchw.circle", []),
        ("bn_conv_valid.tflite", ["--passes", ""]),
    ],
)
def test_the_skipped_counts_add_up_to_what_inspect_leftovers_finds(model, passes, tmp_path, capsys):
    out, report = str(tmp_path / f"o{os.path.splitext(model)[1]}"), str(tmp_path / "r.json")
    lines = _summary(["optimize", str(DATA / model), out, *passes, "--report", report], capsys)
    listed = _summary(["inspect", out, "--leftovers", "--report", report], capsys)
    candidates = int(next(x for x in listed if x.startswith("batch-norm candidates:")).split(":")[1])
    transposes = int(next(x for x in listed if x.startswith("transposes:")).split(":")[1])
    [left] = [x for x in lines if x.startswith("left: ")]
    words = left.replace(",", "").split()
    assert (int(words[1]), int(words[4])) == (candidates, transposes), left
    outside = int(words[6]) if "outside" in left else 0
    skipped = sum(int(x.split(", ")[1].split()[0]) for x in lines if x.endswith(" skipped"))
    assert skipped + outside == candidates + transposes, lines


def test_unchanged_says_why(tmp_path, capsys):
    resnet = str(DATA / "resnet_v2_mini.tflite")
    o1 = _summary(["optimize", resnet, str(tmp_path / "a.tflite"), "-O1"], capsys)[-1]
    assert o1.startswith("unchanged (fuse_preactivation_batchnorm and fuse_batchnorm_forward, which fold it")
    none = _summary(["optimize", resnet, str(tmp_path / "b.tflite"), "--passes", ""], capsys)[-1]
    assert none.startswith("unchanged (no pass ran): wrote ")
    _summary(["optimize", resnet, str(tmp_path / "c.tflite")], capsys)
    again = _summary(["optimize", str(tmp_path / "c.tflite"), str(tmp_path / "d.tflite")], capsys)[-1]
    assert again.startswith("unchanged (nothing in it for the passes that ran): wrote ")


def test_a_write_that_only_changes_the_file_says_so(tmp_path, capsys):
    offsets = _summary(["optimize", str(DATA / "conv_buffer_offset.tflite"), str(tmp_path / "a.tflite")], capsys)
    assert offsets[-1] == (
        f"wrote {tmp_path / 'a.tflite'}: no pass changed the model (nothing in it for the passes that ran); "
        "only the file differs (buffer layout offset buffers -> standard)"
    )
    circle = _summary(
        ["optimize", str(DATA / "bn_conv_valid.tflite"), str(tmp_path / "b.circle"), "--passes", ""], capsys
    )
    assert circle[-1].endswith(
        "no pass changed the model (no pass ran); only the file differs (format tflite -> circle)"
    )
    folded = _summary(["optimize", str(DATA / "bn_conv_valid.tflite"), str(tmp_path / "c.tflite")], capsys)
    assert folded[-1] == f"wrote {tmp_path / 'c.tflite'}"
