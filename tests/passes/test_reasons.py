"""Every pass says why it left a candidate (issue 47): a structural mismatch (the op is not the
pattern at all) says nothing, but a candidate whose structure matches and a condition fails (a
value, a type, quantization, another reader, a graph output, shapes, the target) is reported with
its reason. So every registered pass's test module asserts a reported reason somewhere: an assert
naming a reason, or a helper that asserts one (bn_models.assert_said, check_negative). The passes
listed in SILENT are deliberately silent, each with why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bnfold.engine.registry import PASSES

HERE = Path(__file__).parent
HELPERS = {"assert_said", "check_negative", "refuses_activation_on_layer"}  # each asserts the reported reason

# pass -> why its test module asserts no reason
SILENT: dict[str, str] = {}


def asserts_a_reason(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert) and any(word in ast.unparse(node) for word in ("reason", "said")):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HELPERS:
            return True
    return False


@pytest.mark.parametrize("name", [spec.name for spec in PASSES])
def test_every_pass_asserts_a_reported_reason_or_says_why_not(name):
    path = HERE / f"test_{name}.py"
    assert path.exists(), f"{name} has no tests/passes/test_{name}.py"
    if name in SILENT:
        assert not asserts_a_reason(path.read_text()), f"{name} asserts a reason: take it off SILENT"
    else:
        assert asserts_a_reason(path.read_text()), f"{path.name} asserts no reported reason of {name}"


def test_silent_names_registered_passes():
    assert set(SILENT) <= {spec.name for spec in PASSES}
