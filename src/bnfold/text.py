"""What the command line prints, as lines of text made from the library's results (api.py).

No I/O here: the command line (cli/) prints these lines. A warning or note begins `bnfold: warning:` or
`bnfold: note:` wherever it is printed (the library's own strings, Selection.warnings() and
notes(), begin `warning:` / `note:`, and the command line adds `bnfold: `). Kept apart so the
CLI stays a shell (parse, call, print) and a program that calls the library can print the same
summaries.
"""

from __future__ import annotations

from collections.abc import Iterator


def optimize_summary(result, input_path: str) -> Iterator[str]:
    """The summary of `bnfold optimize`: operator counts, what each pass folded or left (only
    passes that found something), notes, the check, and what happened to the output file."""
    report = result.report
    yield from what_passes_did(report)
    dead = next((n["dead_code_removed"] for n in report["notes"] if "dead_code_removed" in n), None)
    if dead:
        yield "dead code removed: " + ", ".join(f"{n} {what}" for what, n in dead.items() if n)
    kept = next((n["dead_code_kept"] for n in report["notes"] if "dead_code_kept" in n), None)
    if kept:
        yield f"dead code kept: {kept['operators']} operator(s): {kept['why']}"
    reordered = next((n["reordered"] for n in report["notes"] if "reordered" in n), None)
    if reordered:
        yield f"reordered: {reordered['operators']} operator(s): {reordered['why']}"
    float16 = sum(1 for f in report["folds"] if f.get("float16_weights"))
    if float16:
        yield (
            f"float16: {float16} fold(s) rewrote float16 weights, each weight rounded once more "
            "(relative error <= 2^-11 per weight; see the report)"
        )
    if not report["converged"]:
        yield f"bnfold: warning: passes still changing the model after {report['rounds']} rounds; stopped"
    if result.lossy_note is not None:
        yield lossy_warning(result.lossy_note)
    if result.check is not None:
        checked, worst = result.check, result.check.worst
        yield (
            f"check: {checked.samples} sample(s) on {checked.backend}, {checked.scope} within {checked.tolerance} "
            f"(scaled err {worst.scaled:.3e}, max abs err {worst.max_abs:.3e})"
        )
        settled = [checked.spelling(o.name) for o in getattr(checked, "outputs", []) if o.settled]
        if settled:
            yield (
                f"check: {', '.join(map(repr, settled))} differ beyond it only where a steep or discrete output "
                "amplifies float rounding; the rewrites under them, checked one by one, agree"
            )
        weak = weak_check_line(report["check"])
        if weak:
            yield weak
    model = result.model
    why = None if model.changed else unchanged_why(report)
    was = (model.format.name, model.source.offset_layout) if model.source is not None else None
    yield written(result.written, input_path, why=why, was=was)


def what_passes_did(report: dict) -> Iterator[str]:
    """Operator counts, what each pass folded or left, what the target refused, the interface:
    the summary's first part, which a failed `optimize --check` prints too (from its report)."""
    from .engine.report import pass_counts

    yield from operator_counts(report["operators"]["before"], report["operators"]["after"])
    for name, (folds, skips) in pass_counts(report).items():
        if folds or skips:
            yield f"{name}: {folds} folded, {skips} skipped"
    yield left_line(report)
    yield from target_refusals(report["target"])
    yield from interface_changes(report.get("interface"))


def target_refusals(target: dict) -> Iterator[str]:
    """One line per pass and reason that the target runtime refused a rewrite for, and one per
    graph the target left as it is before any pass ran (engine/manager.py: no pass names it)."""
    from collections import Counter

    for r in target["refused"]:
        if "pass" not in r:
            yield f"{r['at']} for target {target['name']}: {r['reason']}"
    by_pass = Counter((r["pass"], r["reason"]) for r in target["refused"] if "pass" in r)
    for (name, reason), count in by_pass.items():
        yield f"{name}: {count} not made for target {target['name']}: {reason}"


def interface_changes(interface: dict | None) -> Iterator[str]:
    """What a pass parameter did to the model's inputs and outputs, one line each."""
    if not interface:
        return
    by = ", ".join(interface["parameters"])
    for side in ("input", "output"):
        for t in interface[f"{side}s"]:
            yield f"{by}: {side} {t['name']} is now NHWC {t['shape']} (was {t['was']})"
    for t in interface["kept"]:
        yield f"{by}: {t['side']} {t['name']} {t['shape']} left as it was: {t['reason']}"


def weak_check_line(note: dict) -> str | None:
    """What the summary of `optimize --check` adds about outputs that barely varied (from the
    report's check entry), or None."""
    weak = [o for o in note.get("outputs", []) if o.get("strength", {}).get("level", "full") != "full"]
    if not weak:
        return None
    from .check_names import describe
    from .values.h5io import ones_name

    listed = "; ".join(describe(ones_name(o["name"]), o["strength"]["level"], o["strength"]["why"]) for o in weak)
    entry = note.get("weak_outputs")
    if entry is None:
        after = "the rewrites under them were not checked one by one (--check-mode auto does)"
    elif entry["checked"]:
        after = f"the {len(entry['rewrites'])} rewrite(s) under them checked one by one, all within tolerance"
    else:
        after = f"the rewrites under them could not be checked one by one: {entry['why']}"
    return f"check: weak: {listed}; {after}"


def operator_counts(before: dict, after: dict) -> Iterator[str]:
    """A table of operator kinds, before and after; `*` marks a kind whose count changed."""
    kinds = sorted(set(before) | set(after), key=lambda k: (-before.get(k, 0), k))
    width = max([len(k) for k in kinds] + [8])
    yield f"{'operator':<{width}}  {'before':>7}  {'after':>7}"
    for k in kinds:
        b, a = before.get(k, 0), after.get(k, 0)
        yield f"{k:<{width}}  {b:>7}  {a:>7}{'' if a == b else '  *'}"
    yield f"{'total':<{width}}  {sum(before.values()):>7}  {sum(after.values()):>7}"


def lossy_warning(note: dict) -> str:
    """The line a lossy change always gets (even with --quiet): which passes, how large the error."""
    what = ", ".join(note["lossy_passes"])
    if not note.get("measured"):
        return f"bnfold: warning: {what} changed the model (LOSSY); the error could not be measured: {note['reason']}"
    return (
        f"bnfold: warning: {what} changed the model (LOSSY): max abs err {note['max_abs']:.3e}, max rel err "
        f"{note['max_rel']:.3e}, scaled err {note['scaled_err']:.3e} over {note['samples']} random input(s) "
        f"on {note['backend']}"
        + (f", {note['max_steps']:.3g} quantization step(s) at a quantized output" if "max_steps" in note else "")
    )


def left_line(report: dict) -> str:
    """What is left in the output for `inspect --leftovers` to explain: the total the per-pass
    skipped counts add up to (with those no pass that ran spoke about)."""
    from .engine.report import leftover_counts

    candidates, transposes, unclaimed = leftover_counts(report)
    line = f"left: {plural(candidates, 'batch-norm candidate')}, {plural(transposes, 'transpose')}"
    if unclaimed:
        line += f", {unclaimed} of {'them' if candidates + transposes > 1 else 'it'} outside every pass that ran"
    return line + (" (inspect --leftovers)" if candidates or transposes else "")


def unchanged_why(report: dict) -> str:
    """Why no pass changed the model, in a few words: none ran, none found anything, or the
    commonest reason the report gives for what is left."""
    if not report["passes"]:
        return "no pass ran"
    entries = [*report["skips"], *report.get("transposes", [])]
    if not entries:
        return "nothing in it for the passes that ran"
    reasons = [e["reason"].rsplit(" (it sits", 1)[0] for e in entries]
    commonest = max(dict.fromkeys(reasons), key=reasons.count)
    others = len(set(reasons)) - 1
    return commonest + (f"; {plural(others, 'other reason')} in the report" if others else "")


def written(info, input_path: str, why: str | None = None, was: tuple[str, bool] | None = None) -> str:
    """The last line of a write: what happened to the output file. `why`: no pass changed the
    model, and why; a file written anyway then says what differs from `was` (the input's format
    and whether it stored offset buffers)."""
    because = f" ({why})" if why else ""
    if not info.written:
        return f"unchanged{because}: {input_path} left as it is"
    if info.unchanged:
        return f"unchanged{because}: wrote {info.path} (a copy of {input_path})"
    if why is not None:
        return (
            f"wrote {info.path}: no pass changed the model{because}; only the file differs ({_file_change(info, was)})"
        )
    return f"wrote {info.path}"


def _file_change(info, was: tuple[str, bool] | None) -> str:
    """What a write of a model no pass changed changed: its format, its buffer layout."""
    layouts = {True: "offset buffers", False: "standard"}
    changes = []
    if was is not None and was[0] != info.format:
        changes.append(f"format {was[0]} -> {info.format}")
    if was is not None and was[1] != info.external:
        changes.append(f"buffer layout {layouts[was[1]]} -> {layouts[info.external]}")
    return ", ".join(changes) or "written anew"


def plural(count: int, word: str) -> str:
    """`1 operator`, `2 operators`, `0 operators`."""
    return f"{count} {word}{'s' * (count != 1)}"


def files(paths: list[str]) -> str:
    """One file, or the first and last of a numbered series."""
    return paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"


def model_listing(path: str, model, *, operators: bool = False, tensors: bool = False) -> Iterator[str]:
    """`bnfold inspect`: format, operator counts, and optionally every operator and tensor."""
    yield f"{path}: {model.format.name}, {len(model.graphs)} subgraph(s), {len(model.buffers)} buffers"
    for kind, count in sorted(model.op_counts().items(), key=lambda kv: (-kv[1], kv[0])):
        yield f"{kind:<24} {count}"
    for gi, graph in enumerate(model.graphs):
        if operators:
            yield f"subgraph {gi} {graph.name or ''}".rstrip()
            for i, op in enumerate(graph.ops):
                ins = ", ".join("-" if t is None else t.name for t in op.inputs)
                act = f" [{op.fused_activation}]" if op.fused_activation != "NONE" else ""
                yield f"  {i:>4} {op.kind}{act} ({ins}) -> ({', '.join(t.name for t in op.outputs)})"
        if tensors:
            yield f"subgraph {gi} tensors"
            for i, t in enumerate(graph.tensors):
                yield f"  {i:>4} {t.name} {t.dtype}{list(t.shape)}{' const' if t.is_const else ''}"


def leftovers(found, report_path: str | None) -> Iterator[str]:
    """`inspect --leftovers`: each batch-norm candidate and TRANSPOSE, where it sits and (with a
    report) why it stayed."""
    assert found.candidates is not None and found.transposes is not None  # inspect(leftovers=True) listed them
    yield f"batch-norm candidates: {len(found.candidates)}"
    for r in found.candidates:
        act = f" [{r['activation']}]" if r["activation"] != "NONE" else ""
        axis = "a scalar" if r["axis"] is None else f"along axis {r['axis']} of {r['data_shape']}"
        via = " behind a DEQUANTIZE" if r["dequantized"] else ""
        yield f"  subgraph {r['subgraph']} #{r['index']} {r['kind']}{act} -> {r['output']!r}"
        yield f"      constant {r['constant']!r} {r['dtype']}{r['shape']}{via}, {axis}"
        yield f"      data from {r['data_from']}; read by {', '.join(r['read_by']) or 'nothing'}"
        if len(r["chain"]) > 1:
            yield f"      chain {' -> '.join(r['chain'])}"
        if report_path is not None:
            if r["reason"] is None:
                yield "      stays: (no entry in the report: is it the report of the run that wrote this model?)"
            else:
                yield f"      stays: {r['reason']} [{', '.join(r['passes']) or 'no pass spoke; from where it sits'}]"
    if found.unmatched:
        first = found.unmatched[0]
        yield (
            f"bnfold: warning: {len(found.unmatched)} skip entries of {report_path} name no candidate of this model "
            f"(first: {first[1]} -> {first[2]!r})"
        )
    yield f"transposes: {len(found.transposes)}"
    for r in found.transposes:
        yield f"  subgraph {r['subgraph']} #{r['index']} TRANSPOSE {r['perm']} -> {r['output']!r}"
        yield f"      data from {r['data_from']}; read by {', '.join(r['read_by']) or 'nothing'}"
        if report_path is not None:
            yield f"      stays: {r['reason'] or '(no entry in the report)'}"


def pass_table(
    passes, o1, one_options=frozenset(), parameters=frozenset(), refused=None, o1_added=frozenset()
) -> Iterator[str]:
    """`bnfold passes`: name, [exact/LOSSY, default, ONE or O1], summary, in aligned columns; then
    every ONE option (`one_options`) bnfold does not implement, marked so (O1 if in the group), and
    those it refuses deliberately (`refused`: name -> why) with the reason.
    A pass or parameter under a ONE option name is ONE's option, implemented ("O1" says ONE too: ONE's
    O1 group `o1`); "ONE, -O1" is a ONE option outside ONE's O1 that bnfold's -O1 adds (`o1_added`)."""
    refused = refused or {}
    registered = {p.name for p in passes}

    def origin(name: str) -> str:
        if name in o1:
            return ", O1"
        if name in o1_added:
            return ", ONE, -O1"
        return ", ONE" if name in one_options else ""

    tags = [f"[{'exact' if p.exact else 'LOSSY'}{', default' if p.default else ''}{origin(p.name)}]" for p in passes]
    missing = sorted(set(one_options) - registered - set(parameters))
    missing_tags = [
        "[refused]" if name in refused else f"[not in bnfold{', O1' if name in o1 else ''}]" for name in missing
    ]
    names = [p.name for p in passes] + missing
    name_width, tag_width = max(map(len, names)), max(map(len, tags + missing_tags))
    for p, tag in zip(passes, tags):
        yield f"{p.name:<{name_width}}  {tag:<{tag_width}}  {p.summary}"
    if missing:
        yield ""
        yield (
            "ONE's options bnfold does not implement or refuses (switched on: a warning, then ignored; "
            "--strict refuses):"
        )
        for name, tag in zip(missing, missing_tags):
            yield f"{name:<{name_width}}  {tag}" + (f"  {refused[name]}" if name in refused else "")


def batch_problems(result) -> Iterator[str]:
    """`optimize --out-dir` on stderr: each failed model's one-line error and each lossy change's
    warning, in input order."""
    for model in result.models:
        if model.error:
            yield f"bnfold: error: {model.error}"
        note = model.report and next((n for n in model.report["notes"] if "lossy_passes" in n), None)
        if note:
            yield f"{model.input}: {lossy_warning(note)}"


def batch_table(totals: dict) -> list[str]:
    """`optimize --out-dir`'s closing table (batch.BatchResult.totals())."""
    head = ("models", "changed", "unchanged", "failed", "operators before -> after", "seconds")
    operators = f"{totals['operators']['before']} -> {totals['operators']['after']}"
    row = (*(str(totals[k]) for k in head[:4]), operators, f"{totals['seconds']:.2f}")
    widths = [max(len(h), len(v)) for h, v in zip(head, row)]
    return ["  ".join(h.rjust(w) for h, w in zip(head, widths)), "  ".join(v.rjust(w) for v, w in zip(row, widths))]


def recipe_verdict(outcomes: list) -> tuple[str, int]:
    """The summary line and the exit code: 1 when a recipe failed, else 4 when one could not be
    verified, else 0."""
    failed = [o for o in outcomes if not o.passed and not o.unverified]
    unverified = [o for o in outcomes if o.unverified]
    line = f"{len(outcomes) - len(failed) - len(unverified)} passed, {len(failed)} failed, {len(unverified)} unverified"
    return line, 1 if failed else 4 if unverified else 0
