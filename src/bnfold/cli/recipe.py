"""`bnfold recipe build` and `recipe test`: models from TOML recipes, value-tested as CI would."""

from __future__ import annotations

import click

from .. import api, text
from ..errors import CannotVerify, CheckFailed
from .options import BACKEND, SAMPLES, SEED, quiet_option


@click.group()
def recipe():
    """Build models from TOML recipes (recipes/*.toml) and value-test them as CI would."""


@recipe.command(name="build")
@click.argument("recipe_path", metavar="RECIPE.toml")
@click.argument("output_path", metavar="OUT")
@quiet_option
def recipe_build(recipe_path, output_path, quiet):
    """Build RECIPE into OUT (.tflite or .circle)."""
    model = api.build_recipe(recipe_path, output_path)
    if quiet:
        return
    click.echo(f"wrote {output_path} ({text.plural(sum(len(g.ops) for g in model.graphs), 'operator')})")


@recipe.command(name="test")
@click.argument("recipes", nargs=-1, required=True, metavar="RECIPE_OR_DIR...")
@click.option("--junit", "junit_path", default=None, metavar="report.xml", help="Also write the results as JUnit XML.")
@click.option("--force", is_flag=True, help="Let --junit replace an existing model file.")
@click.option("--samples", type=SAMPLES, default=2, show_default=True, metavar="N", help="Random samples per recipe.")
@click.option(
    "--seed",
    type=SEED,
    default=1,
    show_default=True,
    metavar="S",
    help="Seed of the random inputs (1, the seed the project's recipe tests were measured with).",
)
@click.option(
    "--backend",
    type=BACKEND,
    default="auto",
    show_default=True,
    help="auto: onert for Circle where it loads both models, then LiteRT, else the reference interpreter.",
)
@quiet_option
def recipe_test(recipes, junit_path, force, samples, seed, backend, quiet):
    """Value-test recipes as CI would: build, store input/expected h5, optimize, check rules and values."""
    outcomes = api.test_recipes(
        recipes,
        samples=samples,
        seed=seed,
        backend=backend,
        junit=junit_path,
        force=force,
        on_outcome=lambda outcome: None if quiet and outcome.passed else click.echo(outcome.line()),
    )
    line, code = text.recipe_verdict(outcomes)
    if code or not quiet:
        click.echo(line)
    failed = [o.name for o in outcomes if not o.passed and not o.unverified]
    unverified = [o.name for o in outcomes if o.unverified]
    if code == 1:
        raise CheckFailed(f"{len(failed)} of {len(outcomes)} recipes failed: {', '.join(failed)}")
    if code == 4:
        raise CannotVerify(
            f"{len(unverified)} of {len(outcomes)} recipes could not be verified: {', '.join(unverified)}"
        )
