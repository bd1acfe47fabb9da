"""Faults around every file bnfold writes (issue 27): a full disk and the file-size limit mid-write,
read-only targets, concurrent runs on one output, and temporary files of live and dead runs.

The faults are real: a small tmpfs filled up (root only), RLIMIT_FSIZE in a subprocess, a read-only
bind mount, a real unprivileged user (setpriv), processes racing for one file, a writer in another
PID namespace. Each contract: one line on stderr with its exit code (5: the write failed, 2: the
target is refused before any work), no partial output, no temporary file left, the input intact.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from conftest import DATA, RECIPES

FOLDED = DATA / "resnet_v2_mini.tflite"  # changed by the default passes: serialized (170 kB)
UNCHANGED = DATA / "conv_relu_bn.tflite"  # left as it is: copied byte for byte
SMALL = DATA / "bn_conv_valid.tflite"
RECIPE = RECIPES / "Net_Conv_Add_Mul_000.toml"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="needs root to mount")


def bnfold(
    *argv,
    user: int | None = None,
    limit: int | None = None,
    sigxfsz_default: bool = False,
    files: int | None = None,
    timeout: float = 120,
):
    """`python -m bnfold ARGV` in a fresh process: (exit code, stderr lines). `user` runs it as
    that uid (setpriv), `limit` under RLIMIT_FSIZE, `files` under RLIMIT_NOFILE, `sigxfsz_default`
    with SIGXFSZ's default action (termination) as a host program that does not ignore it would
    leave it."""
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    launch = (
        ["-m", "bnfold"]
        if not sigxfsz_default
        else [
            "-c",
            "import signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); from bnfold.cli import entry; "
            "sys.argv[0] = 'bnfold'; entry()",
        ]
    )

    def preexec():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    proc = subprocess.run(
        [*prefix, sys.executable, *launch, *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    return proc.returncode, proc.stderr.strip().splitlines()


def entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def temporaries(*directories: Path) -> list[str]:
    return [p.name for d in directories for p in d.iterdir() if p.name.startswith(".bnfold-")]


@contextlib.contextmanager
def mounted(directory: Path, *options: str):
    directory.mkdir(exist_ok=True)
    if subprocess.run(["mount", *options, str(directory)], capture_output=True).returncode:
        pytest.skip(f"cannot mount {' '.join(options)} here")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=True)


def fill(directory: Path) -> None:
    """Use up every byte of the file system `directory` is on."""
    with open(directory / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(bytes(512))


@pytest.fixture
def full_disk(tmp_path):
    """A 64 kB tmpfs with no byte left (the `filler` file holds them)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    with mounted(tmp_path / "disk", "-t", "tmpfs", "-o", "size=64k", "tmpfs") as disk:
        fill(disk)
        yield disk


# ---- full disk -------------------------------------------------------------------------------


def _no_space(code, lines, output):
    assert code == 5 and len(lines) == 1, (code, lines)
    assert str(output) in lines[0] and "No space left on device" in lines[0], lines


@pytest.mark.parametrize("model", [FOLDED, UNCHANGED], ids=["serialized", "copied"])
@pytest.mark.parametrize("command", ["optimize", "convert"])
def test_full_disk_writes_nothing_and_says_so(command, model, full_disk):
    out = full_disk / ("o.circle" if command == "convert" else "o.tflite")
    _no_space(*bnfold(command, model, out), out)
    assert entries(full_disk) == ["filler"]


def test_full_disk_in_place_keeps_the_input(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    with mounted(tmp_path / "disk", "-t", "tmpfs", "-o", "size=256k", "tmpfs") as disk:
        model = disk / "m.tflite"
        shutil.copy(FOLDED, model)
        fill(disk)
        _no_space(*bnfold("optimize", model, "--in-place"), model)
        assert model.read_bytes() == FOLDED.read_bytes()
        assert entries(disk) == ["filler", "m.tflite"]


def test_a_report_that_does_not_fit_takes_the_model_with_it(tmp_path, full_disk):
    """The model and its report are written together: the model's rename waits for the report."""
    out, report = tmp_path / "o.tflite", full_disk / "r.json"
    _no_space(*bnfold("optimize", FOLDED, out, "--report", report), report)
    assert not out.exists() and temporaries(tmp_path) == []
    assert entries(full_disk) == ["filler"]


def test_h5_files_of_a_run_appear_all_or_none(tmp_path):
    """Twenty samples on a disk that holds a few: none of the files stays."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    with mounted(tmp_path / "disk", "-t", "tmpfs", "-o", "size=16k", "tmpfs") as disk:
        _no_space(*bnfold("run", SMALL, "--samples", "20", "--output", disk / "o.h5"), disk / "o.")  # o.N.h5
        assert entries(disk) == []
        code, lines = bnfold("check", SMALL, SMALL, "--samples", "20", "--write-input", disk / "i.h5")
        assert code == 5 and "No space left on device" in lines[0] and entries(disk) == []


def test_a_run_of_many_samples_holds_one_descriptor_per_directory(tmp_path):
    """The h5 files of a run wait for each other, but not each with an open file: 600 samples
    under a limit of 64 open files."""
    code, lines = bnfold("run", SMALL, "--samples", "600", "--output", tmp_path / "o.h5", files=64)
    assert (code, lines) == (0, [])
    assert len(entries(tmp_path)) == 600 and temporaries(tmp_path) == []


def test_a_batch_run_onto_a_full_disk_says_so(tmp_path, full_disk):
    """optimize --out-dir: each model's write fails in one line, nothing is left, and the run's
    exit code is 5 (it was 0: the batch's precedence did not know the code)."""
    models = tmp_path / "models"
    models.mkdir()
    for name in ("a.tflite", "b.tflite"):
        shutil.copy(FOLDED, models / name)
    code, lines = bnfold("optimize", "--out-dir", full_disk / "out", models, "-j", "1")
    assert code == 5, (code, lines)
    assert sum("No space left on device" in line for line in lines) == 2, lines
    assert [p.name for p in full_disk.rglob("*") if p.is_file()] == ["filler"]
    assert (models / "a.tflite").read_bytes() == FOLDED.read_bytes()


def test_full_disk_junit(full_disk):
    junit = full_disk / "r.xml"
    _no_space(*bnfold("recipe", "test", RECIPE, "--junit", junit), junit)
    assert entries(full_disk) == ["filler"]


# ---- the file-size limit ---------------------------------------------------------------------


@pytest.mark.parametrize("sigxfsz_default", [False, True], ids=["python", "host-without-ignore"])
def test_file_size_limit_fails_the_write_not_the_process(sigxfsz_default, tmp_path):
    """RLIMIT_FSIZE (`ulimit -f`): the write fails with EFBIG. A process that does not ignore
    SIGXFSZ would be killed by it (exit -25, the temporary file left): bnfold ignores it while
    writing."""
    src = tmp_path / "in.tflite"
    shutil.copy(FOLDED, src)
    out = tmp_path / "o.tflite"
    for argv, named, limit in (
        (["optimize", src, out], out, 64 * 1024),
        (["optimize", src, "--in-place"], src, 64 * 1024),
        (["run", src, "--samples", "3", "--output", tmp_path / "o.h5"], tmp_path / "o.0.h5", 3000),
    ):
        code, lines = bnfold(*argv, limit=limit, sigxfsz_default=sigxfsz_default)
        assert code == 5 and len(lines) == 1 and str(named) in lines[0] and "File too large" in lines[0], (
            argv,
            code,
            lines,
        )
        assert entries(tmp_path) == ["in.tflite"], argv
    assert src.read_bytes() == FOLDED.read_bytes()


def test_file_size_limit_on_the_checks_copy_for_onert(tmp_path):
    """`--check` in onert writes a copy of each model for onert to load: over RLIMIT_FSIZE that
    write fails as any write does (exit 5, one line), never as bnfold's bug, and no OUT is written."""
    from bnfold.values import onert

    if onert.missing():
        pytest.skip(onert.missing())
    out = tmp_path / "o.circle"
    circle = DATA / "torch_resblock_nchw.circle"  # 7.8 kB
    code, lines = bnfold("optimize", circle, out, "--check", "2", "--backend", "onert", limit=4000)
    assert code == 5 and len(lines) == 1, (code, lines)
    assert "cannot write the model's copy for onert: File too large" in lines[0], lines
    assert entries(tmp_path) == []


def test_file_size_limit_report(tmp_path):
    """A model under the limit, a report over it: neither is written."""
    out, report = tmp_path / "o.tflite", tmp_path / "r.json"
    code, lines = bnfold("optimize", SMALL, out, "--report", report, limit=2000)  # 1848 and 2098 bytes
    assert code == 5 and len(lines) == 1 and str(report) in lines[0] and "File too large" in lines[0], lines
    assert entries(tmp_path) == []


# ---- read-only targets -----------------------------------------------------------------------


def _commands(target: Path, model: Path, broken: Path, free: Path | None = None):
    """(argv, named path) writing `target`; `broken` is a malformed model, read only after the
    checks, so an exit 2 naming the target shows the refusal came before any work. The model a
    --report run writes goes to `free` (default: beside `model`)."""
    h5 = target.with_suffix(".h5")
    return [
        (["optimize", broken, target], target),
        (["convert", broken, target], target),
        (
            ["optimize", model, (free or model.parent) / "o2.tflite", "--report", target.with_suffix(".json")],
            target.with_suffix(".json"),
        ),
        (["run", broken, "--output", h5], h5),
        (["check", broken, broken, "--write-input", h5], h5),
        (["recipe", "build", RECIPE, target], target),
        (["recipe", "test", RECIPE, "--junit", target.with_suffix(".xml")], target.with_suffix(".xml")),
    ]


def _refused(code, lines, named, why):
    assert code == 2 and len(lines) == 1 and str(named) in lines[0] and why in lines[0], (code, lines)


@pytest.fixture
def broken(tmp_path):
    path = tmp_path / "broken.tflite"
    path.write_bytes(FOLDED.read_bytes()[:600])
    return path


def test_read_only_files_are_not_replaced(tmp_path, broken):
    """chmod a-w: refused before any work, even for root (who could write it), even with --force."""
    model = tmp_path / "m.tflite"
    shutil.copy(SMALL, model)
    target = tmp_path / "t.tflite"
    for path in (target, target.with_suffix(".json"), target.with_suffix(".h5"), target.with_suffix(".xml")):
        path.write_bytes(b"keep me")
        path.chmod(0o444)
    for argv, named in _commands(target, model, broken):
        _refused(*bnfold(*argv), named, "read-only")
        _refused(
            *bnfold(*argv, "--force") if argv[0] in ("optimize", "run", "check") else bnfold(*argv), named, "read-only"
        )
    model.chmod(0o444)
    _refused(*bnfold("optimize", model, "--in-place"), model, "read-only")
    assert model.read_bytes() == SMALL.read_bytes() and target.read_bytes() == b"keep me"
    assert temporaries(tmp_path) == []


@ROOT_ONLY
def test_read_only_mount_is_refused_before_any_work(tmp_path, broken):
    directory = tmp_path / "ro"
    directory.mkdir()
    model = tmp_path / "m.tflite"
    shutil.copy(SMALL, model)
    with mounted(directory, "--bind", str(directory)):
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only here")
        for argv, named in _commands(directory / "t.tflite", model, broken):
            _refused(*bnfold(*argv), named, "read-only file system")
        assert entries(directory) == []


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_a_directory_another_user_owns_is_refused_before_any_work():
    """As a real unprivileged user (nobody): os.access answers for that user, root's would not."""
    as_nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-c",
        "import bnfold.cli",
    ]
    if subprocess.run(as_nobody, capture_output=True).returncode:  # e.g. a checkout inside a 0700 directory
        pytest.skip("user nobody cannot run this checkout's bnfold (its directory is not readable to others)")
    with tempfile.TemporaryDirectory(prefix="bnfold-faults-") as top:
        top = Path(top)
        top.chmod(0o755)
        model, broken = top / "m.tflite", top / "broken.tflite"
        shutil.copy(SMALL, model)
        broken.write_bytes(SMALL.read_bytes()[:600])
        theirs, mine = top / "theirs", top / "mine"
        theirs.mkdir(mode=0o755)
        mine.mkdir()
        os.chown(mine, 65534, 65534)
        for argv, named in _commands(theirs / "t.tflite", model, broken, mine):
            _refused(*bnfold(*argv, user=65534), named, "permission denied")
        assert entries(theirs) == [] and entries(mine) == []


# ---- concurrent runs -------------------------------------------------------------------------


def _at_once(argvs: list[list]) -> list[tuple[int, str]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bnfold", *map(str, a)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for a in argvs
    ]
    return [(p.wait(timeout=120), p.stderr.read()) for p in procs]


def test_runs_writing_one_output_at_once_leave_one_complete_result(tmp_path):
    expected = tmp_path / "expected.tflite"
    assert bnfold("optimize", FOLDED, expected)[0] == 0
    out = tmp_path / "o.tflite"
    results = _at_once([["optimize", FOLDED, out, "-q", "--report", tmp_path / "r.json"] for _ in range(6)])
    assert results == [(0, "")] * 6
    assert out.read_bytes() == expected.read_bytes()
    assert entries(tmp_path) == ["expected.tflite", "o.tflite", "r.json"]


def test_in_place_runs_on_one_model_at_once(tmp_path):
    expected = tmp_path / "expected.tflite"
    assert bnfold("optimize", FOLDED, expected)[0] == 0
    model = tmp_path / "m.tflite"
    shutil.copy(FOLDED, model)
    results = _at_once([["optimize", model, "--in-place", "-q"] for _ in range(6)])
    assert results == [(0, "")] * 6
    assert model.read_bytes() == expected.read_bytes()
    assert entries(tmp_path) == ["expected.tflite", "m.tflite"]


# ---- temporary files of live and dead runs ---------------------------------------------------

SLOW_WRITER = textwrap.dedent("""
    import os, sys, time
    from bnfold import cli
    from bnfold.io import writer
    real = writer._Sink.write_buffer
    def slow(self, buffer):
        print("writing", os.getpid(), flush=True)
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.02)
        real(self, buffer)
    writer._Sink.write_buffer = slow
    sys.exit(cli.run(sys.argv[2:]))
""")


@pytest.fixture
def slow_writer():
    """Start(go, *argv, prefix=()): a bnfold run that stops mid-write (its temporary file exists)
    until `go` exists; (process, its PID as it sees it). Killed at the end if still running."""
    started = []

    def start(go: Path, *argv, prefix=()):
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-c", SLOW_WRITER, str(go), *map(str, argv)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(proc)
        line = proc.stdout.readline().split()
        assert line[:1] == ["writing"], (line, proc.stderr.read() if proc.poll() is not None else "")
        return proc, int(line[1])

    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()


def _finish(proc, go: Path):
    go.touch()
    out, err = proc.communicate(timeout=60)
    return proc.returncode, err


def test_a_live_runs_temporary_file_is_kept_and_a_dead_runs_removed(tmp_path, slow_writer):
    """Liveness is the writer's lock, not its PID: an unheld file is stale even when its PID
    names a live process (pid 1, a PID reused since), a held one is live."""
    work = tmp_path / "work"
    work.mkdir()
    go = tmp_path / "go"
    writer, _ = slow_writer(go, "optimize", SMALL, work / "a.tflite", "-q")
    (live,) = temporaries(work)
    stale = work / ".bnfold-1-0.tmp"  # pid 1 is alive, but nobody holds this file: a killed run's
    stale.write_bytes(b"half a model")
    (work / ".bnfold-notes.tmp").write_text("not ours")
    assert bnfold("optimize", SMALL, work / "b.tflite", "-q") == (0, [])
    assert entries(work) == sorted([live, ".bnfold-notes.tmp", "b.tflite"])
    assert _finish(writer, go) == (0, "")
    assert entries(work) == [".bnfold-notes.tmp", "a.tflite", "b.tflite"]


def test_the_members_of_a_live_group_are_kept_and_of_a_dead_one_removed(tmp_path, slow_writer):
    """A group's later files in a directory (`.bnfold-P-N.M.tmp`) are covered by its anchor's lock."""
    from bnfold.io.atomic import remove_stale_temps

    work = tmp_path / "work"
    work.mkdir()
    go = tmp_path / "go"
    writer, _ = slow_writer(go, "optimize", SMALL, work / "a.tflite", "-q")
    (anchor,) = temporaries(work)
    member = anchor.replace(".tmp", ".1.tmp")
    (work / member).write_bytes(b"written, waiting for the group")
    (work / ".bnfold-7-0.3.tmp").write_bytes(b"its anchor is gone")
    (work / ".bnfold-1-0.tmp").write_bytes(b"an anchor nobody holds")
    (work / ".bnfold-1-0.2.tmp").write_bytes(b"its member")
    assert sorted(remove_stale_temps(str(work))) == [".bnfold-1-0.2.tmp", ".bnfold-1-0.tmp", ".bnfold-7-0.3.tmp"]
    assert sorted(temporaries(work)) == sorted([anchor, member])
    (work / member).unlink()
    assert _finish(writer, go) == (0, "")


@ROOT_ONLY
def test_a_writer_in_another_pid_namespace_keeps_its_file(tmp_path, slow_writer):
    """Runs sharing a directory across containers: the writer's PID means nothing here (it is
    not a live process of this namespace), yet its file is live and must stay."""
    if not shutil.which("unshare"):
        pytest.skip("no unshare")
    pid = next(p for p in range(30000, 32000) if not os.path.exists(f"/proc/{p + 1}"))
    prefix = [
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        "sh",
        "-c",
        f'echo {pid} > /proc/sys/kernel/ns_last_pid; "$@"; exit $?',
        "sh",
    ]
    go = tmp_path / "go"
    try:
        writer, inner = slow_writer(go, "optimize", FOLDED, tmp_path / "a.tflite", "-q", prefix=prefix)
    except AssertionError:
        pytest.skip("cannot start a process in a new PID namespace here")
    assert not os.path.exists(f"/proc/{inner}") and temporaries(tmp_path) == [f".bnfold-{inner}-0.tmp"]
    assert bnfold("optimize", SMALL, tmp_path / "b.tflite", "-q") == (0, [])
    assert temporaries(tmp_path) == [f".bnfold-{inner}-0.tmp"]
    assert _finish(writer, go) == (0, "")
    assert entries(tmp_path) == ["a.tflite", "b.tflite", "go"]
