"""The style and type checks (README "Checks before a commit") run in CI before the tests, and
pre-commit runs the same versions: the pins live once, in pyproject's lint extra."""

from __future__ import annotations

import re
import tomllib

from conftest import ROOT


def _lint_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = dict(requirement.split("==") for requirement in project["optional-dependencies"]["lint"])
    assert all(not extra.startswith("bnfold[lint") for extra in project["optional-dependencies"]["test"])
    return pins


def test_ci_runs_every_check_before_the_tests():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    tests = ci.index(".venv/bin/python -m pytest")
    for check in (
        ".venv/bin/ruff check src tests scripts schemas",
        ".venv/bin/ruff format --check src tests scripts schemas",
        ".venv/bin/mypy",
    ):
        assert ci.index(check) < tests, check
    [install] = [i for i, line in enumerate(ci) if line.startswith(".venv/bin/pip install --quiet '.[lint]'")]
    assert install < tests and "set -euo pipefail" in ci  # a finding stops CI


def test_pre_commit_runs_the_pinned_versions():
    pins = _lint_pins()
    assert set(pins) >= {"ruff", "mypy"}
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    assert re.search(r"repo: https://github.com/astral-sh/ruff-pre-commit\n\s+rev: v(\S+)\n", config)[1] == pins["ruff"]
    assert "entry: .venv/bin/mypy\n" in config  # the venv's mypy: the extra's version, never another
