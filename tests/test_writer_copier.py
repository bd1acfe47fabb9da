"""The background copier (io/copier.py): the bytes are those of the sequential write, and the
copier has ended before the output file is closed or discarded, whatever ends the write.

The fixtures' unchanged buffers are mostly under the 64 kB the writer copies from; the tests
lower that threshold (and the copier's step) so every model here has many copies, several steps
long, interleaved with computed and written buffers."""

from __future__ import annotations

import errno
import io
import os
import signal
import threading
import time

import pytest

from bnfold import cli
from bnfold.api import apply_passes
from bnfold.errors import WriteFailed
from bnfold.io import copier, writer
from bnfold.io.atomic import save_model
from bnfold.io.reader import read_model
from bnfold.io.writer import serialize
from conftest import DATA, build_recipe

FIXTURES = sorted(p.name for p in DATA.glob("*.*") if p.suffix in (".tflite", ".circle"))
FIXTURES += sorted("zoo/" + p.name for p in (DATA / "zoo").glob("*.tflite"))
RECIPES = ["Net_Conv_Add_Mul_000", "Net_DwConv_BN_000", "Net_FC_BN_000", "Net_Conv_BN_SharedWeights_000"]
FOLDED = DATA / "resnet_v2_mini.tflite"  # folded by the default passes, with buffers to copy


@pytest.fixture
def many_copies(monkeypatch):
    """Copy every buffer of 64 bytes or more, in steps of 1000 bytes; returns the copiers made."""
    monkeypatch.setattr(writer._Sink, "COPY_THRESHOLD", 64)
    monkeypatch.setattr(copier, "STEP", 1000)
    made = []

    class Counted(copier.Copier):
        def __init__(self, src, dst, source, copies):
            made.append(self)
            self.copies = copies
            super().__init__(src, dst, source, copies)

    monkeypatch.setattr(writer, "Copier", Counted)
    return made


def _copiers_running() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "bnfold-copier"]


def _folded(path):
    model = read_model(str(path))
    apply_passes(model)
    return model


def _in_memory(model, external: bool) -> bytes:
    """The sequential write: an in-memory output has no file for a copier."""
    memory = io.BytesIO()
    serialize(model, memory, model.format, external=external)
    return memory.getvalue()


def _inputs(tmp_path):
    return [DATA / name for name in FIXTURES] + [build_recipe(name, tmp_path) for name in RECIPES]


@pytest.mark.parametrize("external", [False, True], ids=["standard", "external-buffers"])
def test_background_copies_give_the_bytes_of_the_sequential_write(tmp_path, many_copies, external):
    inputs = _inputs(tmp_path)
    for path in inputs:
        model = _folded(path)
        out = tmp_path / f"out{path.suffix}"
        save_model(model, str(out), model.format, external=external)
        assert out.read_bytes() == _in_memory(model, external), path
    print(len(many_copies), len(inputs))
    assert len(many_copies) >= len(inputs) * 3 // 4  # the others have no buffer left to copy
    assert _copiers_running() == []


def _kernel_refuses(error: int):
    def refuse(*_, **__):
        raise OSError(error, os.strerror(error))

    return refuse


REAL = {"splice": os.splice, "copy_file_range": os.copy_file_range}
KERNEL = {  # how the kernel may answer a copy: what the copier must get right
    "EXDEV": lambda real: _kernel_refuses(errno.EXDEV),
    "EINVAL": lambda real: _kernel_refuses(errno.EINVAL),
    "nothing copied": lambda real: lambda *_, **__: 0,
    "a few bytes a call": lambda real: lambda src, dst, n, *at, **kw: real(src, dst, min(n, 100), *at, **kw),
}


@pytest.mark.parametrize("copy", ["splice", "copy_file_range", "both"])
@pytest.mark.parametrize("kernel", list(KERNEL))
def test_what_the_kernel_does_not_copy_the_copier_copies_otherwise(tmp_path, many_copies, monkeypatch, kernel, copy):
    """The copier splices; where it cannot, it copy_file_ranges; where neither goes, it writes."""
    model = _folded(FOLDED)
    want = _in_memory(model, False)
    for name in REAL if copy == "both" else (copy,):
        monkeypatch.setattr(os, name, KERNEL[kernel](REAL[name]))
    save_model(model, str(tmp_path / "o.tflite"), model.format)
    assert many_copies and (tmp_path / "o.tflite").read_bytes() == want


def _fails_after_some_bytes(monkeypatch, name: str, error: int) -> None:
    """os.`name` copies a little, then fails with `error` (a disk filling up)."""
    real, calls = REAL[name], []

    def failing(src, dst, n, *at, **kw):
        calls.append(n)
        if len(calls) > 3:
            raise OSError(error, os.strerror(error))
        return real(src, dst, min(n, 10), *at, **kw)

    monkeypatch.setattr(os, name, failing)


@pytest.mark.parametrize("copy", ["splice", "copy_file_range"])
@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO])
def test_an_error_in_the_copier_is_the_usual_one_line_error(tmp_path, capsys, many_copies, monkeypatch, error, copy):
    if copy != "splice":
        monkeypatch.setattr(os, "splice", _kernel_refuses(errno.EINVAL))
    _fails_after_some_bytes(monkeypatch, copy, error)
    out = tmp_path / "o.tflite"
    code = cli.run(["optimize", str(FOLDED), str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 5 and lines == [f"bnfold: error: {out}: cannot write: {os.strerror(error)}"]
    assert many_copies and os.listdir(tmp_path) == [] and _copiers_running() == []


def test_a_failing_fallback_write_is_raised_too(tmp_path, many_copies, monkeypatch):
    for name in REAL:
        monkeypatch.setattr(os, name, _kernel_refuses(errno.EXDEV))
    monkeypatch.setattr(os, "pwrite", _kernel_refuses(errno.ENOSPC))  # only the copier uses pwrite
    model = _folded(FOLDED)
    with pytest.raises(WriteFailed, match="No space left on device"):
        save_model(model, str(tmp_path / "o.tflite"), model.format)
    assert many_copies and os.listdir(tmp_path) == [] and _copiers_running() == []


def test_the_copier_splices_through_a_pipe_of_its_own_and_closes_it(tmp_path, many_copies, monkeypatch):
    spliced = []
    monkeypatch.setattr(os, "splice", lambda *a, **kw: spliced.append(a[2]) or REAL["splice"](*a, **kw))
    model = _folded(FOLDED)
    fds = set(os.listdir("/proc/self/fd"))
    save_model(model, str(tmp_path / "o.tflite"), model.format)
    assert sum(spliced) == 2 * sum(n for _, n, _ in many_copies[0].copies)  # into the pipe, out of it
    assert many_copies[0].pipe is None and set(os.listdir("/proc/self/fd")) == fds
    assert (tmp_path / "o.tflite").read_bytes() == _in_memory(model, False)


def _slow_kernel(monkeypatch, seconds: float = 0.05) -> None:
    def slowed(real):
        def slow(*args, **kwargs):
            time.sleep(seconds)
            return real(*args, **kwargs)

        return slow

    for name, real in REAL.items():
        monkeypatch.setattr(os, name, slowed(real))


def test_the_write_returns_only_once_the_copier_has_ended(tmp_path, many_copies, monkeypatch):
    """Fails if the copier is not joined: its copies would still be under way."""
    model = _folded(FOLDED)
    want = _in_memory(model, False)
    _slow_kernel(monkeypatch, 0.002)
    out = tmp_path / "o.tflite"
    save_model(model, str(out), model.format)
    assert _copiers_running() == [] and not many_copies[0].thread.is_alive()
    assert out.read_bytes() == want


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_the_copier_before_the_file_is_discarded(tmp_path, capsys, many_copies, monkeypatch, signum):
    _slow_kernel(monkeypatch)
    real, closed = writer._Sink.write_buffer, []

    def signalled(self, buffer):
        if not self.copied(buffer):  # the writer's own work, the copier busy meanwhile
            os.kill(os.getpid(), signum)
        real(self, buffer)

    real_close = os.close

    def close(fd):  # the temporary file's descriptor is closed only once the copier has ended
        if threading.current_thread() is threading.main_thread():  # not the copier's own pipe
            closed.append(_copiers_running())
        real_close(fd)

    monkeypatch.setattr(writer._Sink, "write_buffer", signalled)
    monkeypatch.setattr(os, "close", close)
    started = time.monotonic()
    code = cli.run(["optimize", str(FOLDED), str(tmp_path / "o.tflite"), "-q"])
    assert code == 128 + signum and "interrupted" in capsys.readouterr().err
    assert many_copies and closed and all(running == [] for running in closed)
    assert os.listdir(tmp_path) == []
    assert time.monotonic() - started < 2  # cancelled, not waited for (every copy: ~0.05 s a step)


def test_an_interrupt_while_waiting_for_the_copier_still_waits(tmp_path, many_copies, monkeypatch):
    """A second Ctrl-C, while the writer waits for the copier: the copier is cancelled and waited
    for, then the interrupt goes on."""
    _slow_kernel(monkeypatch)
    real_wait, waits = threading.Event.wait, []

    def interrupted_once(self, *args, **kwargs):
        if many_copies and self is many_copies[0].ended:
            waits.append(self.is_set())
            if len(waits) == 1:
                raise KeyboardInterrupt
        return real_wait(self, *args, **kwargs)

    model = _folded(FOLDED)
    monkeypatch.setattr(threading.Event, "wait", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        save_model(model, str(tmp_path / "o.tflite"), model.format)
    assert waits == [False, False] and many_copies[0].cancelled and many_copies[0].ended.is_set()
    assert _copiers_running() == [] and os.listdir(tmp_path) == []


def test_without_a_pipe_the_copier_uses_copy_file_range(tmp_path, many_copies, monkeypatch):
    ranged = []
    monkeypatch.setattr(os, "pipe", _kernel_refuses(errno.EMFILE))
    monkeypatch.setattr(os, "copy_file_range", lambda *a: ranged.append(a[2]) or REAL["copy_file_range"](*a))
    model = _folded(FOLDED)
    save_model(model, str(tmp_path / "o.tflite"), model.format)
    assert sum(ranged) == sum(n for _, n, _ in many_copies[0].copies)
    assert (tmp_path / "o.tflite").read_bytes() == _in_memory(model, False)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_writer_waits_for_the_copier(tmp_path, capsys, many_copies, monkeypatch, signum):
    """The writer is done and waits; the signal comes then. (Python 3.11's Thread.join, so
    interrupted, can take a running thread for stopped: this failed with it.)"""
    _slow_kernel(monkeypatch)  # ~0.1 s a step of 1000 bytes: seconds of copies
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signum))
    timer.start()
    started = time.monotonic()
    try:
        code = cli.run(["optimize", str(FOLDED), str(tmp_path / "o.tflite"), "-q"])
    finally:
        timer.cancel()
    assert code == 128 + signum and "interrupted" in capsys.readouterr().err
    assert many_copies and many_copies[0].cancelled and _copiers_running() == [] and os.listdir(tmp_path) == []
    assert time.monotonic() - started < 3


UNCHANGED = DATA / "conv_relu_bn.tflite"  # left as it is by the default passes: copied whole


@pytest.mark.parametrize("kernel", list(KERNEL))
def test_an_unchanged_model_is_copied_in_sequence(tmp_path, many_copies, monkeypatch, kernel):
    """One copy of the whole file: copy_file_range, or the input's bytes written where it stops."""
    monkeypatch.setattr(os, "copy_file_range", KERNEL[kernel](REAL["copy_file_range"]))
    out = tmp_path / "o.tflite"
    assert cli.run(["optimize", str(UNCHANGED), str(out), "-q"]) == 0
    assert out.read_bytes() == UNCHANGED.read_bytes() and many_copies == []


def test_without_copy_file_range_everything_is_written(tmp_path, many_copies, monkeypatch):
    """A platform without it (macOS, Windows): no copier, the bytes written in sequence."""
    model = _folded(FOLDED)
    want = _in_memory(model, False)
    monkeypatch.delattr(os, "copy_file_range")
    for source, out in ((FOLDED, tmp_path / "folded.tflite"), (UNCHANGED, tmp_path / "unchanged.tflite")):
        assert cli.run(["optimize", str(source), str(out), "-q"]) == 0
    assert (tmp_path / "folded.tflite").read_bytes() == want and many_copies == []
    assert (tmp_path / "unchanged.tflite").read_bytes() == UNCHANGED.read_bytes()
