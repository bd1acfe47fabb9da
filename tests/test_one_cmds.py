"""bnfold as a step of a one-cmds pipeline: cfg files shaped like ONE's own tests
(tests/data/one-cmds/*.cfg) through `bnfold optimize --config`, one-optimize's command line,
and the shell manners a pipeline relies on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import bnfold
from bnfold import one, selection
from bnfold.cli import flags, run
from bnfold.engine import registry
from bnfold.io.reader import read_model
from conftest import DATA, build_recipe

CFG = DATA / "one-cmds"
UNFOLDED = {"CONV_2D": 1, "MUL": 1, "ADD": 1}  # Net_Conv_Add_Mul_000: conv -> mul -> add
FOLDED = {"CONV_2D": 1}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A directory holding model.tflite (conv + batch norm), the name every cfg here uses."""
    shutil.copy(build_recipe("Net_Conv_Add_Mul_000", tmp_path), tmp_path / "model.tflite")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def optimized_counts(workdir, name="model.opt.tflite"):
    return dict(read_model(str(workdir / name)).op_counts())


@pytest.mark.parametrize(
    "cfg, counts",
    [
        ("onecc_paths_only.cfg", UNFOLDED),  # a section with only paths runs no pass
        ("onecc_include_O1.cfg", FOLDED),  # [onecc] include=O1
        ("one-build_O1_false.cfg", UNFOLDED),  # O1=True, but the O1 passes that apply are switched off
    ],
)
def test_config_runs_what_it_names(cfg, counts, workdir, capsys):
    assert run(["optimize", "--config", str(CFG / cfg)]) == 0
    assert optimized_counts(workdir) == counts
    captured = capsys.readouterr()
    assert "warning" not in captured.err


# stand-ins for O1 members bnfold lacks (one it refuses, one a future ONE may add), so the tests of
# the mechanism hold whatever O1's members bnfold implements
NOT_IN_BNFOLD = ("compress_weights_huffman", "fold_future_op")


REFUSED_WARNING = (
    f"bnfold: warning: compress_weights_huffman: bnfold refuses it ({one.REFUSED['compress_weights_huffman']}); ignored"
)


@pytest.fixture
def o1_with_unimplemented(monkeypatch):
    """ONE's O1 group with two members bnfold does not implement."""
    assert not set(NOT_IN_BNFOLD) & set(registry.BY_NAME)
    monkeypatch.setattr(one, "PASS_OPTIONS", one.PASS_OPTIONS | {"fold_future_op"})
    monkeypatch.setitem(one.GROUPS, "O1", (*one.O1, *NOT_IN_BNFOLD))


def test_o1_counts_the_members_bnfold_does_not_implement_and_the_report_lists_them(
    workdir, capsys, o1_with_unimplemented
):
    assert run(["optimize", "--config", str(CFG / "onecc_include_O1.cfg"), "--report", "r.json"]) == 0
    note = [line for line in capsys.readouterr().out.splitlines() if line.startswith("bnfold: note: O1")]
    lacking = json.loads((workdir / "r.json").read_text())["group_members_not_implemented"]["O1"]
    assert lacking == [m for m in one.GROUPS["O1"] if m not in registry.BY_NAME] and set(NOT_IN_BNFOLD) <= set(lacking)
    for implemented in (
        "fuse_batchnorm_with_conv",
        "remove_redundant_reshape",
        "remove_unnecessary_reshape",
        "substitute_transpose_to_reshape",
    ):
        assert implemented not in lacking  # so it ran
    assert note == [
        f"bnfold: note: O1: {len(lacking)} of its passes are not in bnfold and do not run "
        "(--report lists them; see 'bnfold passes' for what runs)"
    ]  # one short line, not 40 names


def test_an_option_warned_about_is_not_named_again_in_the_group_note(o1_with_unimplemented):
    chosen = selection.select(None, {"O1": True, "fold_future_op": True}, default=False)
    assert chosen.warnings() == ["warning: fold_future_op is a ONE option bnfold does not implement; ignored"]
    lacking = len(chosen.group_skipped["O1"])
    assert chosen.notes()[0].startswith(f"note: O1: {lacking - 1} of its passes")


def test_the_group_note_goes_when_bnfold_implements_every_member(workdir, capsys, monkeypatch):
    monkeypatch.setitem(one.GROUPS, "O1", tuple(m for m in one.O1 if m in registry.BY_NAME))
    assert selection.select(None, {"O1": True}, default=False).notes() == []
    assert run(["optimize", "--config", str(CFG / "onecc_include_O1.cfg"), "--report", "r.json"]) == 0
    assert "note:" not in capsys.readouterr().out
    assert json.loads((workdir / "r.json").read_text())["group_members_not_implemented"] == {"O1": []}


def test_unimplemented_one_options_warn_once_each_and_the_run_goes_on(workdir, capsys):
    assert run(["optimize", "--config", str(CFG / "onecc_unimplemented.cfg")]) == 0  # -q would leave them out
    assert optimized_counts(workdir) == FOLDED
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "bnfold: warning: verbose is a ONE option bnfold does not implement; ignored",
        REFUSED_WARNING,
    ]


def test_ones_regress_onnx_conv_bn_option_set(tmp_path, monkeypatch, capsys):
    """ONE's REGRESS_ONNX_Conv_BN_001 options on a model of its shape: ONE's rule holds (two
    CONV_2D, no MUL, ADD, RESHAPE or TRANSPOSE), the interface is NHWC and says so, values check."""
    shutil.copy(build_recipe("Regress_ONNX_Conv_BN_000", tmp_path, ".circle"), tmp_path / "model.circle")
    monkeypatch.chdir(tmp_path)
    assert run(["optimize", "--config", str(CFG / "regress_onnx_conv_bn.cfg"), "--strict", "--check", "2"]) == 0
    assert optimized_counts(tmp_path, "model.opt.circle") == {"CONV_2D": 2, "PAD": 1}
    captured = capsys.readouterr()
    assert captured.err == ""
    changes = "nchw_to_nhwc_input_shape, nchw_to_nhwc_output_shape"
    assert f"{changes}: input x is now NHWC [2, 17, 13, 5] (was [2, 5, 17, 13])" in captured.out
    assert f"{changes}: output y is now NHWC [2, 16, 14, 6] (was [2, 6, 16, 14])" in captured.out
    assert "check: 2 sample(s)" in captured.out


def test_strict_refuses_unimplemented_one_options(workdir, capsys):
    assert run(["optimize", "--config", str(CFG / "onecc_unimplemented.cfg"), "--strict"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "verbose, compress_weights_huffman" in err[0] and "strict mode" in err[0]
    assert not (workdir / "model.opt.tflite").exists()


@pytest.mark.parametrize(
    "cfg, words",
    [
        ("onecc_bad_value.cfg", "onecc_bad_value.cfg:7: fuse_batchnorm_with_conv=maybe: expected True or False"),
        (
            "onecc_misspelt.cfg",
            "onecc_misspelt.cfg:7: unknown pass or option 'fuse_batchnorm_with_cnov' in "
            "[one-optimize] (did you mean fuse_batchnorm_with_conv",
        ),
    ],
)
def test_config_errors_name_the_line(cfg, words, workdir, capsys):
    assert run(["optimize", "--config", str(CFG / cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not (workdir / "model.opt.tflite").exists()


def test_config_without_paths_takes_them_from_the_command_line(workdir):
    # make_batchnorm_gamma_positive alone: only it runs (not the default set), and it has nothing to do here
    assert (
        run(["optimize", "-C", str(CFG / "OONE-BUILD_gamma.cfg"), "-i", "model.tflite", "-o", "out.tflite", "-q"]) == 0
    )
    assert optimized_counts(workdir, "out.tflite") == UNFOLDED


def test_command_line_switches_add_to_the_config(workdir):
    assert run(["optimize", "--config", str(CFG / "onecc_paths_only.cfg"), "--fuse_batchnorm_with_conv", "-q"]) == 0
    assert optimized_counts(workdir) == FOLDED


def test_dash_O1_on_the_command_line(workdir, capsys):
    assert run(["optimize", "-i", "model.tflite", "-o", "o1.tflite", "-O1"]) == 0
    assert optimized_counts(workdir, "o1.tflite") == FOLDED
    assert run(["optimize", "model.tflite", "o2.tflite", "-O2"]) == 2
    assert "bnfold knows the group(s) -O1" in capsys.readouterr().err


def test_input_given_twice_differently_is_a_usage_error(workdir, capsys):
    assert run(["optimize", "model.tflite", "-i", "other.tflite", "-o", "x.tflite"]) == 2
    assert "IN given twice" in capsys.readouterr().err


def test_unimplemented_one_flag_on_the_command_line_warns(workdir, capsys):
    assert (
        run(["optimize", "model.tflite", "o.tflite", "--compress_weights_huffman", "--fuse_batchnorm_with_conv"]) == 0
    )
    assert capsys.readouterr().err.splitlines() == [REFUSED_WARNING]
    assert optimized_counts(workdir, "o.tflite") == FOLDED


def test_a_near_miss_of_an_unimplemented_one_flag_is_named_too(workdir, capsys):
    assert run(["optimize", "model.tflite", "o.tflite", "--fuse_rsqrtt"]) == 2  # fuse_rsqrt: ONE's, not bnfold's
    [err] = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("bnfold: error: no such option: --fuse_rsqrtt (did you mean --fuse_rsqrt, ")


def test_unimplemented_one_flags_are_declared_only_for_a_command_line_that_needs_them(tmp_path):
    """Their click options (one per ONE option bnfold lacks) cost every run ~5 ms: a command line
    without an option click does not know parses without them, in a process of its own (the
    declaration lasts the process)."""
    probe = textwrap.dedent("""
        import sys
        from bnfold import cli
        command = cli.main.get_command(None, "optimize")
        context = command.make_context("optimize", sys.argv[1:])
        hidden = sum(getattr(p, "hidden", False) for p in command.params)
        print(command.one_flags_declared, hidden, context.params.get("compress_weights_huffman"))
    """)
    lines = {
        args: subprocess.run(
            [sys.executable, "-c", probe, "in.tflite", "out.tflite", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout.split()
        for args in ((), ("--compress_weights_huffman",), ("-q", "--fuse_batchnorm_with_conv"))
    }
    assert lines == {
        (): ["False", "0", "None"],
        ("--compress_weights_huffman",): ["True", str(len(flags.not_implemented())), "True"],
        ("-q", "--fuse_batchnorm_with_conv"): ["False", "0", "None"],
    }


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["--fuse_batchnorm_with_cnov"],
            "no such option: --fuse_batchnorm_with_cnov (did you mean --fuse_batchnorm_with_conv",
        ),
        (
            ["--passes", "fuse_batchnorm_with_cov"],
            "unknown pass or option 'fuse_batchnorm_with_cov' (did you mean fuse_batchnorm_with_conv",
        ),
        (["--remove_redundant_transpos"], "(did you mean --remove_redundant_transpose"),
    ],
)
def test_near_misses_get_the_closest_real_names(args, expected, workdir, capsys):
    assert run(["optimize", "model.tflite", "o.tflite", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]


def test_report_to_stdout_is_json_and_the_summary_goes_to_stderr(workdir, capsys):
    assert run(["optimize", "model.tflite", "o.tflite", "--report", "-"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert not (workdir / "-").exists()
    assert "wrote o.tflite" in captured.err and "operator" in captured.err
    assert report["bnfold"] == __import__("bnfold").__version__
    assert report["input"] == {"path": "model.tflite", "format": "tflite", "bytes": os.path.getsize("model.tflite")}
    assert report["output"]["path"] == "o.tflite" and report["output"]["format"] == "tflite"
    assert report["output"]["bytes"] == os.path.getsize("o.tflite")
    assert report["passes"] == registry.default_passes()
    assert report["operators"] == {"before": UNFOLDED, "after": FOLDED}
    assert [f["pass"] for f in report["folds"]] == ["fuse_batchnorm_with_conv"]
    assert isinstance(report["skips"], list)
    assert set(report["seconds"]) >= {"read", "passes", "write"} and all(v >= 0 for v in report["seconds"].values())


@pytest.mark.parametrize(
    "out, words",
    [
        (".", "is a directory"),
        ("missing/o.tflite", "does not exist"),
        ("model.tflite/o.tflite", "is not a directory"),
    ],
)
def test_unusable_output_paths_are_named_before_any_work(out, words, workdir, capsys):
    assert run(["optimize", "model.tflite", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_output_directory(workdir, capsys):
    locked = workdir / "locked"
    locked.mkdir(mode=0o500)
    assert run(["optimize", "model.tflite", str(locked / "o.tflite")]) == 2
    assert "permission denied" in capsys.readouterr().err


def test_closed_stdout_exits_quietly_with_0():
    """`bnfold passes | head -1` under pipefail: the reader is gone before bnfold writes."""
    proc = subprocess.Popen([sys.executable, "-m", "bnfold", "passes"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # no reader left: the first write fails with EPIPE
    err = proc.stderr.read()
    assert proc.wait() == 0 and err == b""


def test_one_tables_agree_with_the_registry():
    # bnfold's own passes (not ONE options) are the batch-norm family's extensions, fuse_hardswish
    # (ONE has only the inverse, decompose_hardswish), fuse_attention (ONE has no such pass; it refuses
    # every candidate) and remove_unnecessary_concat (named like
    # ONE's remove_unnecessary_split) and fuse_pad_with_conv (ONE has no such pass), two under TICO's
    # names (convert_lhs_const_mm_to_fc, fuse_output_requantize), and three for quantized graphs
    # (fold_quantize: ONE has fold_dequantize only; fold_quantized_weight_layout and the lossy
    # replace_quantized_mul_add_with_depthwise_conv, named like ONE's replace_cw_mul_add_...); the
    # rest keep ONE's spelling
    own = {"fuse_hardswish", "remove_unnecessary_concat", "fuse_pad_with_conv"}
    own |= {"convert_lhs_const_mm_to_fc", "fuse_output_requantize", "fuse_attention"}
    own |= {"fold_quantize", "fold_quantized_weight_layout", "replace_quantized_mul_add_with_depthwise_conv"}
    ours = set(registry.BY_NAME) - one.PASS_OPTIONS - own
    assert all(name.startswith("fuse_batchnorm_") for name in ours), ours
    assert "decompose_hardswish" in one.PASS_OPTIONS
    assert {"fuse_mul_with_conv", "fuse_add_with_tconv", "replace_cw_mul_add_with_depthwise_conv"} <= set(
        registry.BY_NAME
    )
    assert set(one.O1) <= one.PASS_OPTIONS and len(set(one.O1)) == len(one.O1)
    assert "fuse_preactivation_batchnorm" not in one.O1 and "make_batchnorm_gamma_positive" not in one.O1


def test_bnfolds_o1_is_ones_o1_and_the_decoder_fusions_named_apart():
    """ONE's group stays a fact (with transform_sqrt_div_to_rsqrt_mul, ONE PR 13396); bnfold's -O1
    adds the exact decoder fusions ONE ships as switches, and nothing else."""
    assert "transform_sqrt_div_to_rsqrt_mul" in one.O1
    assert one.GROUPS["O1"] == one.O1 + one.O1_DECODER_ADDITIONS
    assert set(one.O1_DECODER_ADDITIONS) == {
        "fuse_rmsnorm",
        "fuse_mul_with_rmsnorm",
        "fuse_rope",
        "fuse_rsqrt",
        "remove_unnecessary_div",
        "remove_unnecessary_mul",
    }
    assert not set(one.O1) & set(one.O1_DECODER_ADDITIONS)
    assert all(registry.BY_NAME[name].exact for name in one.GROUPS["O1"] if name in registry.BY_NAME)


@pytest.mark.parametrize("how", ["-O1", "O1=True", "include=O1"])
@pytest.mark.parametrize("pattern, made", [("rms_norm", "RMS_NORM"), ("rope", "ROPE")])
def test_every_spelling_of_o1_fuses_rms_norms_and_ropes_for_onert(how, pattern, made, tmp_path, monkeypatch):
    """-O1, O1=True in [one-optimize] and [onecc] include=O1 are one group: on a Circle model holding an
    RMS norm (x / SQRT(...)) or a RoPE written out, each writes the one fused operator (target onert)."""
    from bnfold.io.writer import serialize
    from bnfold.recipe.chef import build
    from decoder_models import CIRCLE, rms_net, rope_net

    net = rms_net(root="SQRT") if pattern == "rms_norm" else rope_net()
    with open(tmp_path / "m.circle", "wb") as f:
        serialize(build(net.recipe(), CIRCLE), f, CIRCLE)
    monkeypatch.chdir(tmp_path)
    if how == "-O1":
        argv = ["optimize", "m.circle", "o.circle", "-O1"]
    else:
        lines = ["[one-optimize]", "input_path=m.circle", "output_path=o.circle"]
        lines = ["[onecc]", "include=O1", *lines] if how == "include=O1" else [*lines, "O1=True"]
        (tmp_path / "o1.cfg").write_text("\n".join(lines) + "\n")
        argv = ["optimize", "--config", "o1.cfg"]
    assert run([*argv, "--check", "2", "-q"]) == 0
    assert dict(read_model(str(tmp_path / "o.circle")).op_counts()) == {made: 1}


def test_every_one_option_is_implemented_or_refused():
    """one.py's table follows ONE's: each option it names is a pass (or a pass's parameter), or
    refused with a reason."""
    implemented = set(registry.BY_NAME) | set(registry.PARAMETERS)
    unaccounted = one.PASS_OPTIONS - implemented - set(one.REFUSED)
    assert not unaccounted, f"ONE options neither implemented nor refused: {sorted(unaccounted)}"
    assert not set(one.REFUSED) & implemented and all(len(why) > 20 for why in one.REFUSED.values())


def test_a_cfg_switching_on_every_one_option_runs_without_a_warning(tmp_path, capsys):
    """The issue's target: every option of ONE's table on at once runs, exact (--check), and
    nothing is warned about."""
    cfg = tmp_path / "all.cfg"
    lines = [f"input_path={DATA / 'resnet_v2_mini.tflite'}", f"output_path={tmp_path / 'all.tflite'}"]
    lines += [f"{name}=True" for name in sorted(one.PASS_OPTIONS - set(one.REFUSED))]
    cfg.write_text("[one-optimize]\n" + "\n".join(lines) + "\n")
    assert run(["optimize", "--config", str(cfg), "--check", "2"]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "warning" in line] == []


def test_a_refused_option_says_why():
    chosen = selection.select(None, {"compress_weights_huffman": True}, default=False)
    assert chosen.passes == [] and chosen.warnings() == [
        f"warning: compress_weights_huffman: bnfold refuses it ({one.REFUSED['compress_weights_huffman']}); ignored"
    ]


def test_selection_rules():
    assert selection.select(None, {}, default=True).passes == registry.default_passes()
    assert selection.select(None, {}, default=False).passes == []
    assert selection.select("", {}, default=True).passes == []
    chosen = selection.select(None, {"O1": True, "fuse_activation_function": False}, default=False)
    assert "fuse_activation_function" not in chosen.passes and "fuse_batchnorm_with_conv" in chosen.passes
    assert selection.select(None, {"compress_weights_huffman": False}, default=False).not_implemented == []
    # a pass parameter qualifies its pass: alone it does nothing, and says so
    alone = selection.select(None, {"nchw_to_nhwc_input_shape": True}, default=False)
    assert alone.passes == [] and alone.names() == [] and alone.not_implemented == []
    assert alone.warnings() == ["warning: nchw_to_nhwc_input_shape has no effect without convert_nchw_to_nhwc; ignored"]
    ignored = selection.select(None, {"nchw_to_nhwc_input_shape": True}, default=True)  # the bare command line
    assert ignored.passes == registry.default_passes() and ignored.warnings() == alone.warnings()
    report = bnfold.optimize(str(DATA / "resnet_v2_mini.tflite"), nchw_to_nhwc_input_shape=True).report
    assert report["passes"] == registry.default_passes()  # the library's keywords read the same way
    both = selection.select("convert_nchw_to_nhwc,nchw_to_nhwc_output_shape", {}, default=True)
    assert both.names() == ["convert_nchw_to_nhwc", "nchw_to_nhwc_output_shape"] and both.warnings() == []
    assert set(registry.PARAMETERS) == {"nchw_to_nhwc_input_shape", "nchw_to_nhwc_output_shape"} <= one.PASS_OPTIONS


def _readme_section(title: str) -> str:
    text = (DATA.parent.parent / "README.md").read_text()
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_pipeline_example_works_as_shown(tmp_path, monkeypatch, capsys):
    section = _readme_section("Using bnfold in a ONE pipeline")
    cfg = section.split("cat > one.cfg <<'EOF'\n", 1)[1].split("EOF\n", 1)[0]
    console = section.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    shown = [line for line in console if not line.startswith(("$", "note:"))]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.cfg").write_text(cfg)
    shutil.copy(DATA / "resnet_v2_mini.tflite", tmp_path)
    assert run(["convert", "resnet_v2_mini.tflite", "model.circle"]) == 0
    capsys.readouterr()
    assert run(["optimize", "--config", "one.cfg"]) == 0
    captured = capsys.readouterr()
    printed = captured.err.splitlines() + captured.out.splitlines()
    for line in shown:
        assert line in printed
    # the O1 note, when bnfold lacks members of O1, is the README's (none when it lacks none)
    assert [line for line in printed if line.startswith("bnfold: note:")] == [
        line for line in console if line.startswith("bnfold: note:")
    ]
    assert read_model("model.opt.circle").format.name == "circle"


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda d: d / "missing.cfg", "no such file"),
        (lambda d: d, "is a directory"),
        (lambda d: (os.mkfifo(d / "fifo.cfg"), d / "fifo.cfg")[1], "is a FIFO (named pipe), not a configuration file"),
        (
            lambda d: (d / "no_section.cfg").write_text("[onecc]\none-optimize=False\n") and d / "no_section.cfg",
            "no [one-optimize] section",
        ),
        (
            lambda d: (
                (d / "empty_value.cfg").write_text("[one-optimize]\nfuse_batchnorm_with_conv=\n")
                and d / "empty_value.cfg"
            ),
            "empty_value.cfg:2: fuse_batchnorm_with_conv=: expected True or False",
        ),
        (
            lambda d: (d / "bad_group.cfg").write_text("[onecc]\ninclude=O3\n[one-optimize]\n") and d / "bad_group.cfg",
            "bad_group.cfg:2: include=O3: bnfold knows the group(s) O1",
        ),
    ],
)
def test_unusable_config_files_are_one_line_usage_errors(make, words, workdir, capsys):
    assert run(["optimize", "model.tflite", "o.tflite", "--config", str(make(workdir))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not (workdir / "o.tflite").exists()


def test_an_unimplemented_one_option_only_adds_a_warning(tmp_path, capsys):
    """`--verbose` switched the default set off: 'ignored' and the model unchanged (issue 36).
    Now it warns and nothing else, on the command line and in the library; a pass named beside it
    still replaces the default set, and a cfg still runs only what it switches on."""
    src = str(build_recipe("Net_Conv_Add_Mul_000", tmp_path))
    plain, flagged = str(tmp_path / "plain.tflite"), str(tmp_path / "flagged.tflite")
    assert run(["optimize", src, plain, "-q"]) == 0 and run(["optimize", src, flagged, "--verbose"]) == 0
    assert capsys.readouterr().err == "bnfold: warning: verbose is a ONE option bnfold does not implement; ignored\n"
    counts = read_model(flagged).op_counts()
    assert counts == read_model(plain).op_counts() == FOLDED
    report = bnfold.optimize(src, verbose=True, compress_weights_huffman=True).report
    assert report["passes"] == registry.default_passes() and report["ignored_options"] == [
        "verbose",
        "compress_weights_huffman",
    ]
    assert bnfold.optimize(src, verbose=True, fuse_activation_function=True).report["passes"] == [
        "fuse_activation_function"
    ]
    assert selection.select(None, {"verbose": True}, default=False).passes == []  # a cfg naming only it
