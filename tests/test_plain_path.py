"""A model whose tables hold nothing beyond what the IR models is read and written without the
generated bindings (io/tables.py: 17-23 ms of every run to import them); a table holding more is
unpacked and packed by the bindings' object API, imported then, and still round-trips exactly."""

from __future__ import annotations

import json
import subprocess
import sys

import flatbuffers
import pytest

from bnfold.io.builder import Builder
from bnfold.io.formats import format_from_identifier
from bnfold.io.tables import SCALAR_FORMATS, scalar_bounds, unpack
from conftest import DATA, FIXTURES, ROOT, TEST_RECIPES, build_recipe

sys.path.insert(0, str(ROOT / "schemas"))
from derive_fields import derive_layouts, stored_layouts  # noqa: E402  (a maintainer script, not part of the package)

BINDINGS = ("ai_edge_litert.schema_py_generated", "circle_schema")

_IMPORTED = f"[m for m in sys.modules if m.startswith({BINDINGS!r})]"


def _python(code: str) -> list:
    """Run `code` in a fresh interpreter; what it prints last, as JSON."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_layouts_match_the_installed_bindings():
    """A binding upgrade that moves a field, or changes how Pack writes one, fails here."""
    assert stored_layouts() == derive_layouts(), "rerun python schemas/derive_fields.py"


@pytest.mark.parametrize("name", ["resnet_v2_mini.tflite", "torch_conv_bn_nchw.circle"])
def test_optimize_of_a_plain_model_imports_no_bindings(name, tmp_path):
    src, out = DATA / name, tmp_path / name
    imported = _python(f"""
import json, sys
from bnfold import cli, exits
code = exits.run(cli.main, ["optimize", {str(src)!r}, {str(out)!r}, "--quiet"])
print(json.dumps([code, {_IMPORTED}]))
""")
    assert imported == [0, []]
    assert out.read_bytes() != src.read_bytes()  # folded: the writer ran, not a copy


def test_an_unchanged_model_is_copied_without_importing_the_serializer(tmp_path):
    """Reading needs no flatbuffers and a copy no io/builder.py: both only pack."""
    src, out = DATA / "resnet_v2_mini.tflite", tmp_path / "once.tflite"
    subprocess.run([sys.executable, "-m", "bnfold", "optimize", str(src), str(out), "--quiet"], check=True)
    argv = ["optimize", str(out), str(tmp_path / "twice.tflite"), "--report", str(tmp_path / "r.json"), "--quiet"]
    imported = _python(f"""
import json, sys
from bnfold import cli, exits
code = exits.run(cli.main, {argv!r})
print(json.dumps([code, [m for m in sys.modules if m.startswith(("flatbuffers", "bnfold.io.builder"))]]))
""")
    assert imported == [0, []]
    assert json.loads((tmp_path / "r.json").read_text())["output"]["unchanged"] is True


def test_scalar_facts_are_flatbuffers_own():
    """io/tables.py's scalar types (written there so reading imports no flatbuffers) are those of
    flatbuffers' number_types: struct format, width, numpy type and the range packing accepts."""
    for name, fmt in SCALAR_FORMATS.items():
        flags = getattr(flatbuffers.number_types, name + "Flags")
        assert fmt == flags.packer_type.format and flags.bytewidth == flags.packer_type.size
        assert name.lower() == flags.name
        bounds = None if flags.min_val is None else (flags.min_val, flags.max_val)
        assert scalar_bounds(name) == bounds and type(bounds and bounds[0]) is type(flags.min_val)
    assert {n[:-5] for n in dir(flatbuffers.number_types) if n.endswith("Flags")} >= set(SCALAR_FORMATS)


@pytest.mark.parametrize("ext", [".tflite", ".circle"])
def test_a_model_with_records_round_trips_exactly_through_the_bindings(ext, tmp_path):
    """Custom options and sparsity (Shipped_000) are fields the IR does not model: the sparse
    tensor's table (sub-tables) is read and written by the object API, inside tables written
    without it; the custom operator's (a vector of bytes) gets an io/tables.py record."""
    src = build_recipe("Shipped_000", tmp_path, ext, directory=TEST_RECIPES)
    out = tmp_path / f"out{ext}"
    steps = _python(f"""
import json, sys
from bnfold.io.reader import read_model
from bnfold.io.atomic import save_model
before = {_IMPORTED}
model = read_model({str(src)!r})
records = sum(t.record is not None and hasattr(type(t.record), "InitFromObj") for g in model.graphs for t in g.tensors)
(custom,) = [op for op in model.graphs[0].ops if op.kind == "CUSTOM"]
save_model(model, {str(out)!r}, model.format)
print(json.dumps([before, bool({_IMPORTED}), records, type(custom.record).__module__]))
""")
    assert steps == [[], True, 1, "bnfold.io.tables"]  # the sparse tensor; the custom operator
    assert out.read_bytes() == src.read_bytes()


@pytest.mark.parametrize("name", [*FIXTURES, "Shipped_000.tflite", "Shipped_000.circle"])
def test_records_pack_to_the_object_apis_bytes(name, tmp_path):
    """A whole model unpacked into io/tables.py records and packed with io/builder.py's Builder
    is, byte for byte, the object API's unpack of it packed with flatbuffers' own Builder: the
    layouts, the records' values, the packing order and the leaner builder are all exact."""
    if name.startswith("Shipped_000"):
        src = build_recipe("Shipped_000", tmp_path, "." + name.split(".")[1], directory=TEST_RECIPES)
    else:
        src = DATA / name
    data = src.read_bytes()
    fmt = format_from_identifier(data[4:8], str(src))
    ours = Builder(1024)
    ours.Finish(unpack(fmt.layout.table("Model"), data, _root(data)).Pack(ours), file_identifier=fmt.identifier)
    theirs = flatbuffers.Builder(1024)
    tree = fmt.cls("ModelT").InitFromObj(fmt.cls("Model").GetRootAs(data, 0))
    theirs.Finish(tree.Pack(theirs), file_identifier=fmt.identifier)
    assert ours.Output() == theirs.Output()


def _root(data: bytes) -> int:
    return int.from_bytes(data[:4], "little")
