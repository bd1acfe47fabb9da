"""The onert backend: runs a model in ONE's own runtime (pip `onert`, its cpu backend, one thread unless
NUM_THREADS says otherwise).

onert loads a model from a file, so the model is written (in its own format: onert reads .circle
and .tflite alike) to a temporary directory that lives as long as the session. onert compiles a
session on its first run, for the input shapes it is given: a model it loads but cannot compile
(an operator with no cpu kernel) fails there, as a RunFailed, like a LiteRT kernel that refuses to
run. Its native code prints why a load failed to file descriptor 2; that line is captured and
becomes the message, so nothing else reaches the user's stderr.

`onert` ships one wheel (CPython 3.11, x86_64 Linux): where it is not installed, `missing()` says
so, `--backend onert` is a usage error and "auto" goes on without it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import numpy as np

from ..errors import ModelError, RunFailed, WriteFailed
from ..io.atomic import reason
from ..io.formats import format_of
from ..io.writer import serialize
from ..ir.model import Model


@cache
def missing() -> str | None:
    """Why onert cannot be used here (not installed, or its native library does not load), or None."""
    try:
        import onert.infer  # noqa: F401
    except Exception as e:  # ImportError, or an OSError from its shared library
        return f"onert is not installed ({type(e).__name__}: {e}; pip install 'bnfold[onert]', CPython 3.11 x86_64)"
    return None


class Session:
    """One model loaded in onert, run repeatedly."""

    def __init__(self, model: Model):
        absent = missing()
        if absent:
            raise ModelError(absent)
        from onert import infer

        # onert reads its settings from the environment as a session is made: one thread unless the user
        # says otherwise, as LiteRT runs here; its default pool ran TICO's MobileNetV3-Small 9x slower on a
        # busy 2-core machine (168 ms a run against 18 ms)
        os.environ.setdefault("NUM_THREADS", "1")
        self._dir = tempfile.mkdtemp(prefix="bnfold-onert-")
        weakref.finalize(self, shutil.rmtree, self._dir, True)
        fmt = format_of(model)
        path = Path(self._dir) / f"model{fmt.extension}"
        try:
            with open(path, "wb") as out:
                serialize(model, out, fmt)
        except OSError as e:  # a full disk, a file-size limit: the check's copy, not the user's file
            raise WriteFailed(f"cannot write the model's copy for onert: {reason(e)}", str(path)) from None
        with _native_stderr_captured() as said:
            try:
                self._session = infer.session(str(path), "cpu")
            except Exception as e:  # OnertError: NNFW_STATUS_ERROR, the reason printed before it
                raise ModelError(f"onert cannot load the model: {_reason(said(), e)}") from None
        self.input_count = self._session.session.input_size()
        self._shapes: list[tuple[int, ...]] | None = None  # the input shapes onert last ran

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if len(inputs) != self.input_count:
            raise ModelError(f"model has {self.input_count} inputs, {len(inputs)} given")
        arrays = [np.asarray(x, order="C") for x in inputs]
        shapes = [x.shape for x in arrays]
        # onert compiles (and may print why it cannot) on the first run and for new shapes; later runs
        # go straight to it, so a timed loop measures onert, not the capture
        capture = _native_stderr_captured() if shapes != self._shapes else contextlib.nullcontext(lambda: "")
        with capture as said:
            try:
                self._prepare_for_the_model_shapes(shapes)
                outputs = self._session.infer(arrays)
            except Exception as e:  # compiling for these shapes, or a kernel, failed: not a difference
                raise RunFailed(f"onert failed to run the model: {_reason(said(), e)}") from None
        self._shapes = shapes
        return [np.array(o, copy=True) for o in outputs]  # onert owns the output buffers

    def _prepare_for_the_model_shapes(self, shapes: list[tuple[int, ...]]) -> None:
        """Compile a session not yet compiled whose inputs have the model's own shapes without its
        infer()'s step that sets each input's tensorinfo again: onert 0.1.0's setter cannot take
        the type its getter names for a uint8 input ("Cannot convert string to NNFW_TYPE:
        'uint8'", then a NameError in its handler), so no model with a uint8 input would run.
        Other shapes take infer()'s own way."""
        session = self._session
        if getattr(session, "_prepared", True):
            return
        infos = session.get_inputs_tensorinfo()
        if any(tuple(info.dims[: info.rank]) != shape for info, shape in zip(infos, shapes)):
            return
        from onert.native.libnnfw_api_pybind import prepare_config

        session.session.set_prepare_config(prepare_config.ENABLE_INTERNAL_OUTPUT_ALLOC)
        session.session.prepare()
        session._prepared = True


def _reason(printed: str, error: Exception) -> str:
    """onert's own words for a failure: the last line its native code printed, else the exception."""
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    if lines:
        return lines[-1].removeprefix("Fail to load model: ")
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@contextlib.contextmanager
def _native_stderr_captured() -> Iterator[Callable[[], str]]:
    """File descriptor 2 goes to a temporary file while onert works; yields a function returning
    what was written there (onert's C++ code prints a load failure's reason, not the exception)."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)

        def said() -> str:  # fd 2 shares this file's offset: reading leaves it at the end
            capture.seek(0)
            return capture.read().decode("utf-8", "replace")

        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
