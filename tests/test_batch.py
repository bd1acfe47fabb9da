"""Many models in one run (batch.py): which files, which shard, the pool, errors that stop only
their own model, byte-identical outputs, the exit code, the report."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from bnfold import batch, optimize_many
from bnfold.batch import Job, ModelResult, collect, parse_shard, take_shard
from bnfold.cli import run
from bnfold.errors import UsageError
from conftest import DATA

GOOD = [
    "bn_conv_valid.tflite",
    "conv_relu_bn.tflite",
    "resnet_v2_mini.tflite",
    "torch_resblock_nchw.circle",
    "zoo/keras_concat_bn_relu.tflite",
]


@pytest.fixture
def collection(tmp_path):
    """Good real models in a tree: top level, a subdirectory, a Circle file."""
    root = tmp_path / "models"
    for name in GOOD:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / name, target)
    (root / "notes.txt").write_text("not a model, not walked")
    return root


def _single(tmp_path, source, name) -> bytes:
    out = tmp_path / "single" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    assert run(["optimize", str(source), str(out), "-q"]) == 0
    return out.read_bytes()


@pytest.mark.parametrize("jobs", [1, 2])
def test_outputs_are_the_single_commands_bytes(collection, tmp_path, jobs):
    out = tmp_path / "out"
    result = optimize_many([collection], out, jobs=jobs)
    assert [m.input for m in result.models] == [str(collection / n) for n in sorted(GOOD)]
    assert [m.status for m in result.models] == ["changed", "unchanged", "changed", "changed", "changed"]
    for name in GOOD:
        assert (out / name).read_bytes() == _single(tmp_path, collection / name, name.replace("/", "_")), name
    assert result.exit_code == 0 and result.jobs == jobs
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == sorted(os.path.basename(n) for n in GOOD)


def test_a_bad_file_stops_only_itself(collection, tmp_path):
    (collection / "truncated.tflite").write_bytes((DATA / "resnet_v2_mini.tflite").read_bytes()[:5000])
    (collection / "readme.tflite").write_text("this is text, not a model\n")
    out = tmp_path / "out"
    result = optimize_many([collection], out, jobs=2)
    failed = [m for m in result.models if m.status == "failed"]
    assert [os.path.basename(m.input) for m in failed] == ["readme.tflite", "truncated.tflite"]
    for m in failed:
        assert m.exit_code == 1 and "\n" not in m.error and m.error.startswith(m.input + ": ")
        assert not os.path.exists(m.output)
    assert all((out / name).is_file() for name in GOOD)
    assert result.exit_code == 1
    assert result.totals()["failed"] == 2 and result.totals()["models"] == len(GOOD) + 2


def test_an_output_directory_that_cannot_be_made_is_refused_as_a_single_run_would(collection, tmp_path):
    """A file where a model's output directory must go: that model gets the single command's
    refusal (exit 2, not 1, which says a model is malformed or differs); the others are written."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "zoo").write_text("a file where the directory zoo/ must go\n")
    result = optimize_many([collection], out, jobs=1)
    [failed] = [m for m in result.models if m.status == "failed"]
    assert failed.input.endswith("keras_concat_bn_relu.tflite") and failed.exit_code == 2
    assert "is not a directory" in failed.error and "\n" not in failed.error
    assert (out / "zoo").read_text().startswith("a file where")
    assert all((out / name).is_file() for name in GOOD if not name.startswith("zoo/"))
    assert result.exit_code == 2


def test_paths_files_and_directories(collection, tmp_path):
    out = str(tmp_path / "out")
    jobs = collect([collection / "zoo", DATA / "bn_relu_conv.tflite"], out)
    assert jobs == [
        Job(str(collection / "zoo" / "keras_concat_bn_relu.tflite"), os.path.join(out, "keras_concat_bn_relu.tflite")),
        Job(str(DATA / "bn_relu_conv.tflite"), os.path.join(out, "bn_relu_conv.tflite")),
    ]
    with pytest.raises(UsageError, match="would both be written to"):
        collect([collection / "bn_conv_valid.tflite", DATA / "bn_conv_valid.tflite"], out)
    with pytest.raises(UsageError, match="would replace the input itself"):
        collect([collection], str(collection))
    with pytest.raises(UsageError, match="no such file or directory"):
        collect([tmp_path / "missing"], out)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no \\*.tflite or \\*.circle files"):
        collect([tmp_path / "empty"], out)


def test_the_output_directory_is_never_walked(collection):
    first = optimize_many([collection], collection / "optimized", jobs=1)
    again = optimize_many([collection], collection / "optimized", jobs=1)
    assert len(first.models) == len(again.models) == len(GOOD)


def test_shards_partition_the_collection():
    jobs = [Job(f"m{i}.tflite", f"out/m{i}.tflite") for i in range(11)]
    shards = [take_shard(jobs, (k, 4)) for k in range(1, 5)]
    assert sorted((j for s in shards for j in s), key=jobs.index) == jobs
    assert [len(s) for s in shards] == [3, 3, 3, 2]
    assert take_shard(jobs, (2, 4)) == take_shard(list(jobs), parse_shard("2/4"))
    for bad in ("0/4", "5/4", "2", "a/b", "1/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def test_sharded_runs_together_write_every_model_once(collection, tmp_path):
    outputs = []
    for k in (1, 2, 3):
        result = optimize_many([collection], tmp_path / "out", shard=f"{k}/3", jobs=1)
        assert result.shard == (k, 3)
        outputs += [m.output for m in result.models]
    assert sorted(outputs) == sorted(str(tmp_path / "out" / n) for n in GOOD)


def test_exit_code_precedence():
    def run_of(*codes):
        models = [ModelResult("i", "o", "failed" if c else "changed", c) for c in codes]
        return batch.BatchResult(models, "out", 1).exit_code

    assert run_of(0, 0) == 0
    assert run_of(4, 1, 0) == 1
    assert run_of(4, 0) == 4
    assert run_of(1, 3, 2) == 3
    assert run_of(1, 2, 4) == 2


def test_a_worker_that_dies_fails_its_model_and_the_rest_go_on(collection, tmp_path, monkeypatch):
    crash = str(collection / "conv_relu_bn.tflite")
    optimize_one = batch.optimize_one

    def dying(job, settings, on_step=None):
        if job.input == crash:
            os.kill(os.getpid(), signal.SIGKILL)
        return optimize_one(job, settings, on_step)

    monkeypatch.setattr(batch, "optimize_one", dying)  # the forked workers inherit it
    result = optimize_many([collection], tmp_path / "out", jobs=2)
    died = [m for m in result.models if m.status == "failed"]
    assert [m.input for m in died] == [crash]
    assert died[0].exit_code == 3 and died[0].error == f"{crash}: internal error: the worker process died (signal 9)"
    assert sum(m.status != "failed" for m in result.models) == len(GOOD) - 1


def test_events_tell_each_model_start_steps_and_result(collection, tmp_path):
    events = []
    optimize_many(
        [collection / "bn_conv_valid.tflite"],
        tmp_path / "out",
        on_event=lambda kind, index, what: events.append((kind, what if kind == "step" else index)),
    )
    assert [kind for kind, _ in events] == ["begin", "start", "step", "step", "step", "done"]
    assert [what for kind, what in events if kind == "step"] == ["reading", "passes", "writing"]


def test_workers_tell_each_step_under_its_own_models_index(collection, tmp_path):
    events = []
    optimize_many([collection], tmp_path / "out", jobs=2, on_event=lambda *event: events.append(event))
    running, steps = set(), {}
    for kind, index, what in events[1:]:
        if kind == "start":
            running.add(index)
        elif kind == "step":
            assert index in running, (index, what)
            steps.setdefault(index, []).append(what)
        else:
            running.remove(index)
    assert sorted(steps) == list(range(len(GOOD)))
    assert all(s == ["reading", "passes", "writing"] for s in steps.values())


def test_report_has_every_model_and_the_totals(collection, tmp_path):
    result = optimize_many([collection], tmp_path / "out", jobs=2)
    data = json.loads(result.to_json())
    assert data["totals"]["models"] == len(GOOD) and data["totals"]["failed"] == 0
    assert [m["input"] for m in data["models"]] == [m.input for m in result.models]
    first = data["models"][0]
    assert first["report"]["operators"]["after"] == result.models[0].report["operators"]["after"]
    assert data["totals"]["operators"]["before"] == sum(
        sum(m["report"]["operators"]["before"].values()) for m in data["models"]
    )


SLOW_RUN = """
import sys, time
from bnfold import api, cli
run = api._optimize_path
def slow(*args, **kwargs):
    time.sleep(0.3)
    return run(*args, **kwargs)
api._optimize_path = slow
print("started", flush=True)
sys.exit(cli.run(["optimize", "--out-dir", sys.argv[2], "-j", "2", sys.argv[1]]))
"""


@pytest.mark.parametrize("stop, code", [("SIGTERM", 143), ("SIGINT to the process group", 130)])
def test_a_stopped_run_stops_every_worker_and_leaves_no_temporary_file(collection, tmp_path, stop, code):
    """SIGTERM to the command, or Ctrl-C as a terminal sends it (SIGINT to every process of
    the foreground group): the workers are gone, no temporary file stays, exit 128 + signal."""
    for i in range(20):
        shutil.copyfile(DATA / "resnet_v2_mini.tflite", collection / f"copy{i:02}.tflite")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN, str(collection), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout.readline() == "started\n"
    time.sleep(1.5)
    children = _children(proc.pid)
    assert len(children) == 2
    if stop == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(10) == code
    assert proc.stderr.read().splitlines()[-1].startswith("bnfold: error: interrupted")
    assert not any(os.path.exists(f"/proc/{pid}") for pid in children)
    written = [p.name for p in out.rglob("*")]
    assert not [n for n in written if n.endswith(".tmp")] and len(written) < len(GOOD) + 20


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _bnfold(*argv, **kwargs):
    return subprocess.run([sys.executable, "-m", "bnfold", *map(str, argv)], capture_output=True, text=True, **kwargs)


def test_command_two_bad_files_two_lines_exit_1(collection, tmp_path):
    (collection / "truncated.tflite").write_bytes((DATA / "resnet_v2_mini.tflite").read_bytes()[:5000])
    (collection / "readme.tflite").write_text("this file is text that someone named .tflite by mistake\n")
    out = tmp_path / "out"
    done = _bnfold("optimize", "--out-dir", out, "-j", "2", collection, "--report", tmp_path / "r.json")
    assert done.returncode == 1, done.stderr
    errors = done.stderr.splitlines()
    assert len(errors) == 2
    assert errors[0] == (
        f"bnfold: error: {collection / 'readme.tflite'}: not a TFLite or Circle model (file identifier "
        "' fil', expected 'TFL3' or 'CIR0')"
    )
    assert errors[1].startswith(f"bnfold: error: {collection / 'truncated.tflite'}: malformed tflite flatbuffer")
    head, row = done.stdout.splitlines()
    assert head.split()[:4] == ["models", "changed", "unchanged", "failed"] and row.split()[:4] == ["7", "4", "1", "2"]
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.*")) == sorted(GOOD)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == 1 and [m["status"] for m in report["models"]].count("failed") == 2


def test_command_refuses_batch_options_without_out_dir(tmp_path):
    for argv in (
        ["-j", "2", "a.tflite", "b.tflite"],
        ["--shard", "1/2", "a.tflite", "b.tflite"],
        ["a.tflite", "b.tflite", "c.tflite"],
        ["--out-dir", tmp_path, "--in-place", "a.tflite"],
    ):
        done = _bnfold("optimize", *argv)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    done = _bnfold("optimize", "--out-dir", tmp_path, DATA / "bn_conv_valid.tflite", "--shard", "3/2")
    assert done.returncode == 2 and "--shard '3/2': K must be 1..N" in done.stderr


def test_progress_bar_on_a_terminal_only(collection, tmp_path):
    """As a user meets it: under a pseudo-terminal (script(1)) the bar is drawn on stderr with
    the count, the elapsed time and the current model's step; piped, and with -q, nothing."""
    pytest.importorskip("pty")
    import pty

    out = tmp_path / "out"
    argv = [sys.executable, "-m", "bnfold", "optimize", "--out-dir", str(out), "-j", "1", str(collection)]
    screen = bytearray()

    def read(fd):
        data = os.read(fd, 4096)
        screen.extend(data)
        return data

    status = pty.spawn(argv, read)
    assert os.waitstatus_to_exitcode(status) == 0
    text = screen.decode()
    assert "optimizing  [" in text and f"{len(GOOD)}/{len(GOOD)}" in text and "elapsed" in text
    assert "resnet_v2_mini.tflite: " in text and any(f": {step}" in text for step in ("reading", "passes", "writing"))
    piped = _bnfold("optimize", "--out-dir", out, collection)
    assert piped.stderr == "" and len(piped.stdout.splitlines()) == 2
    screen.clear()
    assert os.waitstatus_to_exitcode(pty.spawn([*argv, "-q"], read)) == 0
    assert screen == b""


def test_an_empty_out_dir_is_refused_not_taken_as_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = _bnfold("optimize", "--out-dir", "", DATA / "bn_conv_valid.tflite")
    assert done.returncode == 2 and "--out-dir is empty" in done.stderr and len(done.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_the_selected_passes_are_imported_before_the_workers_fork(tmp_path):
    """The registry imports a pass's module when the pass first runs: for a batch that is before
    the fork, once, not in each worker."""
    probe = """
import sys
from bnfold import batch, selection
from bnfold.engine import registry
chosen = selection.select(["fuse_mul_with_conv"], {}, default=False)
batch._import_for_workers([], batch.Settings(chosen, False, {}, ()))
print(" ".join(p.name for p in registry.PASSES if f"bnfold.passes.{p.name}" in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["fuse_mul_with_conv"]


def test_a_failed_check_in_a_batch_names_its_model_and_its_report_tells_the_check(tmp_path, capsys):
    """As `optimize --check` alone: no model written, the run's report holds each failed model's
    report with the check's verdict and table, and its error line names the model."""
    models = [str(DATA / "resnet_v2_mini.tflite"), str(DATA / "bn_conv_valid.tflite")]
    report = tmp_path / "run.json"
    argv = ["optimize", "--out-dir", str(tmp_path / "out"), *models, "--check", "2", "--rtol", "0", "--atol", "0"]
    assert run([*argv, "--report", str(report), "-q", "-j", "1"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[2] for line in err] == models and all("outputs outside" in line for line in err)
    entries = json.loads(report.read_text())["models"]
    for entry in entries:
        check = entry["report"]["check"]
        assert entry["status"] == "failed" and check["passed"] is False and check["verdict"] in entry["error"]
        assert check["table"][1].endswith("FAIL")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
