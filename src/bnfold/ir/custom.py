"""A CUSTOM operator's name and options: the custom code of its opcode, and the flexbuffer map
the TensorFlow converter stores as its custom options (TF's attributes: `adj_x`, `transpose_a`,
`T`, ...). Read by the resolve_customop_* passes and the reference interpreter's kernels for the
TensorFlow ops they resolve."""

from __future__ import annotations

from .graph import Op


def custom_code(op: Op) -> str | None:
    """The custom code of a CUSTOM op ("AddV2"), else None."""
    if op.kind != "CUSTOM" or not op.opcode.custom_code:
        return None
    return op.opcode.custom_code.decode("utf-8", errors="replace")


def custom_options(op: Op) -> dict | None:
    """The op's custom options as a dict, {} when it has none, None when they are no flexbuffer map
    (or another format than flexbuffers)."""
    record = op.record
    raw = getattr(record, "customOptions", None)
    if raw is None or len(raw) == 0:
        return {}
    if getattr(record, "customOptionsFormat", 0) != 0:  # 0 = FLEXBUFFERS, the only format there is
        return None
    from flatbuffers import flexbuffers  # only for a model holding custom options

    try:
        value = flexbuffers.Loads(bytes(bytearray(int(b) & 0xFF for b in raw)))
    except Exception:  # a malformed flexbuffer: any error the decoder raises means "not readable"
        return None
    return value if isinstance(value, dict) else None
