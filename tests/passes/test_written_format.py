"""The passes make what the format the model is WRITTEN in holds (engine/match.format_has asks the
target's `writes`), not the input's: a .tflite input written as .circle gets Circle's RMS_NORM and
ROPE (and GELU) and the file onert runs computes what LiteRT computes on the input; a .circle
input written as .tflite gets none, even made for onert, and the report says why; the library
call that writes nothing keeps the model's own format."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_fuse_gelu import gelu_net

from bn_models import ATOL, RTOL, inputs_for
from bnfold import api
from bnfold.cli import run
from bnfold.errors import ModelError
from bnfold.io.formats import CIRCLE, TFLITE
from bnfold.recipe.chef import build
from bnfold.reference import interpreter
from bnfold.values import litert, onert
from decoder_models import SCALED, rms_net, rope_net, scaled_error

NETS = {
    "RMS_NORM": (rms_net, "fuse_rmsnorm", "the RMS norm stays"),
    "ROPE": (rope_net, "fuse_rope", "the RoPE stays"),
}


def written(tmp_path, net, source_format, output_name, passes, **options):
    """(input path, output model as read back, report dict): `net` built in `source_format`, saved,
    then `bnfold optimize IN OUT` with `passes`."""
    source = tmp_path / f"in{source_format.extension}"
    api.save(build(net.recipe(), source_format), source)
    output, report = tmp_path / output_name, tmp_path / "report.json"
    api.optimize_file(source, output, passes, report=str(report), **options)
    return source, api.load(output), json.loads(report.read_text())


def not_folded(report: dict, pass_name: str) -> list[str]:
    return [e["reason"] for e in report.get("not_folded", []) if e["pass"] == pass_name]


@pytest.mark.parametrize("kind", sorted(NETS))
def test_tflite_written_as_circle_gets_the_circle_op_and_runs_equal_in_onert(tmp_path, kind):
    net, pass_name, _ = NETS[kind]
    source, model, report = written(tmp_path, net(), TFLITE, "out.circle", [pass_name])
    assert model.format is CIRCLE and model.op_counts()[kind] == 1, model.op_counts()
    assert report["target"]["name"] == "onert" and report["folds"]
    if onert.missing():
        pytest.skip(f"onert: {onert.missing()}")
    original = api.load(source)
    xs = inputs_for(original)
    error = scaled_error(litert.run(original, xs), onert.Session(model)(xs))
    assert error <= SCALED, error


def test_tflite_written_as_circle_under_o1_gets_rms_norm_and_rope(tmp_path):
    for kind, (net, _, _) in NETS.items():
        _, model, _ = written(tmp_path, net(), TFLITE, "out.circle", None, O1=True)
        assert model.op_counts()[kind] == 1, model.op_counts()


def test_tflite_written_as_circle_gets_gelu_and_runs_equal_in_onert(tmp_path):
    """Its input holds a CUSTOM Erf LiteRT has no kernel for: the reference interpreter runs it."""
    source, model, report = written(tmp_path, gelu_net(), TFLITE, "out.circle", ["fuse_gelu"])
    assert model.format is CIRCLE and model.op_counts() == {"GELU": 1} and report["folds"]
    if onert.missing():
        pytest.skip(f"onert: {onert.missing()}")
    original = api.load(source)
    xs = inputs_for(original)
    np.testing.assert_allclose(onert.Session(model)(xs)[0], interpreter.run(original, xs)[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("target", [None, "onert"])
@pytest.mark.parametrize("kind", sorted(NETS))
def test_circle_written_as_tflite_gets_none_and_says_why(tmp_path, kind, target):
    net, pass_name, stays = NETS[kind]
    _, model, report = written(tmp_path, net(), CIRCLE, "out.tflite", [pass_name], target=target)
    assert model.format is TFLITE and kind not in model.op_counts() and not report["folds"]
    # made for onert, which runs it, or for litert (.tflite's default), which does not: the format
    # written is asked first either way
    assert not_folded(report, pass_name) == [f"{stays}: the output format tflite has no {kind} (Circle only)"]
    assert report["target"] == {"name": target or "litert", "refused": []}


@pytest.mark.parametrize("kind", sorted(NETS))
def test_the_library_call_writing_nothing_keeps_the_models_format(tmp_path, kind):
    net, pass_name, _ = NETS[kind]
    for fmt, made in ((TFLITE, False), (CIRCLE, True)):
        source = tmp_path / f"in{fmt.extension}"
        api.save(build(net().recipe(), fmt), source)
        result = api.optimize(source, [pass_name], target="onert")
        assert (kind in result.report["operators"]["after"]) is made, (fmt, result.report["operators"])


def test_a_circle_only_op_is_never_converted_into_tflite(tmp_path):
    """`convert` runs no pass: a Circle model that holds RMS_NORM is refused, one line, no file."""
    _, made, _ = written(tmp_path, rms_net(), TFLITE, "rms.circle", ["fuse_rmsnorm"])
    assert made.op_counts()["RMS_NORM"] == 1
    with pytest.raises(ModelError, match="RMS_NORM does not exist in tflite"):
        api.convert(tmp_path / "rms.circle", tmp_path / "back.tflite")
    assert not (tmp_path / "back.tflite").exists()


@pytest.mark.parametrize("check", [None, 2])
def test_a_circle_only_op_that_stays_is_refused_as_tflite_naming_out(tmp_path, capsys, check):
    """A Circle model whose RMS_NORM no pass can undo, optimized into .tflite: one line naming OUT
    (the check's scratch copy is never named), exit 1, no file, with or without --check."""
    _, made, _ = written(tmp_path, rms_net(), TFLITE, "rms.circle", ["fuse_rmsnorm"])
    assert made.op_counts()["RMS_NORM"] == 1
    out = tmp_path / "back.tflite"
    capsys.readouterr()
    code = run(["optimize", str(tmp_path / "rms.circle"), str(out), *(["--check", str(check)] if check else [])])
    said = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and said == [
        f"bnfold: error: {out}: cannot be written as tflite: operator RMS_NORM does not exist in tflite"
    ]
    assert not out.exists()


def test_the_check_of_a_tflite_written_as_circle_runs_the_model_made(tmp_path):
    """The model checked is the Circle written (read back from its bytes), which LiteRT cannot run
    with an RMS_NORM: the auto backend runs it and the TFLite input in onert where it is installed,
    else in the reference interpreter."""
    _, model, report = written(tmp_path, rms_net(), TFLITE, "out.circle", ["fuse_rmsnorm"], check=2)
    assert model.op_counts()["RMS_NORM"] == 1
    ran = "onert (cpu backend)" if onert.missing() is None else "reference interpreter"
    assert report["check"]["passed"] and report["check"]["backend"] == ran, report["check"]
