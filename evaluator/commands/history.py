"""``evaluator history``: is a case new trouble or old noise? Read from the history store.

Without ``--case``: the job's flaky, newly failing, recovered and always failing cases
over the stability window, and the drift of the latest runs. With ``--case ID``: that
case's class and its recent outcomes, newest first. Text, or ``--format json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluator.commands.flags import CommonOptions
from evaluator.config import load_settings
from evaluator.errors import ConfigError, EvaluatorError, ExitCode
from evaluator.history.job import JobHistory, job_history
from evaluator.history.outcome import CaseOutcome
from evaluator.history.stability import Stability, case_stability
from evaluator.history.store import HistoryStore, StoreCorrupt

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    target: str | None
    dataset: str | None
    case: str | None
    reports_dir: str | None
    limit: int
    format: str


_LISTS = (
    (Stability.NEWLY_FAILING, "newly failing"),
    (Stability.FLAKY, "flaky"),
    (Stability.RECOVERED, "recovered"),
    (Stability.STABLE_FAIL, "always failing"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", metavar="NAME", help="the job's target label")
    parser.add_argument("--dataset", metavar="NAME", help="the job's dataset label")
    parser.add_argument("--case", metavar="ID", help="one case's recent outcomes")
    parser.add_argument(
        "--reports-dir", metavar="DIR", help="where history.sqlite3 is (default reports_dir)"
    )
    parser.add_argument(
        "--limit", type=int, default=20, metavar="N", help="outcomes listed for --case"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="stdout format")


def _pick_job(store: HistoryStore, target: str | None, dataset: str | None) -> tuple[str, str]:
    jobs = store.jobs()
    matches = [
        j
        for j in jobs
        if (target is None or j[0] == target) and (dataset is None or j[1] == dataset)
    ]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(f"--target {t} --dataset {d}" for t, d in jobs) or "none"
    if not matches:
        raise ConfigError(f"no history for that job in {store.path}; jobs with history: {known}")
    raise ConfigError(f"several jobs have history; pick one: {known}")


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _check(value: bool | None, yes: str, no: str) -> str:
    return "-" if value is None else (yes if value else no)


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _outcome_dict(o: CaseOutcome) -> dict[str, Any]:
    return {
        "run_id": o.run_id,
        "finished_at": _stamp(o.finished_at),
        "answer": o.answer,
        "hit": o.hit,
        "mrr": o.mrr,
        "ndcg_at_k": o.ndcg_at_k,
        "error": o.error_kind,
        "run_outcome": o.run_outcome,
    }


def _job_text(job: tuple[str, str], history: JobHistory, store: Path) -> list[str]:
    lines = [
        f"history of {job[0]}/{job[1]} ({store}): "
        f"{history.runs_in_window} complete run(s) in a window of {history.window}"
    ]
    by_id = {c.case_id: c for c in history.cases}
    for stability, title in _LISTS:
        ids = history.listed(stability)
        lines.append(f"{title} ({len(ids)}):")
        for cid in ids:
            c = by_id[cid]
            lines.append(
                f"  {cid}: pass rate {_rate(c.pass_rate)} over {c.scored_runs} run(s), "
                f"{c.flips} flip(s), last {_check(c.last, 'pass', 'fail')}"
            )
    counts = ", ".join(f"{k.value} {v}" for k, v in history.counts.items())
    lines.append(f"classes: {counts}")
    drift = history.drift
    if drift is None:
        lines.append("drift: not yet (needs more complete runs than the recent span)")
        return lines
    lines.append(
        f"drift: latest {drift.current_runs} run(s) against the {drift.reference_runs} before "
        f"(alpha {drift.alpha:g})"
    )
    for name, check in drift.checks.items():
        if check.shift is None:
            lines.append(f"  {name}: no paired case")
            continue
        verdict = "SIGNIFICANT drop" if check.significant else "within noise"
        detail = f"; dropped: {', '.join(check.dropped)}" if check.dropped else ""
        lines.append(
            f"  {name}: shift {check.shift:+.4f} over {check.pairs} case(s), {verdict} "
            f"({check.test}, p {check.p_value:.3g}){detail}"
        )
    return lines


def handle(options: Options) -> int:
    """A job's history verdict, or one case's past outcomes (``--case``)."""
    if options.limit < 1:
        raise ConfigError("--limit must be >= 1")
    settings = load_settings(options.config)
    folder = Path(options.reports_dir) if options.reports_dir else settings.reports_dir
    store = HistoryStore.open_readonly(folder)
    if store is None:
        raise EvaluatorError(
            f"no history in {folder} (history.sqlite3 is written by `evaluator serve`)"
        )
    h = settings.history
    try:
        job = _pick_job(store, options.target, options.dataset)
        runs = store.complete_runs(*job, h.window + h.recent)
        history = job_history(runs, window=h.window, recent=h.recent, alpha=h.alpha)
        outcomes = (
            store.case_history(*job, options.case, limit=options.limit) if options.case else []
        )
    except StoreCorrupt as exc:
        raise EvaluatorError(f"cannot read the history store: {exc}") from exc
    if options.case:
        return _show_case(options, options.case, job, history, outcomes, h.window)
    if options.format == "json":
        data: dict[str, object] = {"target": job[0], "dataset": job[1], "store": str(store.path)}
        data.update(history.to_dict())
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return ExitCode.OK
    print("\n".join(_job_text(job, history, store.path)))
    return ExitCode.OK


def _show_case(
    options: Options,
    case_id: str,
    job: tuple[str, str],
    history: JobHistory,
    outcomes: Sequence[CaseOutcome],
    window: int,
) -> int:
    """One case's stability over the window and its past outcomes, newest first."""
    if not outcomes:
        raise EvaluatorError(f"no history for case {case_id!r} in {job[0]}/{job[1]}")
    complete = [o for o in outcomes if o.run_outcome == "complete"]
    stability = next(
        (c for c in history.cases if c.case_id == case_id),
        case_stability(case_id, list(reversed(complete[:window]))),
    )
    if options.format == "json":
        case_data = {
            "target": job[0],
            "dataset": job[1],
            "case": stability.to_dict(),
            "outcomes": [_outcome_dict(o) for o in outcomes],
        }
        print(json.dumps(case_data, ensure_ascii=False, indent=2))
        return ExitCode.OK
    print(
        f"case {case_id} of {job[0]}/{job[1]}: {stability.stability.value}, "
        f"pass rate {_rate(stability.pass_rate)} over {stability.scored_runs} run(s), "
        f"{stability.flips} flip(s) (answer {_rate(stability.answer_pass_rate)}, "
        f"retrieval hit {_rate(stability.hit_rate)})"
    )
    # an incomplete run's verdicts are listed, and marked: they count in no class
    print(
        f"{'finished (UTC)':<21} {'run':<13} {'run outcome':<12} {'answer':<7} {'hit':<5} "
        f"{'mrr':<6} error"
    )
    for o in outcomes:
        print(_outcome_line(o))
    return ExitCode.OK


def _outcome_line(o: CaseOutcome) -> str:
    """One past outcome as a row of the case's table."""
    mrr = "-" if o.mrr is None else f"{o.mrr:.3f}"
    return (
        f"{_stamp(o.finished_at):<21} {o.run_id:<13} {o.run_outcome:<12} "
        f"{_check(o.answer, 'pass', 'fail'):<7} {_check(o.hit, 'hit', 'miss'):<5} {mrr:<6} "
        f"{o.error_kind or ''}".rstrip()
    )
