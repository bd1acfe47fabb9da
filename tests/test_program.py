"""The `bnfold` program's own start and end (bnfold/__main__.py, exits.leave): its modules load
without garbage collections, and it ends without the interpreter's teardown, with nothing its
caller can see changed: what it printed, its exit code, the atexit handlers' effects, the files in
the directory. Each test runs a real process, its stdout buffered as a user's is."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import DATA

FIXTURE = str(DATA / "bn_conv_valid.tflite")


def _buffered_env() -> dict:
    """The environment, with stdout buffered as a user's is (not PYTHONUNBUFFERED)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _program(setup: str, argv: list[str], tmp_path, **kwargs) -> subprocess.CompletedProcess:
    """`setup`, then the program (cli.entry) on `argv`, as a process of its own in `tmp_path`."""
    script = (
        textwrap.dedent(setup)
        + f"\nimport sys\nsys.argv = ['bnfold', *{argv!r}]\nfrom bnfold import cli\ncli.entry()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=_buffered_env(), stderr=subprocess.PIPE, timeout=120, **kwargs
    )


LATE_WORDS = """
import atexit, sys
sys.stdout.write("written first, still in the buffer\\n")
atexit.register(print, "an atexit handler ran")
"""


@pytest.mark.parametrize("into", ["file", "pipe"])
def test_stdout_holds_everything_printed_and_atexit_handlers_run(into, tmp_path):
    argv = ["optimize", FIXTURE, "o.tflite"]
    if into == "file":
        with open(tmp_path / "stdout.txt", "wb") as f:
            done = _program(LATE_WORDS, argv, tmp_path, stdout=f)
        out = (tmp_path / "stdout.txt").read_text()
        (tmp_path / "stdout.txt").unlink()
    else:
        done = _program(LATE_WORDS, argv, tmp_path, stdout=subprocess.PIPE)
        out = done.stdout.decode()
    lines = out.splitlines()
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert lines[0] == "written first, still in the buffer" and lines[-1] == "an atexit handler ran"
    assert "wrote o.tflite" in lines[-2]
    assert [p.name for p in tmp_path.iterdir()] == ["o.tflite"]  # no temporary file left


TEARDOWN_PROBE = """
import os
class Probe:
    def __del__(self):
        os.write(2, b"torn down\\n")
probe = Probe()
"""


def test_the_program_skips_the_teardown_a_library_caller_keeps(tmp_path):
    """The gain itself: the program's process ends before the interpreter frees its objects one
    by one; a Python program that runs the command line (cli.run) still exits as Python does."""
    assert _program(TEARDOWN_PROBE, ["passes"], tmp_path, stdout=subprocess.DEVNULL).stderr == b""
    library = TEARDOWN_PROBE + "\nimport sys\nfrom bnfold import cli\nsys.exit(cli.run(['passes']))\n"
    done = subprocess.run(
        [sys.executable, "-c", library], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120
    )
    assert (done.returncode, done.stderr) == (0, b"torn down\n")


RAISE_IN_OPTIMIZE = """
import signal
from bnfold import api, errors
def optimize_file(*args, **kwargs):
    raise {error}
api.optimize_file = optimize_file
"""


@pytest.mark.parametrize(
    "error, code",
    [
        ("errors.ModelError('not a model', 'm.tflite')", 1),
        ("errors.UsageError('no such file', 'm.tflite')", 2),
        ("RuntimeError('a bug')", 3),
        ("errors.CannotVerify('nothing runs it')", 4),
        ("errors.WriteFailed('disk full', 'o.tflite')", 5),
        ("errors.Interrupted(signal.SIGTERM)", 143),
        ("KeyboardInterrupt()", 130),
    ],
)
def test_exit_code_is_the_commands(error, code, tmp_path):
    done = _program(
        RAISE_IN_OPTIMIZE.format(error=error), ["optimize", FIXTURE, "o.tflite"], tmp_path, stdout=subprocess.PIPE
    )
    assert done.returncode == code and done.stdout == b""
    lines = done.stderr.decode().strip().splitlines()  # (click puts a new line first after a Ctrl-C)
    assert len(lines) == 1 and lines[0].startswith("bnfold: error: ")


def test_output_a_closed_pipe_cannot_take_is_dropped_and_the_code_stands(tmp_path):
    """What was printed before the command and never reached a reader (it closed the pipe) is
    dropped like the command's own output: the exit code is still the command's, nothing is
    reported, and the file is written (exits.py: guarded_output)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = _program(
            'import sys\nsys.stdout.write("unflushed")',
            ["optimize", FIXTURE, "o.tflite", "--quiet"],
            tmp_path,
            stdout=write,
        )
    finally:
        os.close(write)
    assert done.returncode == 0 and done.stderr == b""
    assert (tmp_path / "o.tflite").exists()


def test_the_modules_load_without_collections_and_are_frozen(tmp_path):
    """A start's imports leave only objects that live as long as the process: no collection walks
    them while they load (~55 would), nor after (frozen); the command runs with the collector on."""
    watch = """
    import atexit, gc, sys
    collections = []
    gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
    atexit.register(lambda: print(len(collections), gc.get_freeze_count(), gc.isenabled()))
    sys.argv = ["bnfold", "passes"]
    from bnfold.__main__ import main
    main()
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(watch)],
        cwd=tmp_path,
        env=_buffered_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    collections, frozen, enabled = done.stdout.splitlines()[-1].split()
    assert done.returncode == 0 and int(collections) < 10 and int(frozen) > 10_000 and enabled == "True"


COLLECTIONS_IN_OPTIMIZE = """
import atexit, gc
from bnfold import api
seen = []
gc.callbacks.append(lambda phase, info: phase == "start" and seen.append(info["generation"]))
optimize_file = api.optimize_file
def counted(*args, **kwargs):
    seen.clear()  # the collections from here on: the command's
    return optimize_file(*args, **kwargs)
api.optimize_file = counted
atexit.register(lambda: print(len(seen), gc.isenabled()))
"""


@pytest.mark.parametrize("check", [False, True])
def test_one_models_optimize_keeps_the_collector_paused_to_the_exit(check, tmp_path):
    """The program optimizing one model keeps the collector paused from reading to its exit
    (api.pause_to_exit): no collection walks the model's objects, all alive until the process
    ends, for nothing; --check still runs its interpreters with it on (io/gcpause.collecting). A
    Python program running the command line (cli.run) gets it back on."""
    argv = ["optimize", FIXTURE, "o.tflite", "--quiet", *(["--check", "2"] if check else [])]
    done = _program(COLLECTIONS_IN_OPTIMIZE, argv, tmp_path, stdout=subprocess.PIPE)
    collections, enabled = done.stdout.decode().split()
    assert done.returncode == 0 and enabled == "False", done.stderr
    assert (int(collections) > 0) == check  # only the check's interpreters: with it on
    library = COLLECTIONS_IN_OPTIMIZE + f"\nfrom bnfold import cli\ncli.run({argv!r})\n"
    done = subprocess.run([sys.executable, "-c", library], cwd=tmp_path, capture_output=True, timeout=120)
    assert done.returncode == 0 and done.stdout.decode().split()[1] == "True", done.stderr


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_while_the_program_leaves_changes_nothing(signum, tmp_path):
    """Ctrl-C or SIGTERM once the command has finished (here: from an atexit handler, as the
    process leaves) neither kills it nor changes its exit code or output."""
    late = f"import atexit, os, signal\natexit.register(os.kill, os.getpid(), signal.{signum})"
    done = _program(late, ["convert", FIXTURE, "o.circle"], tmp_path, stdout=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (0, b"") and done.stdout.startswith(b"wrote o.circle")
    assert [p.name for p in tmp_path.iterdir()] == ["o.circle"]


@pytest.mark.parametrize("python, after", [(["-m", "cProfile"], "function calls"), (["-i"], ">>>")])
def test_a_profiler_or_python_i_still_has_the_last_word(python, after, tmp_path):
    """`python -m cProfile -m bnfold ...` prints its figures, `python -i` opens its prompt, after
    the program returns to them, instead of the process ending under them."""
    done = subprocess.run(
        [sys.executable, *python, "-m", "bnfold", "passes"],
        cwd=tmp_path,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "fuse_batchnorm_with_conv" in done.stdout
    assert after in done.stdout + done.stderr


@pytest.mark.parametrize("users", [None, "12"])
def test_blas_threads_sleep_when_idle_unless_the_user_says_otherwise(users, tmp_path):
    """The program sets OpenBLAS's idle timeout before numpy loads (OpenBLAS reads it then), and
    leaves a value the user set alone."""
    watch = """
    import atexit, os, sys
    atexit.register(lambda: print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), "numpy" in sys.modules))
    sys.argv = ["bnfold", "passes"]
    import bnfold.__main__ as program
    assert "numpy" not in sys.modules
    program.main()
    """
    env = {k: v for k, v in _buffered_env().items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if users:
        env["OPENBLAS_THREAD_TIMEOUT"] = users
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(watch)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == [users or "4", "True"]


def test_numpy_loads_first_at_the_top_of_the_stack(tmp_path):
    """numpy is imported by the program itself before bnfold's modules, not from inside their
    nested imports: there its module bodies ran at the end of CPython's first 16 KB frame-stack
    chunk and crossed it again and again (~1,700 chunks mapped and unmapped a run)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bnfold", "passes"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    names = [line.rsplit("|", 1)[1] for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert done.returncode == 0 and " numpy" in names  # not nested: one space, no indent
    assert names.index(" numpy") < names.index(" bnfold.cli")
