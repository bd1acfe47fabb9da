"""What bnfold knows about the two schemas (schemas/README.md): the verifier's field tables match the
installed bindings, fields and union members newer than a binding are refused instead of dropped,
and each format gets the Model.version its runtime expects."""

from __future__ import annotations

import struct
import sys

import flatbuffers
import pytest
from ai_edge_litert import schema_py_generated as tfl
from ai_edge_litert.interpreter import Interpreter

from bnfold import cli
from bnfold.io.reader import read_model
from bnfold.io.validate import field_tables
from conftest import DATA, ROOT

sys.path.insert(0, str(ROOT / "schemas"))
from derive_fields import drift  # noqa: E402  (a maintainer script, not part of the package)

FIXTURE = DATA / "conv_relu_bn.tflite"


# ---- the field tables (package data) match the installed bindings ----------------------------


@pytest.mark.parametrize("fmt", ["tflite", "circle"])
def test_field_tables_match_the_installed_bindings(fmt):
    """A binding upgrade that moves, retypes, adds or removes a field fails here, naming it."""
    lines = drift(fmt, field_tables()[fmt])
    assert not lines, "schemas/derive_fields.py would change:\n" + "\n".join(lines)


def test_field_tables_hold_what_the_verifier_relies_on():
    tflite, circle = field_tables()["tflite"], field_tables()["circle"]
    assert tflite["Tensor"].split()[2] == circle["Tensor"].split()[2] == "4"  # buffer index, uint32
    assert tflite["Operator"].split()[4] == circle["Operator"].split()[4] == "U:BuiltinOptions"
    assert (
        tflite["Tensor"].split()[10] == "4" and circle["Tensor"].split()[10] == "1"
    )  # external_buffer / compression_type
    assert "ExternalBuffer" in tflite and "ExternalBuffer" not in circle


def test_drift_is_reported_by_field_name():
    stored = dict(field_tables()["tflite"])
    slots = stored["Tensor"].split()
    stored["Tensor"] = " ".join(slots[:10] + ["1"])
    del stored["ExternalBufferGroup"]
    assert drift("tflite", stored) == [
        "tflite ExternalBufferGroup.Name (slot 0): the binding says s, schema_layout_tflite.py says (none)",
        "tflite Tensor.ExternalBuffer (slot 10): the binding says 4, schema_layout_tflite.py says 1",
    ]


# ---- a field or union member newer than the binding ------------------------------------------


def _packed(model, monkeypatch=None, extra_model_field=None) -> bytes:
    """A TFLite file from an object-API tree; optionally with a Model field at slot
    `extra_model_field`, which is what a file written with a newer schema looks like here."""
    if extra_model_field is not None:
        slot = extra_model_field
        monkeypatch.setattr(tfl, "ModelStart", lambda b: b.StartObject(slot + 1))
        monkeypatch.setattr(tfl, "ModelEnd", lambda b: (b.PrependUint32Slot(slot, 7, 0), b.EndObject())[1])
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _fixture_tree():
    return tfl.ModelT.InitFromObj(tfl.Model.GetRootAs(FIXTURE.read_bytes(), 0))


def _optimize(capsys, src, dst):
    code = cli.run(["optimize", str(src), str(dst), "--passes", ""])
    return code, capsys.readouterr().err.strip().splitlines()


def test_a_field_newer_than_the_binding_is_refused_not_dropped(tmp_path, capsys, monkeypatch):
    src, dst = tmp_path / "newer.tflite", tmp_path / "out.tflite"
    src.write_bytes(_packed(_fixture_tree(), monkeypatch, extra_model_field=14))
    Interpreter(model_path=str(src)).allocate_tensors()  # a sound file: LiteRT skips the field
    code, err = _optimize(capsys, src, dst)
    assert code == 1 and len(err) == 1 and not dst.exists()
    assert (
        "Model at byte" in err[0]
        and "has field 14, newer than the tflite schema bnfold reads (ai-edge-litert" in err[0]
    )


def test_an_unknown_union_member_is_refused_not_dropped(tmp_path, capsys):
    data = bytearray(_packed(_fixture_tree()))
    model = tfl.Model.GetRootAs(data, 0)
    graph = model.Subgraphs(0)
    add = next(
        graph.Operators(i)
        for i in range(graph.OperatorsLength())
        if model.OperatorCodes(graph.Operators(i).OpcodeIndex()).BuiltinCode() == tfl.BuiltinOperator.ADD
    )
    data[add._tab.Pos + add._tab.Offset(10)] = 200  # builtin_options_type: no such member
    src, dst = tmp_path / "member.tflite", tmp_path / "out.tflite"
    src.write_bytes(bytes(data))
    code, err = _optimize(capsys, src, dst)
    assert code == 1 and len(err) == 1 and not dst.exists()
    assert "has a BuiltinOptions of type 200, newer than the tflite schema" in err[0]


# ---- Model.version ---------------------------------------------------------------------------


def test_a_conversion_writes_the_model_version_of_the_target_format(tmp_path, capsys):
    circle_in = DATA / "torch_conv_bn_nchw.circle"
    assert read_model(str(circle_in)).version == 0  # what ONE's tools write
    tflite_out, circle_out = tmp_path / "c.tflite", tmp_path / "t.circle"
    assert cli.run(["convert", str(circle_in), str(tflite_out)]) == 0
    assert cli.run(["convert", str(FIXTURE), str(circle_out)]) == 0
    assert read_model(str(tflite_out)).version == 3
    assert read_model(str(circle_out)).version == 0
    Interpreter(model_path=str(tflite_out)).allocate_tensors()  # LiteRT refuses any other version


def test_litert_accepts_only_model_version_3(tmp_path):
    tree = _fixture_tree()
    for version, loads in ((0, False), (3, True), (4, False)):
        tree.version = version
        data = _packed(tree)
        if loads:
            Interpreter(model_content=data).allocate_tensors()
        else:
            with pytest.raises(ValueError, match=f"schema version {version} not equal to supported version 3"):
                Interpreter(model_content=data)


def test_a_same_format_rewrite_keeps_the_model_version(tmp_path):
    tree = _fixture_tree()
    tree.version = 2
    src, dst = tmp_path / "v2.tflite", tmp_path / "out.tflite"
    src.write_bytes(_packed(tree))
    assert cli.run(["optimize", str(src), str(dst), "--passes", "", "--quiet"]) == 0
    assert read_model(str(dst)).version == 2
    assert struct.unpack_from("<4s", dst.read_bytes(), 4)[0] == b"TFL3"
