"""Judging a saved report, start to end: read it (with its evidence texts), judge it, write
it back atomically with its ``judge`` block. Used by ``evaluator run`` (a job with a judge)
and ``evaluator judge REPORT``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from evaluator.border import printable
from evaluator.judge.agreement import vote_figures
from evaluator.judge.calibration_store import CALIBRATION_FILE, read_calibration
from evaluator.judge.canary_verdicts import acceptance_text, lenient_reason
from evaluator.judge.checks import judged_metric
from evaluator.judge.judged_pass import CallEvent, judge_report
from evaluator.judge.panel import JudgePanel
from evaluator.judge.record import CheckOutcome, JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import Retention, VerdictStore
from evaluator.judge.trust import untrusted_reasons
from evaluator.redaction import redactor
from evaluator.report import RunReport, read_report, write_report

__all__ = [
    "calibration_of",
    "canaries_line",
    "failing_judges",
    "format_judged",
    "judge_down",
    "judge_file",
    "nothing_judged",
    "trust_problem",
    "with_calibration",
]


#: the history's defaults (the configuration's [history] sits above this layer)
_HISTORY_DEFAULTS = Retention()


def judge_file(
    path: Path,
    config: JudgeConfig,
    *,
    cache_folder: Path | None,
    output: Path | None = None,
    keep_unjudged: bool = True,
    keep: Retention = _HISTORY_DEFAULTS,
    on_call: Callable[[CallEvent], None] | None = None,
) -> tuple[RunReport, JudgedRun]:
    """Judge the report at ``path`` and write it (to ``output``, default in place).

    ``cache_folder`` holds the history store whose verdict cache is used (None: no cache),
    pruned as ``keep`` says (the history's ``keep_runs`` and ``max_age_days``).
    ``keep_unjudged`` False: when :func:`nothing_judged`, nothing is written (a judge that
    is down never overwrites a report's earlier verdicts with its errors). ``on_call`` is
    told of each judge call as it ends.
    """
    report = read_report(path)
    cache = None
    if cache_folder is not None and config.cache:
        cache = VerdictStore(
            cache_folder, keep_passes=keep.keep_passes, max_age_days=keep.max_age_days
        )

    async def go() -> JudgedRun:
        async with JudgePanel(config) as panel:
            return await judge_report(report, panel, cache=cache, on_call=on_call)

    judged = with_calibration(asyncio.run(go()), cache_folder or path.parent)
    if not keep_unjudged and nothing_judged(judged):
        return report, judged
    report = msgspec.structs.replace(report, judge=judged.to_dict())
    write_report(report, output or path)
    return report, judged


def nothing_judged(judged: JudgedRun) -> bool:
    """Whether there was something to judge (a case's check, a canary) and no verdict came
    back for any of it: the judge is down, refuses, or the budget allowed no call."""
    outcomes = [o for c in judged.cases for o in c.outcomes]
    if not outcomes and not judged.canaries:
        return False
    verdicts = any(o.status in ("judged", "uncertain") for o in outcomes)
    return not verdicts and all(c.fooled is None for c in judged.canaries)


def failing_judges(judged: JudgedRun, config: JudgeConfig) -> list[str]:
    """Each judge with failed calls, by name and URL, with how many and the first error:
    ``judge m at http://...: 5 checks failed; judge_connect: judge unreachable: ...``."""
    urls = {name: member.url for name, member in config.members()}
    failed: dict[str, list[CheckOutcome]] = {}
    for case in judged.cases:
        for outcome in case.outcomes:
            for member, one in _votes(outcome, judged.model):
                if one.status == "error":
                    failed.setdefault(member, []).append(one)
    lines = []
    for member, errors in failed.items():
        url = redactor().redact_text(urls.get(member, "(not configured now)"))
        first = errors[0]
        calls = f"{len(errors)} check{'s' if len(errors) != 1 else ''} failed"
        lines.append(
            printable(f"judge {member} at {url}: {calls}; {first.error_kind}: {first.error}")
        )
    return lines


def _votes(outcome: CheckOutcome, model: str) -> list[tuple[str, CheckOutcome]]:
    """An outcome's votes by judge name (a judge asked once: its one outcome, the model's)."""
    if outcome.votes:
        return [(v.member, v.outcome) for v in outcome.votes]
    return [(model, outcome)]


def judge_down(judged: JudgedRun, config: JudgeConfig) -> str | None:
    """When nothing was judged, why, in one line naming each failing judge's URL and error
    (None: something was judged, or there was nothing to judge)."""
    if not nothing_judged(judged):
        return None
    failing = failing_judges(judged, config)
    if failing:
        return "nothing judged: " + "; ".join(failing)
    if judged.usage.skipped:
        return "nothing judged: the judge's budget (max_calls, max_cost) allowed no call"
    return "nothing judged: no verdict came back"


def with_calibration(judged: JudgedRun, folder: Path) -> JudgedRun:
    """``judged`` naming the stored calibration its trust is decided by, when there is one
    (``folder``/judge-calibration.json, written by ``evaluator calibrate``)."""
    path = folder / CALIBRATION_FILE
    return dataclasses.replace(judged, calibration=str(path)) if path.is_file() else judged


def calibration_of(judged: JudgedRun) -> dict[str, bool]:
    """Each check this run's judged metrics read, and whether the calibration the run names
    calls its judge (model + prompt version) calibrated for it, by check name."""
    calibrated: dict[str, bool] = {}
    if judged.calibration is not None:
        stored = read_calibration(Path(judged.calibration))
        calibrated = dict(stored.calibrated().get(judged.identity, {}))
    checks = {spec.check for name in judged.metrics if (spec := judged_metric(name)) is not None}
    return {check: calibrated.get(check, False) for check in sorted(checks)}


def trust_problem(judged: JudgedRun, calibrated: Mapping[str, bool]) -> str | None:
    """Why this run's judged metrics are not to be trusted, in a short phrase, or None:
    its canaries (:func:`~evaluator.judge.trust.untrusted_reasons`), or a check the run was
    judged on is not calibrated (``calibrated``: :func:`calibration_of` the run)."""
    reasons = untrusted_reasons(judged)
    if reasons:
        return "; ".join(reasons)
    missing = [check for check, ok in calibrated.items() if not ok]
    return f"uncalibrated for {', '.join(missing)}" if missing else None


def format_judged(judged: JudgedRun, config: JudgeConfig | None = None) -> str:
    """The judged metrics and the judge's own health, for the terminal; a metric whose check
    the named calibration does not call calibrated says so. With the judge's ``config``,
    each judge whose calls failed is named with its URL and first error."""
    calibrated = calibration_of(judged)
    lines = [f"judge: {printable(judged.model)} (prompts {printable(judged.prompt_version)})"]
    lines.extend(_warning_lines(judged))
    for name, value in judged.metrics.items():
        shown = "n/a" if value is None else f"{value:.3f}"
        spec = judged_metric(name)
        trusted = spec is not None and calibrated.get(spec.check, False)
        lines.append(f"  {name:<24} {shown}" + ("" if trusted else "  (uncalibrated)"))
    u = judged.usage
    errors = ", ".join(f"{k} {v}" for k, v in sorted(u.errors.items())) or "none"
    lines.append(
        f"  calls {u.calls}, cache hits {u.cache_hits}, skipped {u.skipped}, errors: {errors}; "
        f"tokens {u.input_tokens}+{u.output_tokens}, cost {u.cost:.4f}"
    )
    if config is not None:
        lines.extend(f"  {line}" for line in failing_judges(judged, config))
    lines.append(f"  {canaries_line(judged)}")
    lines.append(f"  {acceptance_text(judged.canaries)}")
    lines.extend(_votes_lines(judged))
    return "\n".join(lines)


def _warning_lines(judged: JudgedRun) -> list[str]:
    """What stands against the run's judged metrics, one line each: nothing judged, a
    compromised judge, a lenient one, or another reason its canaries leave it untrusted."""
    lines = []
    if nothing_judged(judged):
        lines.append("  NOTHING JUDGED: no judge call gave a verdict; judged metrics are n/a")
    if judged.compromised:
        lines.append(
            "  COMPROMISED: a canary answer was judged supported; judged metrics are untrusted"
        )
    if judged.lenient:
        reason = lenient_reason(judged.canaries, judged.lenient_above)
        lines.append(f"  LENIENT: {reason}; hard judged rules fail the gate")
    if not judged.compromised and not judged.lenient and untrusted_reasons(judged):
        lines.append(f"  UNTRUSTED: {'; '.join(untrusted_reasons(judged))}")
    return lines


def canaries_line(judged: JudgedRun) -> str:
    """The canaries in words: how many fooled the judge, out of those it judged (a canary
    whose call failed fooled no one, and was not judged either)."""
    total = len(judged.canaries)
    answered = [c for c in judged.canaries if c.fooled is not None]
    fooled = sum(1 for c in answered if c.fooled)
    if total and not answered:
        return f"canaries not judged ({total}: no verdict came back)"
    if len(answered) < total:
        return f"canaries {total}, judged {len(answered)}, fooled {fooled}"
    return f"canaries {total}" + (f", fooled {fooled}" if total else "")


def _votes_lines(judged: JudgedRun) -> list[str]:
    """With repeated verdicts: who voted, and per check the outcomes the votes left
    uncertain and Krippendorff's alpha between the votes (none for a judge asked once)."""
    if judged.samples == 1 and not judged.panel:
        return []
    judges = (
        f"{len(judged.panel)} judges ({', '.join(judged.panel)})" if judged.panel else "1 judge"
    )
    lines = [f"  votes: {judged.samples} sample(s) x {judges}; majority decides"]
    for check, f in vote_figures(judged.cases).items():
        answered = f.decided + f.uncertain
        if answered:
            alpha = "n/a" if f.alpha is None else f"{f.alpha:.3f}"
            lines.append(f"  {check:<24} uncertain {f.uncertain} of {answered}, alpha {alpha}")
    return lines
