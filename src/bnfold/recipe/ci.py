"""`bnfold recipe test`: a recipe's value test, run the way a user's CI runs one (`bnfold.test_recipes`).

For each recipe: build the model in the recipe's format; optimize with the recipe's [expect]
passes; run the unoptimized model on random inputs and store them and its outputs as input.h5 /
expected.h5 (ONE's layout; when the passes made 4-D inputs or outputs NHWC, through the same
boundary transposes, so the files fit the optimized model); check the operator-count rules; run
the optimized model on input.h5 and compare with expected.h5 under the recipe's tolerance. The
project's own recipe tests (tests/test_recipes.py) call `run_recipe_test` too.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import registry
from ..engine.manager import run_passes
from ..errors import BnfoldError, CannotVerify, UsageError
from ..io.atomic import save_model
from ..io.paths import open_input
from ..io.reader import read_model
from ..ir.model import Model
from ..values.backend import Backends
from ..values.diff import CheckResult, Tolerance, compare_to_expected, iter_random_inputs
from ..values.samples import SampleWriter, expected_samples, input_samples
from ..values.verify import settle_weak
from .chef import build, load_recipe, recipe_format
from .rules import Expectation, broken_rules, expectation

SAMPLES = 2
SEED = 1


@dataclass
class Outcome:
    """What one recipe's test found. `error` is set when it could not be carried out: `unverified`
    too when nothing runs the model (CannotVerify, exit 4: not a difference), else the recipe is
    broken (a failure)."""

    name: str
    passed: bool = False
    failures: list[str] = field(default_factory=list)
    error: str | None = None
    unverified: bool = False
    result: CheckResult | None = None
    seconds: float = 0.0

    def line(self) -> str:
        """One line, dredd-style: PASS/FAIL/ERROR/UNVERIFIED, the recipe, and why or how close."""
        if self.unverified:
            return f"UNVERIFIED {self.name}: {self.error}"
        if self.error:
            return f"ERROR {self.name}: {self.error}"
        if not self.passed:
            return f"FAIL  {self.name}: {'; '.join(self.failures)}"
        assert self.result is not None  # a recipe passes on its check's result (run_recipe)
        worst = self.result.worst
        settled = ", weak output settled by rewrite" if worst.settled else ""
        return (
            f"PASS  {self.name} (scaled err {worst.scaled:.2e}{settled}, {self.result.samples} samples, "
            f"{self.result.backend})"
        )


def recipe_paths(arguments: list[str]) -> list[Path]:
    """The recipe files named, a directory standing for its *.toml files."""
    paths: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if os.path.isdir(argument):
            found = sorted(path.glob("*.toml"))
            if not found:
                raise UsageError("no *.toml recipes in this directory", argument)
            paths += found
        else:
            open_input(argument, "a recipe").close()  # refused now, as any input, not halfway through
            paths.append(path)
    return paths


def run_recipe_test(
    path: Path, workdir: Path, *, samples: int = SAMPLES, seed: int = SEED, backend: str = "auto"
) -> Outcome:
    """Build, store input/expected h5, optimize, check rules and values (module docstring)."""
    return run_recipe_seeds(path, workdir, [seed], samples=samples, backend=backend)[0]


def run_recipe_seeds(
    path: Path, workdir: Path, seeds: list[int], *, samples: int = SAMPLES, backend: str = "auto"
) -> list[Outcome]:
    """run_recipe_test at each of `seeds`, building and optimizing the recipe once."""
    start = time.monotonic()
    try:
        built = _build(path, workdir)
    except BnfoldError as e:
        return [_failed(Outcome(path.stem, seconds=time.monotonic() - start), e) for _ in seeds]
    outcomes = []
    for seed in seeds:
        outcome = Outcome(path.stem)
        try:
            _value_test(built, path, workdir, outcome, samples, seed, backend)
        except BnfoldError as e:
            _failed(outcome, e)
        outcome.seconds = time.monotonic() - start
        start = time.monotonic()
        outcomes.append(outcome)
    return outcomes


def _failed(outcome: Outcome, error: BnfoldError) -> Outcome:
    """The error, said once: the line already names the recipe, so an error that begins with its
    name (the chef's "Name: unknown key", "Name subgraph 0: ...") keeps only what follows it."""
    said = str(error)
    for named in (f"{outcome.name}: ", f"{outcome.name} "):
        if said.startswith(named):
            said = said[len(named) :]
            break
    outcome.error, outcome.unverified = said, isinstance(error, CannotVerify)
    return outcome


@dataclass
class _Built:
    """A recipe built, optimized and written: what each seed's value test reads."""

    expect: Expectation
    model: Model  # the optimized IR, for the rules
    reference: Model  # the unoptimized model with the run's interface change
    optimized: Model  # the optimized model as written and read back
    folds: list[dict]


def _build(path: Path, workdir: Path) -> _Built:
    recipe = load_recipe(path)
    expect = expectation(recipe)
    fmt = recipe_format(recipe)
    model_path = workdir / f"{path.stem}{fmt.extension}"
    save_model(build(recipe, fmt, where=path.stem), str(model_path), fmt)
    model = read_model(str(model_path))
    names = registry.default_passes() if expect.passes is None else expect.passes
    report = run_passes(model, registry.resolve(names), parameters=registry.parameters_in(names))
    reference = registry.with_interface_of(read_model(str(model_path)), report.interface)
    optimized_path = workdir / f"{path.stem}.opt{fmt.extension}"
    save_model(model, str(optimized_path), fmt)
    return _Built(expect, model, reference, read_model(str(optimized_path)), report.folds)


def _value_test(
    built: _Built, path: Path, workdir: Path, outcome: Outcome, samples: int, seed: int, backend: str
) -> None:
    optimized = built.optimized
    both = Backends([built.reference, optimized], backend)  # one runtime makes the expected values and checks them
    inputs, expected = _store_expected(
        both, workdir / f"{path.stem}.input.h5", workdir / f"{path.stem}.expected.h5", samples, seed
    )
    outcome.failures += broken_rules(built.model, built.expect.rules)
    outcome.result = compare_to_expected(
        optimized,
        input_samples(optimized.graphs[0].inputs, inputs),
        expected_samples(expected),
        tolerance=Tolerance(built.expect.rtol, built.expect.atol),
        backend=both.kind,
    )
    if not outcome.result.passed:  # a difference at a weak output, judged by the rewrites under it
        settle_weak(built.reference, optimized, outcome.result, samples, built.folds)
    if not outcome.result.passed:
        outcome.failures.append(outcome.result.failure_message())
    outcome.passed = not outcome.failures


def _store_expected(both: Backends, input_path: Path, expected_path: Path, samples: int, seed: int):
    """Run the unoptimized and the optimized model (`both`, so the backend that runs the expected
    values also runs the optimized model) on `samples` random inputs and write the unoptimized
    model's input.h5 / expected.h5 (input.N.h5 ... when there are several); returns the two lists
    of files."""
    graph = both.models[0].graphs[0]
    run = both
    write_in = SampleWriter(str(input_path), graph.inputs, samples)
    write_out = SampleWriter(str(expected_path), graph.outputs, samples)
    for index, sample in enumerate(iter_random_inputs(graph, samples, seed)):
        write_in(index, sample)
        write_out(index, run(sample)[0])
    return [write_in.path_of(i) for i in range(samples)], [write_out.path_of(i) for i in range(samples)]


def junit_xml(outcomes: list[Outcome]) -> str:
    """JUnit XML: one testsuite, one testcase per recipe (<failure> for broken rules or values,
    <error> when the recipe is broken, <skipped> when nothing could run the model)."""
    from xml.etree import ElementTree as ET

    suite = ET.Element(
        "testsuite",
        name="bnfold recipe test",
        tests=str(len(outcomes)),
        failures=str(sum(1 for o in outcomes if not o.passed and not o.error)),
        errors=str(sum(1 for o in outcomes if o.error and not o.unverified)),
        skipped=str(sum(1 for o in outcomes if o.unverified)),
        time=f"{sum(o.seconds for o in outcomes):.3f}",
    )
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname="recipes", name=o.name, time=f"{o.seconds:.3f}")
        if o.unverified:
            ET.SubElement(case, "skipped", message=f"could not verify: {o.error}")
        elif o.error:
            ET.SubElement(case, "error", message=o.error)
        elif not o.passed:
            ET.SubElement(case, "failure", message="; ".join(o.failures))
        else:
            ET.SubElement(case, "system-out").text = o.line()
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
