"""What a lifted model must satisfy (ir/invariants.py), beyond what the passes' own tests show."""

from __future__ import annotations

import pytest

from bnfold import cli
from conftest import RECIPES


@pytest.mark.parametrize("axis, refused", [(3, False), (-4, False), (4, True), (-5, True), (513, True)])
def test_a_concatenation_axis_outside_its_output_is_refused(axis, refused, tmp_path, capsys):
    """An axis beyond the output's rank (a corrupt file: scripts/fuzz.py case 6817 gave axis 513)
    made the transpose propagation index past its permutation, an internal error; now the
    reader (and so the chef) refuses it in one line."""
    text = (RECIPES / "Neg_Concat_BN_OtherReader_000.toml").read_text()
    assert "axis = 1" in text
    recipe = tmp_path / "r.toml"
    recipe.write_text(text.replace("axis = 1", f"axis = {axis}", 1))
    code = cli.run(["recipe", "build", str(recipe), str(tmp_path / "o.tflite")])
    lines = capsys.readouterr().err.strip().splitlines()
    if refused:
        assert (
            code == 1
            and len(lines) == 1
            and f"(CONCATENATION) has axis = {axis}, outside its output's 4 axes" in lines[0]
        )
    else:
        assert code == 0 and lines == []
