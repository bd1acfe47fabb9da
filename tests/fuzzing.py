"""Seeded mutation fuzzing of whole model files, shared by tests/test_fuzz.py (a few hundred cases
in CI) and scripts/fuzz.py (10,000+).

A case mutates one seed file, then runs `bnfold optimize` and `bnfold inspect` on it in-process
through `bnfold.cli.run`. The contract it checks is the CLI's: exit 0, 1 or 2 with at most one
line on stderr (exit 3 is an internal error, i.e. a bnfold bug; anything escaping `run` is worse),
no case slower than the time bound, nothing left in the output directory when the exit is
non-zero, the input file unchanged, and, when optimize succeeds, an output that bnfold itself can
read back. (Whether the optimized model computes the same, in LiteRT, on random layout-heavy graphs
is tests/layout_fuzzing.py's differential fuzzing.)

Mutations aim where they hurt: besides blind bit flips, truncation and splices, offsets, lengths
and indices are overwritten at positions inside the structure part of the file (before the first
weight byte) and at the exact positions of index fields (operator inputs/outputs, tensor buffer
and type, opcode index, subgraph inputs/outputs), found through the generated accessors.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import shutil
import signal
import struct
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from bnfold import cli
from bnfold.errors import BnfoldError
from bnfold.io.formats import format_from_identifier
from bnfold.io.reader import read_model

TIME_LIMIT = 5.0  # seconds per command


class Hang(BaseException):
    """Raised by the alarm; a BaseException so the CLI's own handlers cannot swallow it."""


@dataclass
class Seed:
    """One file to mutate, with the regions worth aiming at."""

    name: str
    data: bytes
    structure_end: int  # first byte of weight data: tables and offsets live before it
    index_positions: list[tuple[int, int]] = field(default_factory=list)  # (position, byte width)


def load_seed(path: Path) -> Seed:
    data = path.read_bytes()
    model = read_model(str(path))
    starts = [b.source for b in model.buffers if b.source is not None and b.nbytes >= 16]
    structure_end = min(starts) if starts else len(data)
    return Seed(path.name, data, max(structure_end, 16), _index_positions(data, model.format))


def _index_positions(data: bytes, fmt) -> list[tuple[int, int]]:
    """Byte positions of the fields that hold indices, via the generated accessors' tables."""
    root = fmt.cls("Model").GetRootAs(data, 0)
    out: list[tuple[int, int]] = []

    def scalar(obj, slot, width):
        o = obj._tab.Offset(4 + 2 * slot)
        if o:
            out.append((obj._tab.Pos + o, width))

    def vector(obj, slot):
        o = obj._tab.Offset(4 + 2 * slot)
        if o:
            start, n = obj._tab.Vector(o), obj._tab.VectorLen(o)
            out.extend((start + 4 * i, 4) for i in range(min(n, 64)))

    for g in range(root.SubgraphsLength()):
        sg = root.Subgraphs(g)
        vector(sg, 1)
        vector(sg, 2)
        for t in range(sg.TensorsLength()):
            tensor = sg.Tensors(t)
            scalar(tensor, 1, 1)  # type
            scalar(tensor, 2, 4)  # buffer
            vector(tensor, 0)  # shape
        for o in range(sg.OperatorsLength()):
            op = sg.Operators(o)
            scalar(op, 0, 4)  # opcode index
            scalar(op, 3, 1)  # builtin options type
            vector(op, 1)
            vector(op, 2)
    for s in range(root.SignatureDefsLength()):
        scalar(root.SignatureDefs(s), 4, 4)
    return out


# ---- mutators: each takes (rng, bytearray, seed) and returns the mutated bytes ----------------

INDEX_VALUES = (-1, -2, 2**31 - 1, -(2**31), 2**16, 255, 256, 1000)


def bit_flip(rng, data, seed):
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    return data


def truncate(rng, data, seed):
    return data[: rng.randrange(0, len(data))]


def splice(rng, data, seed):
    """Copy a chunk of the file over another place (or insert it, shifting everything after)."""
    n = rng.randint(1, 64)
    src = rng.randrange(0, max(1, len(data) - n))
    chunk = bytes(data[src : src + n])
    dst = rng.randrange(0, len(data))
    if rng.random() < 0.5:
        data[dst : dst + len(chunk)] = chunk
    else:
        data[dst:dst] = chunk
    return data


def corrupt_offset(rng, data, seed):
    """Overwrite an aligned 32-bit word in the structure region: offsets, lengths, vtable entries."""
    pos = rng.randrange(0, max(1, min(seed.structure_end, len(data)) - 4)) & ~3
    (old,) = struct.unpack_from("<I", data, pos)
    value = rng.choice(
        (
            0,
            1,
            0xFFFFFFFF,
            0x7FFFFFFF,
            len(data),
            len(data) - 4,
            old + 4,
            old - 4,
            old * 2,
            rng.getrandbits(32),
            old ^ (1 << rng.randrange(32)),
        )
    )
    struct.pack_into("<I", data, pos, value & 0xFFFFFFFF)
    return data


def corrupt_vtable_entry(rng, data, seed):
    """Overwrite a 16-bit word in the structure region (vtable sizes and field offsets are 16-bit)."""
    pos = rng.randrange(0, max(1, min(seed.structure_end, len(data)) - 2)) & ~1
    struct.pack_into("<H", data, pos, rng.choice((0, 2, 3, 4, 0xFFFF, rng.getrandbits(16))))
    return data


def corrupt_index(rng, data, seed):
    """Overwrite an index field with -1, huge or slightly out-of-range values."""
    if not seed.index_positions:
        return corrupt_offset(rng, data, seed)
    pos, width = rng.choice(seed.index_positions)
    if pos + width > len(data):
        return data
    if width == 1:
        data[pos] = rng.choice((0, 1, 2, 3, 9, 17, 100, 127, 200, 255))
        return data
    (old,) = struct.unpack_from("<i", data, pos)
    value = rng.choice(INDEX_VALUES + (old + 1, old + rng.randint(2, 50), old - 1, 0, rng.randint(0, 300)))
    struct.pack_into("<i", data, pos, max(-(2**31), min(2**31 - 1, value)))
    return data


SPECIAL_FLOATS = (float("inf"), float("-inf"), float("nan"), 3.4e38, -3.4e38, 1e-45, 0.0, -0.0)


def special_value(rng, data, seed):
    """Overwrite an aligned float32 in the weight region with inf, NaN, a huge or a tiny value:
    folds, checks and the interpreter must cope without a warning."""
    if len(data) - seed.structure_end < 8:
        return bit_flip(rng, data, seed)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(seed.structure_end, len(data) - 4) & ~3
        struct.pack_into("<f", data, pos, rng.choice(SPECIAL_FLOATS))
    return data


MUTATORS = {
    f.__name__: f
    for f in (bit_flip, truncate, splice, corrupt_offset, corrupt_vtable_entry, corrupt_index, special_value)
}


def mutate(rng: random.Random, seed: Seed) -> tuple[bytes, str]:
    """One to three stacked mutations; returns the bytes and a label naming them."""
    data = bytearray(seed.data)
    names = [rng.choice(list(MUTATORS)) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    for name in names:
        if len(data) < 8:
            break
        data = MUTATORS[name](rng, data, seed)
    return bytes(data), "+".join(names)


# ---- running a case --------------------------------------------------------------------------


@dataclass
class Outcome:
    kind: str  # "ok", "rejected" (exit 1/2), or a failure: "internal", "escaped", "hang", "leftover", ...
    detail: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.kind not in ("ok", "rejected")


def _alarm(signum, frame):
    raise Hang()


def run_cli(argv: list[str], limit: float = TIME_LIMIT) -> tuple[int | None, str, str]:
    """Run the CLI in-process under a time limit; (exit code or None on a hang, stdout, stderr).
    Exceptions that escape `cli.run` propagate to the caller."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always", RuntimeWarning)  # what a fresh process would print
            code = cli.run(argv)
    except Hang:
        code = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    shown = "".join(f"{w.category.__name__}: {w.message}\n" for w in caught if issubclass(w.category, RuntimeWarning))
    return code, out.getvalue(), err.getvalue() + shown


def error_kind(stderr: str) -> str:
    """A short label for a one-line error: the message with the path, numbers, quoted names and
    byte positions removed, so that errors of one kind count together."""
    line = stderr.strip().splitlines()[0] if stderr.strip() else ""
    line = line.removeprefix("bnfold: error: ")
    head, sep, rest = line.partition(": ")
    message = rest if sep and ("/" in head or head.endswith((".tflite", ".circle"))) else line
    message = re.sub(r"\(?'[^']*'\)?|\(?b'[^']*'\)?|\[[^\]]*\]", "", message)
    message = re.sub(r"(?<![\w.])-?\d+(?![\w.])", "N", message)
    return " ".join(message.split())[:90]


def run_case(data: bytes, ext: str, workdir: Path, optimize_options: tuple[str, ...] = ()) -> Outcome:
    """optimize (with `optimize_options`: by default the default set) + inspect on one mutated
    file; the first contract violation found, or the result."""
    src_dir, out_dir = workdir / "in", workdir / "out"
    src_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = src_dir / f"case{ext}"
    src.write_bytes(data)
    out = out_dir / f"result{ext}"
    started = time.perf_counter()
    results = []
    try:
        optimize = ["optimize", str(src), str(out), "--quiet", *optimize_options]
        for argv in (optimize, ["inspect", str(src), "--operators", "--tensors"]):
            code, _, stderr = run_cli(argv)
            if code is None:
                return Outcome("hang", " ".join(argv[:1]), time.perf_counter() - started)
            bad = _violation(argv[0], code, stderr, out, out_dir)
            if bad is None and src.read_bytes() != data:
                bad = "input-changed", f"{src.name} differs after exit {code}"
            if bad:
                return Outcome(bad[0], f"{argv[0]}: {bad[1]}", time.perf_counter() - started)
            results.append((code, stderr))
    except Exception as e:  # noqa: BLE001 - escaping the CLI is exactly what is being looked for
        return Outcome("escaped", f"{type(e).__name__}: {e}", time.perf_counter() - started)
    finally:
        for p in out_dir.iterdir():
            p.unlink()
        src.unlink()
    (code, stderr), _ = results
    if code == 0:
        return Outcome("ok", "", time.perf_counter() - started)
    return Outcome("rejected", error_kind(stderr), time.perf_counter() - started)


def _violation(command: str, code: int, stderr: str, out: Path, out_dir: Path) -> tuple[str, str] | None:
    lines = stderr.strip().splitlines()
    if code == 3:
        return "internal", stderr.strip()
    if code not in (0, 1, 2):
        return "exit-code", f"exit {code}: {stderr.strip()}"
    if code != 0 and len(lines) != 1:
        return "not-one-line", repr(stderr)
    if code == 0 and "RuntimeWarning" in stderr:
        return "warning", stderr.strip()
    if command != "optimize":
        return None
    left = sorted(p.name for p in out_dir.iterdir())
    if code != 0 and left:
        return "leftover", f"{left} after exit {code}"
    if code == 0:
        if left != [out.name]:
            return "leftover", f"{left} after success"
        try:
            read_model(str(out))
        except BnfoldError as e:
            return "unreadable-output", str(e)
    return None


def seeds_from(paths) -> list[Seed]:
    return [load_seed(Path(p)) for p in paths]


def fuzz(
    seeds: list[Seed],
    cases: int,
    seed: int = 0,
    workdir: Path | None = None,
    progress=None,
    optimize_options: tuple[str, ...] = (),
):
    """Yield (case number, seed name, mutation label, Outcome) for `cases` seeded cases."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bnfold-fuzz-") as tmp:
        base = Path(workdir or tmp)
        for i in range(cases):
            s = seeds[i % len(seeds)]
            data, label = mutate(rng, s)
            ext = ".circle" if format_from_identifier(s.data[4:8], s.name).name == "circle" else ".tflite"
            yield i, s.name, label, run_case(data, ext, base, optimize_options)


# ---- command-line mutations: odd paths and odd option values, not only odd bytes --------------
#
# A case is one command with each path slot filled from a pool of hostile paths (missing,
# directory, FIFO, device, symlinks, the run's own models, a model as a side file, names too long
# for the file system) and options drawn from valid and invalid values. Beyond the contract above,
# the models in the work directory must be unchanged unless the command named them as its OUT,
# or said --in-place or --force, no temporary file may be left anywhere, and a command that fails
# leaves no new file (no partial output: a model without its report, some h5 files of a run);
# only a verdict of exit 1 keeps what it was asked to write (`check`'s h5 files, `recipe test`'s
# JUnit report of the failures), and batch mode (`--out-dir`) writes every model that succeeded,
# with one line per model that failed.

OPTION_VALUES = {
    "--passes": [
        "",
        "fuse_batchnorm_with_conv",
        ",,",
        "nope",
        "fuse_batchnorm_with_conv,fuse_batchnorm_with_conv",
        "make_batchnorm_gamma_positive",
    ],
    "--check": ["1", "0", "-3", "x"],
    "--samples": ["1", "2", "0", "-1", "x"],
    "--seed": ["0", "-1", "x", str(2**70)],
    "--rtol": ["0", "1e-3", "nan", "-1", "inf", "x"],
    "--atol": ["0", "1e-3", "-1", "x"],
    "-d": ["0.1", "-1", "nan"],
    "--backend": ["auto", "reference", "litert", "x"],
    "-j": ["1", "2", "0", "x"],
}
# what each command accepts (a few cases also get an option no command has)
ACCEPTS = {
    "optimize": ["--passes", "--check", "-q", "--external-buffers", "--force", "--fuse_batchnorm_with_conv", "-j"],
    "convert": ["--external-buffers"],
    "inspect": ["--operators", "--tensors"],
    "check": ["--samples", "--seed", "--rtol", "--atol", "--backend", "--force"],
    "h5diff": ["--rtol", "--atol", "-d"],
    "recipe": [],
    "run": ["--samples", "--seed", "--backend", "--force"],
}
COMMANDS = [
    ["optimize", "IN", "OUT", "*"],
    ["optimize", "IN", "--in-place", "*"],
    ["optimize", "IN", "OUT", "--report", "SIDE", "*"],
    ["optimize", "-i", "IN", "-o", "OUT", "*"],
    ["optimize", "IN", "OUT", "--report", "-", "*"],
    ["convert", "IN", "OUT", "*"],
    ["inspect", "IN", "*"],
    ["check", "IN", "IN", "*"],
    ["check", "IN", "IN", "--write-input", "SIDE", "--write-expected", "SIDE", "*"],
    ["check", "IN", "IN", "--input", "H5", "*"],
    ["h5diff", "H5", "H5", "*"],
    ["recipe", "build", "RECIPE", "OUT"],
    ["optimize", "--config", "CFG", "*"],
    ["run", "IN", "--output", "SIDE", "*"],
    ["recipe", "test", "RECIPE", "--junit", "SIDE"],
    ["optimize", "--out-dir", "OUTDIR", "IN", "IN", "*"],  # batch mode
]


@dataclass
class Workspace:
    """The files a command-line case may name, rebuilt before every case."""

    root: Path
    model: bytes
    circle: bytes
    recipe: str
    h5: bytes
    paths: dict[str, list[str]] = field(default_factory=dict)

    @property
    def models(self) -> list[Path]:
        return [self.root / "model.tflite", self.root / "other.tflite", self.root / "model.circle"]

    def reset(self) -> None:
        for p in list(self.root.iterdir()):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        root = self.root
        (root / "model.tflite").write_bytes(self.model)
        (root / "other.tflite").write_bytes(self.model)
        (root / "model.circle").write_bytes(self.circle)
        (root / "in.h5").write_bytes(self.h5)
        (root / "empty.tflite").write_bytes(b"")
        (root / "text.tflite").write_text("not a model\n")
        (root / "dir.tflite").mkdir()
        (root / "link.tflite").symlink_to("model.tflite")
        (root / "dangling.tflite").symlink_to("nowhere.tflite")
        os.mkfifo(root / "fifo.tflite")
        (root / "recipe.toml").write_text(self.recipe)
        (root / "one.cfg").write_text(
            f"[one-optimize]\ninput_path={root / 'model.tflite'}\noutput_path={root / 'cfg.tflite'}\n"
        )
        (root / "interp.cfg").write_text("[one-optimize]\ninput_path=%(nope)s\noutput_path=x.tflite\n")
        (root / "fifo.cfg").write_text(
            f"[one-optimize]\ninput_path={root / 'fifo.tflite'}\noutput_path={root / 'o.tflite'}\n"
        )
        long = str(root / ("x" * 300))
        common = [
            str(root / "missing.tflite"),
            str(root / "dir.tflite"),
            str(root / "fifo.tflite"),
            "/dev/null",
            str(root / "link.tflite"),
            str(root / "dangling.tflite"),
            long + ".tflite",
            "",
        ]
        self.paths = {
            "IN": [
                str(root / "model.tflite"),
                str(root / "model.circle"),
                str(root / "empty.tflite"),
                str(root / "text.tflite"),
                str(root / "in.h5"),
            ]
            + common,
            "OUT": [
                str(root / "o.tflite"),
                str(root / "o.circle"),
                str(root / "model.tflite"),
                str(root / "other.tflite"),
                str(root / "o.onnx"),
                str(root / "nodir" / "o.tflite"),
                str(root / "in.h5"),
            ]
            + common,
            "SIDE": [
                str(root / "side.json"),
                str(root / "side.h5"),
                str(root / "model.tflite"),
                str(root / "other.tflite"),
                str(root / "model.circle"),
                str(root / "in.h5"),
                str(root / "nodir" / "s.h5"),
            ]
            + common,
            "H5": [str(root / "in.h5"), str(root / "model.tflite")] + common,
            "RECIPE": [
                str(root / "recipe.toml"),
                str(root / "fifo.tflite"),
                str(root / "dir.tflite"),
                str(root / "model.tflite"),
                long + ".toml",
                str(root / "missing.toml"),
            ],
            "OUTDIR": [
                str(root / "outdir"),
                str(root / "dir.tflite"),
                str(root / "model.tflite"),
                str(root),
                str(root / "nodir" / "deeper"),
                "/dev/null",
            ],  # not "": the current directory
            "CFG": [
                str(root / "one.cfg"),
                str(root / "interp.cfg"),
                str(root / "fifo.cfg"),
                str(root / "fifo.tflite"),
                str(root / "dir.tflite"),
                str(root / "model.tflite"),
                long + ".cfg",
            ],
        }


def mutate_recipe(rng: random.Random, text: str) -> str:
    """Change one value of a recipe's text: a number to a word, a huge or negative number, a
    string to a number, or a line dropped or repeated."""
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    choice = rng.randrange(5)
    if choice == 0:
        lines[i] = re.sub(r"\d+", rng.choice(['"x"', "-7", "1000000000000", "1.5", "[1]"]), lines[i], count=1)
    elif choice == 1:
        lines[i] = re.sub(r'"[^"]*"', rng.choice(["3", '"nope"', "[]", "{}"]), lines[i], count=1)
    elif choice == 2:
        del lines[i]
    elif choice == 3:
        lines.insert(i, lines[i])
    else:
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return "\n".join(lines) + "\n"


def command_case(rng: random.Random, ws: Workspace) -> list[str]:
    template = rng.choice(COMMANDS)
    argv: list[str] = []
    for slot in template:
        if slot in ws.paths:  # half the time a usable path, so the cases also reach the work
            pool = ws.paths[slot]
            argv.append(pool[0] if rng.random() < 0.5 else rng.choice(pool))
        elif slot == "*":
            accepted = ACCEPTS[template[0]]
            for _ in range(rng.choice((0, 0, 1, 1, 2, 3)) if accepted else 0):
                option = rng.choice(accepted) if rng.random() < 0.95 else "--bogus"
                argv += [option] + ([rng.choice(OPTION_VALUES[option])] if option in OPTION_VALUES else [])
        else:
            argv.append(slot)
    return argv


def run_command_case(argv: list[str], ws: Workspace) -> Outcome:
    before = {p: p.read_bytes() for p in ws.models}
    existing = set(ws.root.rglob("*"))
    started = time.perf_counter()
    try:
        code, _, stderr = run_cli(argv)
    except Exception as e:  # noqa: BLE001
        return Outcome("escaped", f"{argv}: {type(e).__name__}: {e}", time.perf_counter() - started)
    seconds = time.perf_counter() - started
    lines = stderr.strip().splitlines()
    if code is None:
        return Outcome("hang", str(argv), seconds)
    if code == 3:
        return Outcome("internal", f"{argv}: {stderr.strip()}", seconds)
    if code not in (0, 1, 2):
        return Outcome("exit-code", f"{argv}: exit {code}", seconds)
    batch = argv[1] == "--out-dir"  # one line per model that failed; the others are written
    if code != 0 and not 1 <= len(lines) <= (2 if batch else 1):
        return Outcome("not-one-line", f"{argv}: {stderr!r}", seconds)
    if code == 0 and "RuntimeWarning" in stderr:
        return Outcome("warning", f"{argv}: {stderr.strip()}", seconds)
    temps = [str(p) for p in ws.root.rglob(".bnfold-*.tmp")]
    if temps:
        return Outcome("leftover", f"{argv}: {temps}", seconds)
    new = sorted(p.name for p in set(ws.root.rglob("*")) - existing)
    verdict = code == 1 and (argv[0] == "check" or argv[:2] == ["recipe", "test"])
    if code != 0 and new and not verdict and not batch:
        return Outcome("partial", f"{argv}: {new} after exit {code}", seconds)
    asked = "--in-place" in argv or "--force" in argv
    out = (
        argv[2]
        if argv[0] in ("optimize", "convert")
        and argv[1] not in ("--config", "-i", "--out-dir")
        and argv[2] != "--in-place"
        else None
    )
    if argv[:2] == ["recipe", "build"]:
        out = argv[3]
    if argv[:2] == ["optimize", "-i"]:
        out = argv[4]
    for p, data in before.items():
        if not asked and p.read_bytes() != data and not (out and os.path.realpath(out) == str(p)):
            return Outcome("clobbered", f"{argv}: {p.name} changed", seconds)
    written = [out] if out else []
    if argv[1] == "--out-dir" and os.path.isdir(argv[2]):  # the models the batch wrote
        written = [str(p) for p in Path(argv[2]).rglob("*") if p.is_file() and p not in existing]
    for path in written if code == 0 or batch else []:  # whatever bnfold writes, bnfold reads back
        try:
            if os.path.exists(path):
                read_model(path)
        except BnfoldError as e:
            return Outcome("unreadable-output", f"{argv}: {e}", seconds)
    return Outcome("ok" if code == 0 else "rejected", "" if code == 0 else error_kind(stderr), seconds)


def fuzz_commands(
    model: Path, circle: Path, recipe: Path, h5: Path, cases: int, seed: int = 0, workdir: Path | None = None
):
    """Yield (case number, argv, Outcome) for `cases` seeded command-line cases."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bnfold-fuzz-cli-") as tmp:
        ws = Workspace(
            Path(workdir or tmp) / "ws", model.read_bytes(), circle.read_bytes(), recipe.read_text(), h5.read_bytes()
        )
        ws.root.mkdir(parents=True, exist_ok=True)
        for i in range(cases):
            ws.reset()
            if rng.random() < 0.3:
                (ws.root / "recipe.toml").write_text(mutate_recipe(rng, ws.recipe))
            argv = command_case(rng, ws)
            yield i, argv, run_command_case(argv, ws)


def fuzz_recipes(recipes: list[Path], cases: int, seed: int = 0, workdir: Path | None = None):
    """Yield (case number, recipe name, Outcome) for `cases` seeded `recipe build` runs, each on a
    recipe with one to three mutate_recipe changes; a model that builds must read back."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bnfold-fuzz-recipes-") as tmp:
        base = Path(workdir or tmp)
        for i in range(cases):
            source = rng.choice(recipes)
            text = source.read_text()
            for _ in range(rng.choice((1, 1, 2, 3))):
                text = mutate_recipe(rng, text)
            path, out = base / "case.toml", base / f"case{rng.choice(('.tflite', '.circle'))}"
            path.write_text(text)
            started = time.perf_counter()
            argv = ["recipe", "build", str(path), str(out)]
            try:
                code, _, stderr = run_cli(argv)
            except Exception as e:  # noqa: BLE001
                yield i, source.name, Outcome("escaped", f"{type(e).__name__}: {e}")
                continue
            seconds = time.perf_counter() - started
            if code is None:
                outcome = Outcome("hang", "", seconds)
            elif code not in (0, 1, 2):
                outcome = Outcome("internal" if code == 3 else "exit-code", stderr.strip(), seconds)
            elif code and len(stderr.strip().splitlines()) != 1:
                outcome = Outcome("not-one-line", repr(stderr), seconds)
            elif code == 0:
                try:
                    read_model(str(out))
                    outcome = Outcome("ok", "", seconds)
                except BnfoldError as e:
                    outcome = Outcome("unreadable-output", str(e), seconds)
                out.unlink()
            else:
                outcome = Outcome("rejected", error_kind(stderr), seconds)
            yield i, source.name, outcome
