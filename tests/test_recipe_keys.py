"""Recipes define what they say or are refused (issue 36): an unknown key or table anywhere is an
error naming it and the closest real name; a recipe with no operator is refused."""

from __future__ import annotations

import pytest

from bnfold import cli
from conftest import RECIPES


@pytest.mark.parametrize(
    "change, message",
    [
        (("[[operation]]", "[[operations]]"), "unknown key 'operations' (did you mean 'operation'?)"),
        (("stddev", "stdev"), "filler: unknown key 'stdev' (did you mean 'stddev'?)"),
        (("padding =", "paddin ="), "CONV_2D options: unknown key 'paddin' (did you mean 'padding'?)"),
        (("stride_w =", "strid_w ="), "Conv2DOptions: unknown key 'strid_w' (did you mean 'stride_w'?)"),
        (("rules = {", "rules = { CONV2D = 0,"), "[expect] rules: unknown key 'CONV2D' (did you mean 'CONV_2D'?)"),
        (("[expect]", "[expect]\nrtl = 1"), "[expect]: unknown key 'rtl' (did you mean 'rtol'?)"),
        (('type = "CONV_2D"', 'type = "CONV_2D"\nouputs = []'), "unknown key 'ouputs' (did you mean 'outputs'?)"),
    ],
)
def test_a_recipe_key_nobody_reads_is_refused_naming_the_closest(tmp_path, capsys, change, message):
    """A misspelt table or key defined nothing and the recipe passed (issue 36)."""
    text = (RECIPES / "Net_Conv_Add_Mul_000.toml").read_text()
    assert change[0] in text
    path = tmp_path / "typo.toml"
    path.write_text(text.replace(change[0], change[1], 1))
    assert cli.run(["recipe", "build", str(path), str(tmp_path / "m.tflite")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bnfold: error: {path}") and message in err and err.count("\n") == 1
    assert not (tmp_path / "m.tflite").exists()


@pytest.mark.parametrize(
    "text", ['description = "x"\n', 'input = []\noutput = []\n[[operand]]\nname = "a"\nshape = [1]\n']
)
def test_a_recipe_without_an_operator_is_refused(tmp_path, capsys, text):
    path = tmp_path / "empty.toml"
    path.write_text(text)
    assert cli.run(["recipe", "build", str(path), str(tmp_path / "m.tflite")]) == 2
    assert "defines no operator" in capsys.readouterr().err
    assert cli.run(["recipe", "test", str(path)]) == 1
    assert capsys.readouterr().out.startswith("ERROR empty: ")
