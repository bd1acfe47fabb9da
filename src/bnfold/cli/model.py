"""The commands on one model file: `convert`, `inspect`, and `passes` (what can run on one)."""

from __future__ import annotations

import click

from .. import api, one, text
from ..errors import UsageError
from .options import echo_lines, quiet_option


@click.command()
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option(
    "--external-buffers", is_flag=True, help="Store weights after the flatbuffer (Buffer.offset/size layout)."
)
@click.option("--in-place", is_flag=True, help="Allow OUT to be IN and overwrite it.")
@quiet_option
def convert(input_path, output_path, external_buffers, in_place, quiet):
    """Write IN as OUT, in the format OUT's extension names (.tflite or .circle)."""
    info = api.convert(input_path, output_path, external_buffers=external_buffers, in_place=in_place)
    if quiet:
        return
    layout = "offset buffers" if info.external else "standard"
    click.echo(f"{text.written(info, input_path)} ({info.format}, {layout} layout, {info.size} bytes)")


@click.command()
@click.argument("model_path", metavar="MODEL")
@click.option("--operators", is_flag=True, help="List every operator with its inputs and outputs.")
@click.option("--tensors", is_flag=True, help="List every tensor.")
@click.option(
    "--leftovers",
    is_flag=True,
    help="List the batch-norm candidates (MUL/ADD/SUB/DIV by a per-channel or scalar constant) and the "
    "TRANSPOSEs, and where they sit.",
)
@click.option(
    "--report",
    "report_path",
    default=None,
    metavar="R.json",
    help="With --leftovers: the report of the optimize run that wrote MODEL, to say why each candidate stayed.",
)
def inspect(model_path, operators, tensors, leftovers, report_path):
    """Print operator counts of MODEL (and, optionally, its operators, tensors and batch-norm leftovers)."""
    if report_path and not leftovers:
        raise UsageError("--report needs --leftovers")
    found = api.inspect(model_path, leftovers=leftovers, report=report_path)
    echo_lines(text.model_listing(model_path, found.model, operators=operators, tensors=tensors))
    if leftovers:
        echo_lines(text.leftovers(found, report_path))


@click.command(name="passes")
def list_passes():
    """List the passes, in the order they run: exact or lossy, on by default, ONE's option, in its O1
    group or added to -O1 by bnfold; then ONE's options bnfold does not implement."""
    parameters = {name for spec in api.PASSES for name in spec.parameters}
    echo_lines(text.pass_table(api.PASSES, one.O1, one.PASS_OPTIONS, parameters, one.REFUSED, one.O1_DECODER_ADDITIONS))
