"""Unchanged input bytes copied into the output file, in a thread beside the writer.

Writing a folded model is two kinds of work of similar size: computing the folded weights (numpy,
block by block) and copying the unchanged buffers from the input file to the output (the kernel
copies: no byte passes through Python). Both release the GIL, so on two cores they run at once:
the writer hands every copy, with the output offset it goes to, to one `Copier` before it
starts, writes everything else itself and seeks past the regions the copier fills.

The copier splices through a 1 MB pipe of its own rather than calling `os.copy_file_range`: on a
file system without a copy of its own (ext4) that copies through a 64 kB pipe, and each 64 kB
written takes the output's inode lock, which the writer's own writes hold a megabyte at a time;
the two threads then mostly wait for each other. ResNet50V2's data phase (65 MB copied, 37 MB
computed), median of 24 alternating in-process runs: 66 ms in sequence, 51 ms with
copy_file_range in the thread, 44 ms spliced. (An unchanged model, one copy of the whole file,
is copied in sequence with `copy_range`: spliced in the copier, the copy took ~5 ms less but the
rename after it waited longer for the writeback it starts, and whole runs were slower: 0.376 s
against 0.351 s, median of 21 alternating pairs.)

The writer ends the copier (`finish`) before the output file is closed or discarded, however the
write ends (complete, an error, Ctrl-C, SIGTERM): a descriptor closed under a running copy could
be reused by another open and receive the copy's bytes. An error in the copier (ENOSPC, EIO) is
raised in the writer's thread, where io/atomic.py makes it the usual one-line error.
"""

from __future__ import annotations

import errno
import os
import threading

try:
    import fcntl
except ImportError:  # no pipes to size here (nor copy_file_range: the writer makes no copier)
    fcntl = None  # type: ignore[assignment]  # a platform without it (Windows)

# the most the copier copies between looks at `cancelled`: a cancelled copier stops after it (~10 ms)
STEP = 16 << 20
PIPE = 1 << 20  # the copier's pipe: the most each of its writes into the output holds the inode lock


def copy_range(src: int, dst: int, offset: int, n: int, at: int | None = None) -> int:
    """Copy `n` bytes at `offset` of `src` to `dst` (at offset `at`, or at its position) with
    copy_file_range, as far as it goes; returns the bytes copied (0: it cannot here, e.g. another
    file system, no copy_file_range here): the caller writes the rest. An error after some bytes
    is raised."""
    copy, done = getattr(os, "copy_file_range", None), 0
    try:
        while copy is not None and done < n:
            step = copy(src, dst, n - done, offset + done, None if at is None else at + done)
            if step <= 0:
                break
            done += step
    except OSError:
        if done:
            raise
    return done


def copy_file(out, source) -> None:
    """The whole input file (`source`, as the reader mapped it) into the open binary file `out`, in
    sequence (copied by the kernel where it can, else written from the mapping): the output of a
    model nothing changed (io/atomic.py: save_model)."""
    out.flush()
    try:
        dst = out.fileno()
    except (OSError, ValueError):  # no file: io.BytesIO and the like
        dst = None
    done = 0 if dst is None else copy_range(source.fileno(), dst, 0, source.size)
    out.write(memoryview(source.array[done:]))


class Copier:
    """One background thread copying `copies`, (input offset, size, output offset) each, from the
    input file `src` (mapped as `source`, for what the kernel does not copy) to the output `dst`."""

    def __init__(self, src: int, dst: int, source: memoryview, copies: list[tuple[int, int, int]]):
        self.src, self.dst, self.source = src, dst, source
        self.error: Exception | None = None
        self.cancelled = False
        self.pipe: tuple[int, int] | None = None  # the copier's own, made and closed in its thread
        self.ended = threading.Event()  # set once the copier touches no descriptor any more
        self.thread = threading.Thread(target=self._run, args=(copies,), name="bnfold-copier", daemon=True)
        self.thread.start()

    def _run(self, copies: list[tuple[int, int, int]]) -> None:
        try:
            self.pipe = _pipe()
            for offset, n, at in copies:
                for start in range(0, n, STEP):
                    if self.cancelled:
                        return
                    self._copy(offset + start, min(STEP, n - start), at + start)
        except Exception as e:  # raised in the writer's thread by finish()
            self.error = e
        finally:
            self._drop_pipe()
            self.ended.set()

    def _copy(self, offset: int, n: int, at: int) -> None:
        """Spliced, or else copy_file_range'd, or else (another file system...) written from the
        input's mapping."""
        done = self._splice(offset, n, at)
        done += copy_range(self.src, self.dst, offset + done, n - done, at + done)
        rest, at = self.source[offset + done : offset + n], at + done
        while rest:
            written = os.pwrite(self.dst, rest, at)
            rest, at = rest[written:], at + written

    def _splice(self, offset: int, n: int, at: int) -> int:
        """Copy through the pipe as far as splice goes; returns the bytes copied (0: it cannot
        here, and the pipe is dropped with whatever it holds). An error after some bytes is raised."""
        if self.pipe is None:
            return 0
        r, w = self.pipe
        done = 0
        try:
            while done < n:
                got = os.splice(self.src, w, min(PIPE, n - done), offset_src=offset + done)
                if got <= 0:
                    raise OSError(errno.EIO, "the input ended early")
                while got:  # empty the pipe into the output
                    step = os.splice(r, self.dst, got, offset_dst=at + done)
                    if step <= 0:
                        raise OSError(errno.EIO, "splice wrote nothing")
                    done, got = done + step, got - step
        except OSError:
            if done:
                raise
            self._drop_pipe()
        return done

    def _drop_pipe(self) -> None:
        if self.pipe is not None:
            for fd in self.pipe:
                os.close(fd)
            self.pipe = None

    def finish(self, *, cancel: bool = False) -> None:
        """Return once the copier has ended: every copy done, or with `cancel` the step under way.
        Then raise the copier's error, unless the write is abandoned anyway (`cancel`). An
        interrupt while waiting cancels the rest and is raised once the copier has ended."""
        self.cancelled = self.cancelled or cancel
        interrupt = None
        # waited for on an Event, not Thread.join: in Python 3.11 a join interrupted by a signal
        # can mark the thread stopped while it still runs
        while not self.ended.is_set():
            try:
                self.ended.wait()
            except BaseException as e:  # Ctrl-C or SIGTERM (io/atomic.py) while waiting
                self.cancelled = True
                interrupt = interrupt or e
        self.thread.join()  # it has only to return
        if interrupt is not None:
            raise interrupt
        if self.error is not None and not cancel:
            raise self.error


def _pipe() -> tuple[int, int] | None:
    """A pipe of PIPE bytes, or None when splice would not gain (no fcntl, a smaller limit)."""
    if fcntl is None or not hasattr(os, "splice"):
        return None
    try:
        r, w = os.pipe()
    except OSError:  # no descriptor left (RLIMIT_NOFILE): copy_file_range needs none
        return None
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE)
    except OSError:  # over /proc/sys/fs/pipe-max-size or the user's pipe quota
        os.close(r)
        os.close(w)
        return None
    return r, w
