"""Every source file a docstring, comment or doc names exists (issue 47: five docstrings named files
that had moved). A name with a directory resolves from the checkout, src/, src/bnfold/ or
tests/; a bare name from the naming file's own directory or any package directory. Files of other
projects are named in FOREIGN."""

from __future__ import annotations

import re

from conftest import ROOT

PACKAGE = ROOT / "src" / "bnfold"
FOREIGN = {"onelib/constant.py", "gen_golden.py"}  # ONE's one-cmds and its golden-data script
NAMED = re.compile(r"(?<![\w/.-])((?:[\w]+/)*[\w]+\.py)\b")


def _directories() -> list:
    return [p for p in (PACKAGE, ROOT / "tests", ROOT / "scripts", ROOT / "schemas") if p.is_dir()] + [
        p for base in (PACKAGE, ROOT / "tests") for p in base.rglob("*") if p.is_dir() and "__pycache__" not in p.parts
    ]


def _resolves(name: str, where, directories) -> bool:
    if name in FOREIGN:
        return True
    if "/" in name:
        return any((base / name).is_file() for base in (ROOT, ROOT / "src", PACKAGE, ROOT / "tests", where.parent))
    return (where.parent / name).is_file() or any((d / name).is_file() for d in directories)


def test_every_file_a_text_names_exists():
    directories = _directories()
    texts = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "scripts").glob("*.py")]
    texts += [ROOT / "README.md", ROOT / "docs" / "design.md"]
    missing = sorted(
        (str(path.relative_to(ROOT)), name)
        for path in texts
        for name in set(NAMED.findall(path.read_text()))
        if not _resolves(name, path, directories)
    )
    assert missing == []
