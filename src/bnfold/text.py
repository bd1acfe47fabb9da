"""What the command line prints, as lines of text made from the library's results (api.py).

No I/O here: cli.py prints these lines. Kept apart so the CLI stays a shell (parse, call, print)
and a program that calls the library can print the same summaries.
"""

from __future__ import annotations

from collections.abc import Iterator


def optimize_summary(result, input_path: str) -> Iterator[str]:
    """The summary of `bnfold optimize`: operator counts, what each pass folded or left (only
    passes that found something), notes, the check, and what happened to the output file."""
    report = result.report
    yield from operator_counts(report["operators"]["before"], report["operators"]["after"])
    for name, (folds, skips) in result.pass_counts().items():
        if folds or skips:
            yield f"{name}: {folds} folded, {skips} skipped"
    yield from target_refusals(report["target"])
    yield from interface_changes(report.get("interface"))
    float16 = sum(1 for f in report["folds"] if f.get("float16_weights"))
    if float16:
        yield (
            f"float16: {float16} fold(s) rewrote float16 weights, each weight rounded once more "
            "(relative error <= 2^-11 per weight; see the report)"
        )
    if not report["converged"]:
        yield f"warning: passes still changing the model after {report['rounds']} rounds; stopped"
    if result.lossy_note is not None:
        yield lossy_warning(result.lossy_note)
    if result.check is not None:
        checked, worst = result.check, result.check.worst
        yield (
            f"check: {checked.samples} sample(s) on {checked.backend}, {checked.scope} within {checked.tolerance} "
            f"(scaled err {worst.scaled:.3e}, max abs err {worst.max_abs:.3e})"
        )
        weak = weak_check_line(report["check"])
        if weak:
            yield weak
    yield written(result.written, input_path)


def target_refusals(target: dict) -> Iterator[str]:
    """One line per pass and reason that the target runtime refused a rewrite for."""
    from collections import Counter

    for (name, reason), count in Counter((r["pass"], r["reason"]) for r in target["refused"]).items():
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
    listed = "; ".join(f"{o['name']!r} {o['strength']['level']}: {o['strength']['why']}" for o in weak)
    entry = note.get("weak_outputs")
    if entry is None:
        after = "the rewrites under them were not checked one by one (--check-mode auto does)"
    elif entry["checked"]:
        after = f"the {len(entry['rewrites'])} rewrite(s) under them checked one by one, all within tolerance"
    else:
        after = f"the rewrites under them could not be checked one by one: {entry['why']}"
    return f"check: weak for {listed}; {after}"


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
        return f"warning: {what} changed the model (LOSSY); the error could not be measured: {note['reason']}"
    return (
        f"warning: {what} changed the model (LOSSY): max abs err {note['max_abs']:.3e}, max rel err "
        f"{note['max_rel']:.3e}, scaled err {note['scaled_err']:.3e} over {note['samples']} random input(s) "
        f"on {note['backend']}"
    )


def written(info, input_path: str) -> str:
    """The last line of a write: what happened to the output file."""
    if not info.written:
        return f"unchanged: {input_path} left as it is"
    if info.unchanged:
        return f"unchanged: wrote {info.path} (a copy of {input_path})"
    return f"wrote {info.path}"


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
            f"warning: {len(found.unmatched)} skip entries of {report_path} name no candidate of this model "
            f"(first: {first[1]} -> {first[2]!r})"
        )
    yield f"transposes: {len(found.transposes)}"
    for r in found.transposes:
        yield f"  subgraph {r['subgraph']} #{r['index']} TRANSPOSE {r['perm']} -> {r['output']!r}"
        yield f"      data from {r['data_from']}; read by {', '.join(r['read_by']) or 'nothing'}"
        if report_path is not None:
            yield f"      stays: {r['reason'] or '(no entry in the report)'}"


def pass_table(passes, o1) -> Iterator[str]:
    """`bnfold passes`: name, [exact/LOSSY, default, O1], summary, in aligned columns."""
    tags = [
        f"[{'exact' if p.exact else 'LOSSY'}{', default' if p.default else ''}{', O1' if p.name in o1 else ''}]"
        for p in passes
    ]
    name_width, tag_width = max(len(p.name) for p in passes), max(len(t) for t in tags)
    for p, tag in zip(passes, tags):
        yield f"{p.name:<{name_width}}  {tag:<{tag_width}}  {p.summary}"


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
