"""The gate's result for people and pipelines: text, JSON, Markdown and JUnit XML.

Every format carries every rule (passed, failed or not applicable), the mode the drops
were judged in, the confidence intervals, the diagnosis and the per-case diff.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.border import json_line, printable
from evaluator.gate.compare import Alignment, CaseChange
from evaluator.gate.repeats import RepeatVerdict
from evaluator.gate.rules import RuleResult, format_difference, format_value
from evaluator.gate.stats import CONFIDENCE, RESAMPLES, SEED, Interval
from evaluator.gate.verdict import GateResult
from evaluator.report import RunReport, format_timestamp

__all__ = [
    "FORMATS",
    "GateSources",
    "json_pieces",
    "render",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_text",
    "result_to_dict",
]

FORMATS: tuple[str, ...] = ("text", "json", "markdown")

#: How many removed/added/missing ids the text and Markdown list before "and N more".
_ID_LIMIT = 20


@dataclass(frozen=True, slots=True)
class GateSources:
    """Where the inputs came from, for the headers of every format."""

    baseline: str = "baseline"
    candidate: str = "candidate"
    rules: str = "built-in defaults"


def _ids(ids: Sequence[str], limit: int = _ID_LIMIT) -> str:
    shown = ", ".join(map(printable, ids[:limit]))
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _headline(result: GateResult) -> str:
    """The first line: refused, passed, or failed and why."""
    applicable = [r for r in result.rules if r.applicable]
    na = len(result.rules) - len(applicable)
    na_text = f" ({na} not applicable)" if na else ""
    if result.refused:
        return "gate REFUSED: " + "; ".join(result.refused)
    if result.passed:
        return f"gate passed: {len(applicable)} of {len(result.rules)} rules passed{na_text}"
    return "gate FAILED: " + "; ".join(_failed_parts(result, na_text))


def _failed_parts(result: GateResult, na_text: str) -> list[str]:
    """Why a gate failed: its failed rules, missing cases, cases regressed beyond chance,
    and a failed judged rule."""
    parts = []
    if result.failures:
        parts.append(f"{len(result.failures)} of {len(result.rules)} rules failed{na_text}")
    if result.missing_ids:
        parts.append(f"candidate lacks {len(result.missing_ids)} baseline case(s)")
    if result.repeats is not None and result.repeats.regressed:
        parts.append(f"{len(result.repeats.regressed)} case(s) regressed beyond chance")
    if result.judged is not None and result.judged.failed:
        parts.append("a judged rule failed")
    return parts


def _judged_lines(result: GateResult) -> list[str]:
    """The judged rules' lines (their own header first), after a blank line; none without
    judged rules."""
    return ["", *result.judged.lines] if result.judged is not None else []


def _verdict_line(result: GateResult) -> str:
    """``verdict: FAIL (exit 2)``: what the gate decided and the code the process returns."""
    return f"verdict: {result.verdict.upper()} (exit {result.exit_code})"


def _repeat_lines(result: GateResult) -> list[str]:
    """Repeats, per-case regressions, flaky cases and what was left out: never silent."""
    rv = result.repeats
    if rv is None:
        return []
    lines = [
        "",
        f"repeats: baseline {rv.baseline_runs} run(s) per case, candidate "
        f"{rv.candidate_runs}; a case regressed when its pass rate dropped beyond chance "
        f"(one-sided Fisher exact test, alpha {rv.alpha:g} over all cases, "
        f"level {rv.threshold:.3g})",
        _judged_runs_line(rv),
    ]
    hats = ", ".join(f"pass^{k} {v:.3f}" for k, v in rv.pass_hat_k.items() if v is not None)
    if hats:
        lines.append(f"  candidate: {hats}")
    lines.append(_regressed_line(rv))
    lines.append(
        f"flaky (pass and fail within one report's repeats) ({len(rv.flaky)}): "
        f"{_ids(list(rv.flaky)) or '-'}"
    )
    if rv.left_out:
        lines.append(_left_out_line(rv))
    return lines


def _judged_runs_line(rv: RepeatVerdict) -> str:
    """What the hard rules judged of each side: its cases' means over the runs, or run 1."""
    if not rv.baseline_means and not rv.candidate_means:
        return "  the rules judge the first run of each case"
    return (
        "  the rules judge each case's mean over its runs "
        f"(baseline {rv.baseline_runs if rv.baseline_means else 'run 1 only'}, "
        f"candidate {rv.candidate_runs if rv.candidate_means else 'run 1 only'})"
    )


def _regressed_line(rv: RepeatVerdict) -> str:
    """The cases whose pass rate dropped beyond chance, with their counts and p-values."""
    status = "FAIL" if rv.regressed else "pass"
    names = ", ".join(
        f"{printable(r.id)} ({r.baseline_passes}/{r.baseline_runs} -> "
        f"{r.candidate_passes}/{r.candidate_runs}, p {r.p_value:.3g})"
        for r in rv.regressed[:_ID_LIMIT]
    )
    return f"{status:<4} cases regressed beyond chance: {len(rv.regressed)}" + (
        f": {names}" if names else ""
    )


def _left_out_line(rv: RepeatVerdict) -> str:
    """The cases the quarantine left out of the hard rules, and why."""
    by_reason = ", ".join(f"{cid} ({why})" for cid, why in list(rv.left_out.items())[:_ID_LIMIT])
    more = len(rv.left_out) - _ID_LIMIT
    return f"LEFT OUT of the hard rules ({len(rv.left_out)}): {by_reason}" + (
        f" and {more} more" if more > 0 else ""
    )


def _mode(result: GateResult) -> str:
    if result.significance:
        return (
            "significance (a drop rule fails only when its paired 95% CI lies entirely "
            "beyond the allowance)"
        )
    return "point values (--significance judges drops on their paired 95% CIs)"


def _describe(report: RunReport) -> str:
    return (
        f"{printable(report.dataset)}, target {printable(report.target)}, K={report.k}, "
        f"{report.case_count} cases, run {printable(report.run_id)}"
    )


def _missing_line(result: GateResult) -> str:
    return f"cases: candidate lacks {len(result.missing_ids)} baseline case(s): " + _ids(
        result.missing_ids
    )


def _ordered(result: GateResult) -> list[RuleResult]:
    """Failures first, then passes, then not applicable; rule order within each."""
    rank = {"fail": 0, "pass": 1, "n/a": 2}
    return sorted(result.rules, key=lambda r: rank[r.status])


def render_text(result: GateResult, sources: GateSources, *, worst: int = 10) -> str:
    """The plain-text report (the default): verdict, every rule, CIs, diagnosis, cases."""
    lines = [
        _headline(result),
        f"baseline:  {sources.baseline} ({_describe(result.baseline)})",
        f"candidate: {sources.candidate} ({_describe(result.candidate)})",
        f"rules: {sources.rules}",
        f"mode: {_mode(result)}",
        "",
    ]
    for r in _ordered(result):
        lines.append(f"{r.status.upper() if r.status == 'fail' else r.status:<4} {r.message}")
    if result.missing_ids:
        lines.append(f"FAIL {_missing_line(result)}")
    lines += _judged_lines(result)
    lines += _repeat_lines(result)
    lines += _alignment_lines(result.alignment)
    lines += ["", *_interval_lines(result)]
    if result.diagnosis:
        lines += ["", "where to look:"]
        lines += [f"  - {f.signal}: look at {f.look_at}" for f in result.diagnosis]
    diff = result.case_diff
    lines += [
        "",
        f"cases: {len(diff.regressed)} regressed, {len(diff.improved)} improved, "
        f"{diff.unchanged} unchanged ({diff.compared} compared)",
    ]
    lines += _changes_text("regressed, worst first:", diff.regressed, worst)
    lines += _changes_text("improved, best first:", diff.improved, worst)
    lines += ["", _verdict_line(result)]
    return "\n".join(lines)


def _alignment_lines(a: Alignment) -> list[str]:
    """A changed golden set (the shared cases compared, the removed and added ones), or the
    cases only the candidate holds."""
    if a.dataset_changed:
        return [
            "",
            f"golden set changed: comparing the {len(a.shared_ids)} shared case(s); "
            f"summaries recomputed over them",
            f"  removed ({len(a.removed_ids)}): {_ids(a.removed_ids) or '-'}",
            f"  added ({len(a.added_ids)}): {_ids(a.added_ids) or '-'}",
        ]
    if a.added_ids:
        return ["", f"cases only in the candidate ({len(a.added_ids)}): {_ids(a.added_ids)}"]
    return []


def _changes_text(title: str, changes: Sequence[CaseChange], worst: int) -> list[str]:
    """The first ``worst`` changed cases under ``title``, three lines each (none: nothing)."""
    if not changes:
        return []
    lines = [title]
    for change in changes[:worst]:
        # ids and questions come from outside: one terminal line each, whatever they hold
        relevant = ", ".join(map(printable, change.relevant_ids)) or "-"
        before = ", ".join(map(printable, change.baseline_ranked_ids[:5])) or "-"
        after = ", ".join(map(printable, change.candidate_ranked_ids[:5])) or "-"
        lines.append(f"  {printable(change.id)}: {'; '.join(change.changes)}")
        # a follow-up means nothing without the turns before it: they come first
        lines += [
            f"      #{n} {printable(question)}" for n, question in enumerate(change.earlier, 1)
        ]
        question = f"#{len(change.earlier) + 1} " if change.earlier else "q: "
        lines += [
            f"      {question}{printable(change.question)}",
            f"      relevant: {relevant}  baseline: {before}  candidate: {after}",
        ]
    if len(changes) > worst:
        lines.append(f"  ... and {len(changes) - worst} more (--worst N, or --format json)")
    return lines


def _interval_lines(result: GateResult) -> list[str]:
    if not result.intervals and result.differences:
        lines = [
            "paired differences, candidate - baseline, over cases matched by id "
            "(--significance adds 95% bootstrap CIs):",
            f"  {'metric':<22} {'diff':>8}  cases",
        ]
        for d in result.differences.values():
            lines.append(f"  {d.metric:<22} {d.mean_difference:>+8.4f}  {d.pairs}")
        return lines
    if not result.intervals:
        return ["paired differences: none (fewer than 2 cases matched by id)"]
    lines = [
        "paired differences, candidate - baseline, over cases matched by id "
        f"(95% bootstrap CI, {RESAMPLES} resamples, seed {SEED}):",
        f"  {'metric':<22} {'diff':>8} {'low':>8} {'high':>8}  cases",
    ]
    for iv in result.intervals.values():
        noise = "" if iv.excludes_zero else "  (includes 0)"
        if iv.low == iv.high == 0:
            noise = "  (no change)"
        lines.append(
            f"  {iv.metric:<22} {iv.mean_difference:>+8.4f} {iv.low:>+8.4f} {iv.high:>+8.4f}"
            f"  {iv.pairs}{noise}"
        )
    return lines


# --- JSON ---------------------------------------------------------------------------------


def _interval_dict(iv: Interval | None) -> dict[str, Any] | None:
    if iv is None:
        return None
    return {
        "pairs": iv.pairs,
        "mean_difference": iv.mean_difference,
        "low": iv.low,
        "high": iv.high,
        "confidence": iv.confidence,
    }


def _report_dict(report: RunReport, path: str) -> dict[str, Any]:
    return {
        "path": path,
        "run_id": report.run_id,
        "generated_at": format_timestamp(report.generated_at),
        "dataset": report.dataset,
        "dataset_hash": report.dataset_hash,
        "target": report.target,
        "k": report.k,
        "case_count": report.case_count,
        "config_hash": report.config_hash,
    }


def _change_dict(c: CaseChange) -> dict[str, Any]:
    out = {
        "id": c.id,
        "question": c.question,
        "severity": c.severity,
        # tuples encode as JSON arrays: no copy of each list for every changed case
        "changes": c.changes,
        "relevant_ids": c.relevant_ids,
        "baseline_ranked_ids": c.baseline_ranked_ids,
        "candidate_ranked_ids": c.candidate_ranked_ids,
    }
    if c.earlier:  # a conversation's turn: the questions before it (a question has none)
        out["earlier_questions"] = c.earlier
    return out


def result_to_dict(result: GateResult, sources: GateSources) -> dict[str, Any]:
    """The whole result as a JSON-ready dict (``--format json``)."""
    data = _head_dict(result, sources)
    data["cases"] = {
        **_case_counts(result),
        "regressed": [_change_dict(c) for c in result.case_diff.regressed],
        "improved": [_change_dict(c) for c in result.case_diff.improved],
    }
    return data


def _case_counts(result: GateResult) -> dict[str, int]:
    """The members of the result's ``cases`` before its two lists."""
    return {"compared": result.case_diff.compared, "unchanged": result.case_diff.unchanged}


def _head_dict(result: GateResult, sources: GateSources) -> dict[str, Any]:
    """:func:`result_to_dict` but its last member, ``cases``."""
    a = result.alignment
    return {
        "passed": result.passed,
        "verdict": result.verdict,
        # what the process returns, so a JSON reader need not know the numbers
        "exit_code": result.exit_code,
        "judged": None
        if result.judged is None
        else {
            "lines": list(result.judged.lines),
            "failed": result.judged.failed,
            "refused": list(result.judged.refused),
        },
        "mode": "significance" if result.significance else "point",
        "rules_source": sources.rules,
        "baseline": _report_dict(result.baseline, sources.baseline),
        "candidate": _report_dict(result.candidate, sources.candidate),
        "rules": [
            {
                "name": r.name,
                "metric": r.metric,
                "kind": r.rule.kind,
                "limit": r.rule.limit,
                "rule": r.rule.text,
                "status": r.status,
                "passed": r.passed,
                "applicable": r.applicable,
                "baseline": r.baseline,
                "candidate": r.candidate,
                "difference": r.difference,
                "judged_by": r.judged_by,
                "interval": _interval_dict(r.interval),
                "message": r.message,
            }
            for r in result.rules
        ],
        "missing_case_ids": list(result.missing_ids),
        "repeats": result.repeats.to_dict() if result.repeats is not None else None,
        "dataset_change": {
            "changed": a.dataset_changed,
            "shared": len(a.shared_ids),
            "removed_ids": list(a.removed_ids),
            "added_ids": list(a.added_ids),
        },
        "bootstrap": {"resamples": RESAMPLES, "seed": SEED, "confidence": CONFIDENCE},
        "intervals": {m: _interval_dict(iv) for m, iv in result.intervals.items()},
        "paired_differences": {
            m: {"pairs": d.pairs, "mean_difference": d.mean_difference}
            for m, d in result.differences.items()
        },
        "diagnosis": [
            {"area": f.area, "signal": f.signal, "look_at": f.look_at} for f in result.diagnosis
        ],
    }


def render_json(result: GateResult, sources: GateSources) -> str:
    """One line of JSON (``jq .`` pretty-prints it; an indent would take the pure-Python
    encoder, a tenth of the gate's time on 5,000 cases)."""
    return "".join(json_pieces(result, sources))


def _encode(value: object) -> str:
    # the result is a tree of fresh dicts and lists, never a cycle: no check for one (the
    # encoder's bookkeeping of every container, a tenth of encoding 100,000 changed cases)
    # escaped beyond C0: a U+2028 or NEL in a case id cannot break the line on a terminal
    return json_line(json.dumps(value, ensure_ascii=False, allow_nan=False, check_circular=False))


#: Changed cases encoded per piece: one encoder call each, well under a MB of text.
_PIECE_CASES = 1000


def json_pieces(result: GateResult, sources: GateSources) -> Iterator[str]:
    """:func:`render_json`'s text in pieces that add up to it exactly: the JSON object of
    :func:`result_to_dict` written member by member, each value by :func:`_encode`, and its
    last member's two lists of changed cases a thousand at a time, whole JSON objects.

    Written piece by piece, a 100,000-case gate never holds its whole JSON text (tens of
    MB, twice that as one str with any non-ASCII character) nor the encoder's list of
    fragments of it. A piece boundary is never inside a JSON string.
    """
    diff = result.case_diff
    yield "{" + _members(_head_dict(result, sources))
    yield '"cases": {' + _members(_case_counts(result)) + '"regressed": ['
    yield from _change_pieces(diff.regressed)
    yield '], "improved": ['
    yield from _change_pieces(diff.improved)
    yield "]}}"


def _members(members: dict[str, Any]) -> str:
    """JSON object members, each followed by the separator of the member after them."""
    return "".join(f"{_encode(name)}: {_encode(value)}, " for name, value in members.items())


def _change_pieces(changes: Sequence[CaseChange]) -> Iterator[str]:
    """The items of a JSON list of changed cases, :data:`_PIECE_CASES` at a time."""
    for start in range(0, len(changes), _PIECE_CASES):
        # a list's text without its brackets is its items joined by ", "
        items = _encode([_change_dict(c) for c in changes[start : start + _PIECE_CASES]])[1:-1]
        yield (", " if start else "") + items


# --- Markdown -----------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")


_ICONS = {"pass": "✅ pass", "fail": "❌ **fail**", "n/a": "➖ n/a"}


def _rule_rows_markdown(result: GateResult) -> list[str]:
    """The rules table: failures first, each with its values and paired interval."""
    lines = [
        "| result | metric | rule | baseline | candidate | difference | 95% CI of paired diff |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in _ordered(result):
        iv = r.interval
        ci = "" if iv is None else f"{iv.low:+.4f} … {iv.high:+.4f}"
        lines.append(
            f"| {_ICONS[r.status]} | `{r.metric}` | {r.rule.text} "
            f"| {format_value(r.metric, r.baseline)} | {format_value(r.metric, r.candidate)} "
            f"| {format_difference(r.metric, r.baseline, r.candidate)} | {ci} |"
        )
    return lines


def _differences_markdown(result: GateResult) -> list[str]:
    """The paired differences: with their bootstrap CIs under ``--significance``, else the
    mean differences alone (none: nothing)."""
    if result.intervals:
        return [
            "",
            "### Paired differences (candidate − baseline, 95% bootstrap CI)",
            "",
            "| metric | difference | CI low | CI high | cases |",
            "|---|---:|---:|---:|---:|",
            *(
                f"| `{iv.metric}` | {iv.mean_difference:+.4f} | {iv.low:+.4f} | {iv.high:+.4f} "
                f"| {iv.pairs} |"
                for iv in result.intervals.values()
            ),
        ]
    if not result.differences:
        return []
    return [
        "",
        "### Paired differences (candidate − baseline; `--significance` adds CIs)",
        "",
        "| metric | difference | cases |",
        "|---|---:|---:|",
        *(
            f"| `{d.metric}` | {d.mean_difference:+.4f} | {d.pairs} |"
            for d in result.differences.values()
        ),
    ]


def _in_context(change: CaseChange) -> str:
    """The question, after the turns before it when it is a conversation's."""
    if not change.earlier:
        return change.question
    return " → ".join((*change.earlier, change.question))


def _changes_markdown(title: str, changes: Sequence[CaseChange], worst: int) -> list[str]:
    """The first ``worst`` changed cases, folded under ``title`` (none: nothing)."""
    if not changes:
        return []
    lines = ["", f"<details><summary>{len(changes)} {title}</summary>", ""]
    lines += ["| case | question | changes |", "|---|---|---|"]
    lines += [
        f"| `{_cell(c.id)}` | {_cell(_in_context(c))} | {_cell('; '.join(c.changes))} |"
        for c in changes[:worst]
    ]
    if len(changes) > worst:
        lines.append(f"| … | {len(changes) - worst} more | |")
    return [*lines, "", "</details>"]


#: the markdown headline's mark of each verdict
_VERDICT_ICONS = {"pass": "✅", "fail": "❌", "refused": "⛔"}


def _findings_markdown(result: GateResult) -> list[str]:
    """Missing cases, the judged rules and the repeats' verdict, each after a blank line
    (none: nothing)."""
    lines = []
    if result.missing_ids:
        lines += ["", f"❌ **{_cell(_missing_line(result))}**"]
    if result.judged is not None:
        lines += ["", *(f"- {_cell(line.strip())}" for line in result.judged.lines)]
    repeat_lines = _repeat_lines(result)
    if repeat_lines:
        lines += ["", *(f"- {_cell(line)}" for line in repeat_lines[1:])]
    return lines


def render_markdown(result: GateResult, sources: GateSources, *, worst: int = 10) -> str:
    """Markdown for a CI step summary or a merge-request comment."""
    icon = _VERDICT_ICONS[result.verdict]
    lines = [
        f"## {icon} Release {_headline(result)}",
        "",
        f"- baseline: `{_cell(sources.baseline)}` ({_cell(_describe(result.baseline))})",
        f"- candidate: `{_cell(sources.candidate)}` ({_cell(_describe(result.candidate))})",
        f"- rules: `{_cell(sources.rules)}`",
        f"- mode: {_mode(result)}",
        "",
        *_rule_rows_markdown(result),
    ]
    lines += _findings_markdown(result)
    a = result.alignment
    if a.dataset_changed:
        lines += [
            "",
            f"Golden set changed: compared the {len(a.shared_ids)} shared cases "
            f"(removed {len(a.removed_ids)}: {_cell(_ids(a.removed_ids)) or '-'}; "
            f"added {len(a.added_ids)}: {_cell(_ids(a.added_ids)) or '-'}).",
        ]
    if result.diagnosis:
        lines += ["", "### Where to look", ""]
        lines += [f"- {_cell(f.signal)}: look at **{f.look_at}**" for f in result.diagnosis]
    lines += _differences_markdown(result)
    diff = result.case_diff
    lines += [
        "",
        f"Cases: {len(diff.regressed)} regressed, {len(diff.improved)} improved, "
        f"{diff.unchanged} unchanged ({diff.compared} compared).",
    ]
    lines += _changes_markdown("regressed (worst first)", diff.regressed, worst)
    lines += _changes_markdown("improved (best first)", diff.improved, worst)
    lines += ["", f"Verdict: **{result.verdict.upper()}** (exit {result.exit_code})"]
    return "\n".join(lines) + "\n"


# --- JUnit XML ----------------------------------------------------------------------------


def render_junit(result: GateResult, sources: GateSources) -> str:
    """JUnit XML: one test case per rule, plus ``cases.complete`` for missing cases."""
    cases: list[ET.Element] = []
    failures = skipped = 0
    for r in result.rules:
        case = ET.Element("testcase", classname="evaluator.gate", name=r.name)
        if r.status == "fail":
            failures += 1
            ET.SubElement(
                case, "failure", message=r.message, type="GateRuleFailed"
            ).text = r.message
        elif r.status == "n/a":
            skipped += 1
            ET.SubElement(case, "skipped", message=r.message)
        else:
            ET.SubElement(case, "system-out").text = r.message
        cases.append(case)
    complete = ET.Element("testcase", classname="evaluator.gate", name="cases.complete")
    if result.missing_ids:
        failures += 1
        message = _missing_line(result)
        ET.SubElement(
            complete, "failure", message=message, type="GateCasesMissing"
        ).text = "\n".join(result.missing_ids)
    cases.append(complete)
    errors = 0
    if result.judged is not None:
        judged = ET.Element("testcase", classname="evaluator.gate", name="judged")
        text = "\n".join(result.judged.lines)
        if result.refused:
            errors += 1
            reason = "; ".join(result.refused)
            ET.SubElement(judged, "error", message=reason, type="GateRefused").text = text
        elif result.judged.failed:
            failures += 1
            ET.SubElement(
                judged, "failure", message="a judged rule failed", type="GateRuleFailed"
            ).text = text
        else:
            ET.SubElement(judged, "system-out").text = text
        cases.append(judged)
    attrs = {
        "name": "evaluator gate",
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(skipped),
    }
    root = ET.Element("testsuites", attrs)
    suite = ET.SubElement(root, "testsuite", attrs)
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("baseline", sources.baseline),
        ("candidate", sources.candidate),
        ("rules", sources.rules),
        ("mode", "significance" if result.significance else "point"),
        ("verdict", result.verdict),
    ):
        ET.SubElement(props, "property", name=name, value=value)
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(result: GateResult, sources: GateSources, fmt: str = "text", *, worst: int = 10) -> str:
    """Render in one of :data:`FORMATS`."""
    if fmt == "json":
        return render_json(result, sources)
    if fmt == "markdown":
        return render_markdown(result, sources, worst=worst)
    if fmt == "text":
        return render_text(result, sources, worst=worst)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
