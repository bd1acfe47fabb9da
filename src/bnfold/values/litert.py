"""The LiteRT backend: runs a model in the real runtime.

Circle files that use only TFLite operators run after being written as TFLite in memory.
`resolver` picks LiteRT's kernels: "default" is what LiteRT ships (XNNPACK applied), "plain"
the builtin kernels without default delegates (what value checks use, so both models of a
comparison run the same kernels), "reference" the reference kernels.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys

import numpy as np

from ..errors import ModelError, RunFailed
from ..io.formats import TFLITE
from ..io.writer import serialize
from ..ir.model import Model

RESOLVERS = {"default": "AUTO", "plain": "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "reference": "BUILTIN_REF"}


def tflite_bytes(model: Model) -> bytes:
    """The model as TFLite bytes (refuses Circle-only content with a ModelError)."""
    out = io.BytesIO()
    serialize(model, out, TFLITE)  # from Circle, this writes TFLite's Model.version (3), as LiteRT needs
    return out.getvalue()


def interpreter(content: bytes, *, resolver: str = "plain", threads: int | None = 1):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = getattr(OpResolverType, RESOLVERS[resolver])
    try:
        with _native_stderr_silenced():
            interp = Interpreter(model_content=content, experimental_op_resolver_type=kind, num_threads=threads)
            interp.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        raise ModelError(f"LiteRT cannot load the model: {_message(e)}") from None
    return interp


def _message(error: Exception) -> str:
    """The first line of LiteRT's error, with the arguments of a failed C++ check elided
    ("ReduceGeneric<T>(...) was not true.") and the messages it glues together parted: a space
    before the "Node number N" it glues on, "; " after a message ending "in node #N"."""
    text = re.sub(r"\((?:[^()]|\([^()]*\))*\)(?= was not true)", "(...)", str(error).strip().splitlines()[0])
    text = re.sub(r"(in node #\d+)(?=[A-Z])", r"\1; ", text)
    return re.sub(r"(?<=\S)Node number", " Node number", text)


@contextlib.contextmanager
def _native_stderr_silenced():
    """File descriptor 2 points at /dev/null while LiteRT loads a model: its C++ logging writes
    there directly ("INFO: Created TensorFlow Lite XNNPACK delegate for CPU.", and the reason for a
    failure before the exception that carries it), which a CI step failing on any stderr line
    would trip on. bnfold says what matters through its own messages."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def hazard(model: Model) -> str | None:
    """Why LiteRT must not be handed `model` (it would crash the process), or None.

    LiteRT 2.3's DEPTHWISE_CONV_2D kernel dereferences a bias that a two-input operator does
    not have (a segmentation fault, not an error).
    """
    for gi, graph in enumerate(model.graphs):
        for index, op in enumerate(graph.ops):
            if op.kind == "DEPTHWISE_CONV_2D" and len(op.inputs) < 3:
                return f"LiteRT cannot run DEPTHWISE_CONV_2D without a bias input (subgraph {gi} op {index})"
    return None


def model_interpreter(model: Model, *, resolver: str = "plain"):
    """A loaded interpreter for `model`; a ModelError instead of handing LiteRT what crashes it."""
    reason = hazard(model)
    if reason:
        raise ModelError(reason)
    return interpreter(tflite_bytes(model), resolver=resolver)


def run(model: Model, inputs: list[np.ndarray], *, resolver: str = "plain") -> list[np.ndarray]:
    """Outputs of subgraph 0 for `inputs` (in the subgraph's input order)."""
    return invoke(model_interpreter(model, resolver=resolver), inputs)


def invoke(interp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise ModelError(f"model has {len(details)} inputs, {len(inputs)} given")
    try:
        for d, x in zip(details, inputs):
            x = np.asarray(x, dtype=d["dtype"])
            if tuple(d["shape"]) != x.shape:
                interp.resize_tensor_input(d["index"], x.shape)
                interp.allocate_tensors()
            interp.set_tensor(d["index"], x)
        interp.invoke()
    except (ValueError, RuntimeError) as e:  # loaded, but a kernel refused to run: not a difference
        raise RunFailed(f"LiteRT failed to run the model: {_message(e)}") from None
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
