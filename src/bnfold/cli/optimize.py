"""`bnfold optimize`: IN to OUT, or many models into --out-dir (batch mode)."""

from __future__ import annotations

import functools
import os

import click

from .. import api
from ..errors import EXIT_PRECEDENCE, CheckFailed, UsageError
from . import ends_process
from .flags import PASS_NAMES, Optimize, pass_flags
from .options import BACKEND, SAMPLES, SEED, TOLERANCE, echo_lines


def _one_path(what: str, positional: str | None, option: str | None) -> str | None:
    if positional and option and positional != option:
        raise UsageError(f"{what} given twice: {positional!r} and {option!r}")
    return positional or option


@click.command(cls=Optimize)
@click.argument("paths", nargs=-1, metavar="IN OUT | --out-dir DIR PATH...")
@click.option(
    "-i",
    "--input_path",
    "--input",
    "input_option",
    metavar="IN",
    help="The input model (one-optimize's spelling of IN).",
)
@click.option(
    "-o",
    "--output_path",
    "--output",
    "output_option",
    metavar="OUT",
    help="The output model (one-optimize's spelling of OUT).",
)
@click.option(
    "--passes",
    default=None,
    metavar="A,B",
    help="Comma-separated passes to run ('' runs none). Default: the exact default set.",
)
@click.option(
    "-O",
    "group",
    default=None,
    metavar="1",
    help="-O1: run ONE's O1 group (the members bnfold implements; the others are listed) and ONE's exact "
    "decoder fusions, which ONE ships outside O1 (one.py's O1_DECODER_ADDITIONS).",
)
@click.option(
    "-C",
    "--config",
    "config_path",
    type=str,
    default=None,
    metavar="ONE.cfg",
    help="one-cmds configuration file; reads its [one-optimize] section (and [onecc] include=O1).",
)
@click.option(
    "--strict", is_flag=True, help="Refuse (exit 2) ONE options bnfold does not implement, instead of warning."
)
@click.option(
    "--force",
    is_flag=True,
    help="Let --report/--node-data/--node-data-input replace an existing model file (never this run's own).",
)
@click.option(
    "--report",
    "report_path",
    default=None,
    metavar="R.json",
    help="Write the report (passes, folds, refusals, operator counts, times) as JSON; '-' for stdout.",
)
@click.option(
    "--external-buffers", is_flag=True, help="Store weights after the flatbuffer (Buffer.offset/size layout)."
)
@click.option("--in-place", is_flag=True, help="Allow OUT to be IN (or omit OUT) and overwrite it.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@click.option(
    "--check",
    "check_samples",
    type=SAMPLES,
    default=None,
    metavar="N",
    help="Value-check the result against IN on N random samples before writing; if it fails, write no model "
    "(--report still tells the check).",
)
@click.option(
    "--rtol",
    type=TOLERANCE,
    default=None,
    help="--check: |a-b| <= atol + rtol*max|a| per output. Default 1e-5 (1e-2 when float16 weights were rewritten).",
)
@click.option("--atol", type=TOLERANCE, default=None, help="--check: absolute tolerance. Default 1e-5.")
@click.option(
    "--seed",
    "check_seed",
    type=SEED,
    default=0,
    metavar="S",
    help="--check: seed of the random samples (the samples `check --seed` and `recipe test --seed` draw).",
)
@click.option(
    "--node-data",
    default=None,
    metavar="ND.json",
    help="Write Model Explorer node data of OUT: what each op absorbed, why each candidate stayed.",
)
@click.option(
    "--node-data-input",
    default=None,
    metavar="ND.json",
    help="Write Model Explorer node data of IN: what was folded away, into what.",
)
@click.option(
    "--check-mode",
    type=click.Choice(api.CHECK_MODES),
    default="auto",
    show_default=True,
    help="--check: the whole model, each rewrite on its own, "
    "or auto (whole when a backend runs the model, else local).",
)
@click.option(
    "--backend",
    "check_backend",
    type=BACKEND,
    default="auto",
    show_default=True,
    help="--check: who runs the models (auto: onert where IN or OUT is Circle and it loads both, then LiteRT, then"
    " the reference).",
)
@click.option(
    "--target",
    type=click.Choice(api.TARGETS),
    default=None,
    help="The runtime OUT is made for: no pass makes what it cannot run (default: .tflite litert, .circle onert; "
    "any: only operators IN has).",
)
@click.option(
    "--out-dir",
    metavar="DIR",
    help="Optimize each PATH (model, or directory of them) into DIR; exit: the worst model's, "
    f"{' > '.join(map(str, (*EXIT_PRECEDENCE, 0)))}.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1),
    default=None,
    metavar="N",
    help="--out-dir: N worker processes (default: the CPUs).",
)
@click.option(
    "--shard", default=None, metavar="K/N", help="--out-dir: only the K-th of N equal shares of the models (K = 1..N)."
)
@pass_flags  # last in --help: the 30 pass flags after the options a run is shaped by
def optimize(
    paths,
    input_option,
    output_option,
    passes,
    group,
    config_path,
    strict,
    force,
    report_path,
    external_buffers,
    in_place,
    quiet,
    check_samples,
    rtol,
    atol,
    check_seed,
    node_data,
    node_data_input,
    check_mode,
    check_backend,
    target,
    out_dir,
    jobs,
    shard,
    **flags,
):
    """Run passes over IN and write the result to OUT (format from OUT's extension),
    or over every model of PATH... into DIR."""
    config = api.read_config(config_path) if config_path else None
    switches = dict(config.switches) if config else {}
    # the command line wins, as in ONE: a flag given (True), or a pass's --no-PASS (False; not given: None)
    switches.update({name: on for name, on in flags.items() if on or (on is False and name in PASS_NAMES)})
    if group is not None:
        from .. import one  # ONE's tables: only -O consults them here

        if f"O{group}" not in one.GROUPS:
            raise UsageError(f"-O{group}: bnfold knows the group(s) {', '.join('-' + g for g in one.GROUPS)}")
        switches[f"O{group}"] = True
    chosen = api.select(passes, switches, default=config is None, strict=strict)
    to_stdout = report_path == "-"
    echo = functools.partial(click.echo, err=to_stdout)  # stdout carries the JSON then
    if not quiet:  # -q: nothing on success; what is ignored is in the report, and --strict refuses it
        echo_lines([f"bnfold: {line}" for line in chosen.warnings()], functools.partial(click.echo, err=True))
        echo_lines([f"bnfold: {line}" for line in chosen.notes()], echo)
    same = dict(
        force=force,
        external_buffers=external_buffers,
        check=check_samples,
        check_mode=check_mode,
        rtol=rtol,
        atol=atol,
        check_seed=check_seed,
        check_backend=check_backend,
        target=target,
    )
    if out_dir is not None:  # progress.py: a bar on a terminal, the failures in input order, one table
        from .. import progress  # only for --out-dir: it loads the batch machinery (~2 ms)

        one_model = (input_option, output_option, in_place, node_data, node_data_input)
        click.get_current_context().exit(
            progress.optimize_many(
                paths,
                out_dir,
                chosen,
                quiet,
                one_model,
                jobs=jobs,
                shard=shard,
                report=report_path,
                run_files=[config_path],
                **same,
            )
        )
    given = _one_path("IN", (*paths, None)[0], input_option)
    input_path = given or (config and config.input_path)
    output_path = _one_path("OUT", (*paths, None, None)[1], output_option) or (config and config.output_path)
    if given and os.path.isdir(given):  # `optimize DIR OUT`: the batch mode was meant
        raise UsageError(f"is a directory: to optimize the models in it, use --out-dir OUT_DIR {given}", given)
    if config and not input_path:
        raise UsageError("[one-optimize] has no input_path, and no IN was given (argument or -i)", config.path)
    if not input_path or not (output_path or in_place) or len(paths) > 2 or jobs or shard:
        raise UsageError(
            "need IN and OUT (as arguments, -i/-o, or input_path/output_path in --config); "
            "several models, -j, --shard: --out-dir"
        )
    if ends_process():  # one model, then the exit: no collection walks its IR for nothing (api.pause_to_exit)
        api.pause_to_exit()
    try:
        result = api.optimize_file(
            input_path,
            output_path,
            chosen,
            in_place=in_place,
            node_data=node_data,
            node_data_input=node_data_input,
            report=None if to_stdout else report_path,
            run_files=[config_path],
            **same,
        )
    except UsageError as e:
        if config and not given and e.path == input_path:  # the cfg's input_path: say where it came from
            raise config.named("input_path", e) from None
        raise
    except CheckFailed as e:  # what the passes did, then the check that refused it
        if e.report is not None and not quiet:
            from .. import text  # the printed summaries: loaded only to print one

            echo_lines(text.what_passes_did(e.report), echo)
        if e.result is not None:
            click.echo(e.result.table(), err=to_stdout)
        if to_stdout and getattr(e, "report", None) is not None:  # the failed check's report, as a file gets it
            import json

            click.echo(json.dumps(e.report, indent=2))
        raise
    if to_stdout:
        click.echo(result.to_json())
    if quiet and result.lossy_note is None:
        return  # nothing to print, nor text.py's summaries to load
    from .. import text

    if not quiet:
        echo_lines(text.optimize_summary(result, input_path), echo)
    elif result.lossy_note is not None:  # a lossy change is never silent
        click.echo(text.lossy_warning(result.lossy_note), err=True)
