"""The reader and writer are lossless: unpacked object trees match field by field, and LiteRT
computes bit-identical outputs from what bnfold wrote."""

from __future__ import annotations

import numpy as np
import pytest

from bnfold.errors import ModelError
from bnfold.io.atomic import save_model
from bnfold.io.formats import CIRCLE, TFLITE
from bnfold.io.reader import read_model
from bnfold.io.writer import BUFFER_LOCATION, OUTSIDE
from conftest import (
    DATA,
    FIXTURES,
    TEST_RECIPES,
    build_recipe,
    fixture_input,
    has_offset_buffers,
    object_tree,
    run_litert,
    tree_diff,
    unpacked,
)

OFFSET_FIXTURE = "conv_buffer_offset.tflite"


def _has_offsets(path) -> bool:
    return has_offset_buffers(path)


@pytest.mark.parametrize("name", FIXTURES)
def test_same_format_same_layout_is_lossless(name, tmp_path):
    src = DATA / name
    model = read_model(str(src))
    out = tmp_path / name
    save_model(model, str(out), model.format, external=_has_offsets(src))
    assert tree_diff(object_tree(src), object_tree(out)) == []
    assert _has_offsets(out) == _has_offsets(src)


@pytest.mark.parametrize("name", [n for n in FIXTURES if n.endswith(".tflite")])
def test_tflite_to_circle_and_back_is_lossless(name, tmp_path):
    src = DATA / name
    circle = tmp_path / "model.circle"
    back = tmp_path / "back.tflite"
    save_model(read_model(str(src)), str(circle), CIRCLE, external=_has_offsets(src))
    assert read_model(str(circle)).format is CIRCLE
    save_model(read_model(str(circle)), str(back), TFLITE, external=_has_offsets(src))
    assert tree_diff(object_tree(src), object_tree(back)) == []


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("external", [False, True])
def test_written_model_runs_bit_identical_in_litert(name, external, tmp_path):
    src = DATA / name
    out = tmp_path / (name.rsplit(".", 1)[0] + ".tflite")
    save_model(read_model(str(src)), str(out), TFLITE, external=external)
    assert _has_offsets(out) == external
    x = fixture_input(name)
    for want, got in zip(run_litert(src, [x]), run_litert(out, [x])):
        assert want.dtype == got.dtype and want.shape == got.shape
        assert np.array_equal(want, got)


def test_offset_fixture_reads_and_writes_both_layouts(tmp_path):
    src = DATA / OFFSET_FIXTURE
    model = read_model(str(src))
    filt = next(t for t in model.graphs[0].tensors if t.is_const and t.data.ndim == 4)
    assert filt.buffer.source is not None and filt.data.shape[0] == 6  # read from after the flatbuffer
    inline = tmp_path / "inline.tflite"
    save_model(model, str(inline), TFLITE, external=False)
    assert not _has_offsets(inline)
    meta = {m.name: bytes(m.buffer.data) for m in read_model(str(inline)).metadata}
    assert BUFFER_LOCATION not in meta  # no longer true once the weights are inline
    offsets = tmp_path / "offsets.tflite"
    save_model(read_model(str(inline)), str(offsets), TFLITE, external=True)
    meta = {m.name: bytes(m.buffer.data) for m in read_model(str(offsets)).metadata}
    assert meta[BUFFER_LOCATION] == OUTSIDE

    def graph_part(path):
        keep = ("model.subgraphs", "model.operatorCodes", "model.signatureDefs")
        return [x for x in object_tree(path) if x[0].startswith(keep)]

    assert tree_diff(graph_part(src), graph_part(offsets)) == []
    for before, after in zip(read_model(str(src)).graphs[0].tensors, read_model(str(offsets)).graphs[0].tensors):
        assert (before.data is None) == (after.data is None)
        if before.data is not None:
            assert np.array_equal(before.data, after.data)


def test_constants_are_zero_copy_views_of_the_input():
    model = read_model(str(DATA / "resnet_v2_mini.tflite"))
    consts = [t for t in model.graphs[0].tensors if t.is_const]
    assert consts
    for t in consts:
        assert not t.data.flags.writeable  # a view of the read-only mapping
        assert t.buffer.source is not None
        assert np.shares_memory(t.buffer.data, model.source.array)


def test_multi_subgraph_signatures_and_metadata_round_trip(tmp_path):
    first = build_recipe("Foundation_While_000", tmp_path)
    for fmt, ext in ((TFLITE, ".tflite"), (CIRCLE, ".circle")):
        again = tmp_path / f"again{ext}"
        save_model(read_model(str(first)), str(again), fmt)
        back = tmp_path / f"back_{ext[1:]}.tflite"
        save_model(read_model(str(again)), str(back), TFLITE)
        assert tree_diff(object_tree(first), object_tree(back)) == []
    model = read_model(str(first))
    assert len(model.graphs) == 3 and [g.name for g in model.graphs] == ["main", "cond", "body"]
    assert model.signatures[0].key == b"serving_default"
    assert {m.name: bytes(m.buffer.data) for m in model.metadata}[b"min_runtime_version"] == b"1.14.0"
    x = np.array([[1.0, -2.0, 3.0, 0.5, -0.25]], dtype=np.float32)
    (y,) = run_litert(first, [x])
    np.testing.assert_array_equal(y, x * np.array([1.5, -2.0, 0.5, 3.0, -1.0], dtype=np.float32) ** 3)


@pytest.mark.parametrize("ext", [".tflite", ".circle"])
def test_shipped_looking_model_keeps_custom_options_and_sparsity_through_a_fold(ext, tmp_path):
    """The chef's custom_options (a flexbuffer map) and sparsity, written and read back, and kept
    when a pass rewrites the model around them (the fuzzing seed tests/data/recipes/Shipped_000)."""
    from flatbuffers import flexbuffers

    from bnfold import api

    src = build_recipe("Shipped_000", tmp_path, ext, directory=TEST_RECIPES)
    model = read_model(str(src))
    assert api.apply_passes(model).folds and model.changed
    out = tmp_path / f"out{ext}"
    save_model(model, str(out), model.format)
    back = read_model(str(out))
    assert [g.name for g in back.graphs] == ["main", "cond", "body"] and len(back.metadata) == 2
    (custom,) = [op for op in back.graphs[0].ops if op.kind == "CUSTOM"]
    assert flexbuffers.Loads(bytes(custom.record.customOptions)) == {
        "filter_height": 2,
        "filter_width": 2,
        "include_batch_in_index": False,
        "padding": "SAME",
        "stride_height": 2,
        "stride_width": 2,
    }
    (sparse,) = [t for t in back.graphs[0].tensors if t.name == "sparse_weights"]
    csr = sparse.record.sparsity.dimMetadata[1]
    assert sparse.shape == (8, 64) and sparse.buffer.nbytes == 16 * 4
    assert list(csr.arraySegments.values) == list(range(0, 17, 2)) and len(csr.arrayIndices.values) == 16


@pytest.mark.parametrize(
    "old, new, words",
    [
        ("dense_size = 8", "dense_size = 1000000000000", "sparsity does not fit its schema"),
        ("traversal_order = [0, 1]", "traversal_order = [0, 1000000000000]", "sparsity does not fit its schema"),
        (
            "array_indices = [0, 29,",
            "array_indices = [0, 29, " + "0, " * 600,
            "more than its shape",
        ),  # 616 values for 512 elements
    ],
)
def test_sparsity_a_schema_cannot_hold_is_one_line(old, new, words, tmp_path, capsys):
    """Values beyond int32, or more stored values than the dense shape holds, found by
    scripts/fuzz.py (an internal error before): exit 2, one line."""
    from bnfold import cli

    text = (TEST_RECIPES / "Shipped_000.toml").read_text()
    assert old in text
    recipe = tmp_path / "r.toml"
    recipe.write_text(text.replace(old, new, 1))
    code = cli.run(["recipe", "build", str(recipe), str(tmp_path / "o.tflite")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0], lines
    assert not (tmp_path / "o.tflite").exists()


def test_circle_only_operator_round_trips_as_circle_and_is_refused_as_tflite(tmp_path):
    src = build_recipe("Foundation_InstanceNorm_000", tmp_path)
    again = tmp_path / "again.circle"
    save_model(read_model(str(src)), str(again), CIRCLE)
    assert tree_diff(object_tree(src), object_tree(again)) == []
    assert read_model(str(again)).op_counts()["INSTANCE_NORM"] == 1
    target = tmp_path / "no.tflite"
    with pytest.raises(ModelError, match="INSTANCE_NORM does not exist in tflite"):
        save_model(read_model(str(src)), str(target), TFLITE)
    assert not target.exists()
    assert not list(tmp_path.glob(".bnfold-*"))  # no temporary left behind


def _pack(record, path) -> None:
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    builder.Finish(record.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))


def test_fields_the_ir_does_not_model_survive_and_only_those_tables_are_unpacked(tmp_path):
    """The reader lifts plain tables through accessors and unpacks in full only tables holding
    more than the IR models: here a variable tensor, a tensor with has_rank, one with no shape
    vector, an op with custom options and one with a present but empty intermediates vector."""
    record = unpacked(DATA / "resnet_v2_mini.tflite")
    sg = record.subgraphs[0]
    for t in sg.tensors:
        t.hasRank = False  # which the TFLite converter sets on every tensor: plain tensors otherwise
    activations = [i for i, t in enumerate(sg.tensors) if record.buffers[t.buffer].data is None][:3]
    sg.tensors[activations[0]].isVariable = True
    sg.tensors[activations[1]].hasRank = True
    sg.tensors[activations[2]].shape = None
    sg.operators[0].customOptions = np.frombuffer(b"opaque", dtype=np.uint8)
    sg.operators[1].intermediates = np.zeros(0, dtype=np.int32)
    src = tmp_path / "extras.tflite"
    _pack(record, src)

    model = read_model(str(src))
    graph = model.graphs[0]
    assert [i for i, t in enumerate(graph.tensors) if t.record is not None] == activations
    assert [i for i, op in enumerate(graph.ops) if op.record is not None] == [0, 1]
    assert graph.tensors[activations[0]].record.isVariable and bytes(graph.ops[0].record.customOptions) == b"opaque"
    out = tmp_path / "out.tflite"
    save_model(model, str(out), TFLITE)
    assert tree_diff(object_tree(src), object_tree(out)) == []
    again = unpacked(out).subgraphs[0]
    assert again.tensors[activations[2]].shape is None and again.operators[1].intermediates.size == 0


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(
    "name",
    FIXTURES
    + [
        "Foundation_While_000",
        "Foundation_InstanceNorm_000",
        "Quant_Conv_BN_Relu_000",
        "Net_TConv_BN_000",
        "Net_Forward_FC_Flatten_000",
    ],
)
def test_reader_lifts_what_the_object_api_unpacks(name, tmp_path):
    """The reader reads fields straight from the bytes (layout probed from the accessors); every
    value it lifts equals the generated object API's unpack of the same table."""
    path = DATA / name if name in FIXTURES else build_recipe(name, tmp_path)
    model, record = read_model(str(path)), unpacked(path)
    fmt = model.format
    for graph, sg in zip(model.graphs, record.subgraphs, strict=True):
        for t, rec in zip(graph.tensors, sg.tensors, strict=True):
            assert t.name.encode("utf-8", "surrogateescape") == (rec.name or b"")
            assert (fmt.dtype_codes[t.dtype], model.buffers.index(t.buffer)) == (rec.type, rec.buffer)
            assert t.shape == tuple(rec.shape if rec.shape is not None else ())
            assert t.shape_signature == (None if rec.shapeSignature is None else tuple(rec.shapeSignature))
            assert (t.quantization is None) == (rec.quantization is None)
            if rec.quantization is not None:
                assert all(_same(v, getattr(t.quantization, k)) for k, v in vars(rec.quantization).items())
        for op, rec in zip(graph.ops, sg.operators, strict=True):
            assert [graph.tensors.index(x) if x is not None else -1 for x in op.inputs] == list(rec.inputs)
            assert [graph.tensors.index(x) for x in op.outputs] == list(rec.outputs)
            if rec.builtinOptions is None:
                assert op.options is None
            else:
                assert op.options.type == type(rec.builtinOptions).__name__[:-1]
                assert op.options.fields().keys() == vars(rec.builtinOptions).keys()
                assert all(_same(v, getattr(op.options, k)) for k, v in vars(rec.builtinOptions).items())
    for b, rec in zip(model.buffers, record.buffers, strict=True):
        if rec.offset <= 1:
            assert _same(b.data, rec.data) if rec.data is not None else b.data is None
