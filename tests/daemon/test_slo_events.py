"""A run's SLO events as the daemon counts them: what the report holds, judged verdicts only
from a judge trusted for the check, and the counters on /metrics that add them up."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from evaluator.config.slo import SloConfig
from evaluator.daemon.exporter import JobSnapshot, Metrics
from evaluator.daemon.slo import run_events, trusted_verdicts
from evaluator.judge.prompts import PROMPT_VERSION
from evaluator.judge.record import CaseJudgement, CheckOutcome, answer_hash
from evaluator.report import RunReport
from evaluator.slo.sli import Events
from tests.judge import calibrations
from tests.judge.judged_runs import canary, judged_run
from tests.support.records import record, report

A = ("rag", "golden")
RUN = [
    record("right"),
    record("wrong", correct=False),
    record("failed", error="timeout"),
    record("slow", latency=4.0),
]


def _slo(name: str, sli: str, **extra: object) -> SloConfig:
    return SloConfig(name=name, job="rag", sli=sli, objective=0.9, **extra)


def test_a_run_counts_the_events_its_report_holds() -> None:
    """Each SLO of the job gets the run's good and bad events; the failed case is an
    event of no_error only, so an incomplete run counts what it scored."""
    slos = [
        _slo("answers", "answer_correct"),
        _slo("errors", "no_error"),
        _slo("fast", "latency", threshold_seconds=1.0),
    ]
    assert {
        "answers": Events(good=2, bad=1),
        "errors": Events(good=3, bad=1),
        "fast": Events(good=2, bad=1),
    } == run_events(slos, report(RUN))


def _judged(
    folder: Path, *, compromised: bool = False, calibrated: bool = True, canary_judged: bool = True
) -> RunReport:
    """The run judged on fact_support (right: pass, wrong: fail), its calibration in
    ``folder`` saying whether the judge is calibrated for the check, its canary passed when
    ``compromised``, without a verdict unless ``canary_judged``."""
    path = calibrations.write(folder, calibrations.entry("m", agreeing=calibrated))
    answers = {r.id: r.answer for r in RUN}
    cases = tuple(
        CaseJudgement(
            case_id,
            answer_hash(answers[case_id]),
            (
                CheckOutcome(
                    "fact_support", "judged", {"answer_correct": v, "fact_recall": 1.0 * v}
                ),
            ),
        )
        for case_id, v in (("right", True), ("wrong", False))
    )
    # every scored case is judged (a block missing one is refused): slow, no check applying
    slow = CaseJudgement("slow", answer_hash(answers["slow"]), ())
    judged = judged_run(
        *cases,
        slow,
        prompt_version=PROMPT_VERSION,
        canaries=(canary(compromised if canary_judged else None),),
        calibration=str(path),
    )
    return report(RUN, judge=judged.to_dict())


def test_judged_events_come_from_a_judge_calibrated_for_the_check(tmp_path: Path) -> None:
    """The judge's verdict per case on its check, read back from the report's judge block."""
    slo = _slo("judged", "judged", check="fact_support")
    run = _judged(tmp_path)
    assert {"fact_support": {"right": True, "wrong": False}} == trusted_verdicts(run)
    assert {"judged": Events(good=1, bad=1)} == run_events([slo], run)


@pytest.mark.parametrize(
    "why",
    [{"calibrated": False}, {"compromised": True}, {"canary_judged": False}],
    ids=["uncalibrated", "compromised", "canary-not-judged"],
)
def test_an_untrusted_judge_counts_nothing(tmp_path: Path, why: dict[str, bool]) -> None:
    """A judge not calibrated for the check, fooled by a canary in this run, or without a
    verdict on its canary: no event."""
    slo = _slo("judged", "judged", check="fact_support")
    assert {"judged": Events()} == run_events([slo], _judged(tmp_path, **why))


def _metrics(slos: tuple[str, ...]) -> Metrics:
    metrics = Metrics(CollectorRegistry(), (0.1, 1.0))
    snapshot = JobSnapshot(
        target=A[0], dataset=A[1], k=5, config_hash="c", dataset_hash="d",
        interval_seconds=60.0, slos=slos,
    )  # fmt: skip
    metrics.add_job(snapshot)
    return metrics


def _slo_lines(metrics: Metrics) -> list[str]:
    body = metrics.exposition_body(openmetrics=False).decode()
    return [line for line in body.splitlines() if line.startswith("rag_eval_slo_")]


def test_the_counters_exist_at_zero_and_add_each_run() -> None:
    """Every SLO's good and bad series from the start, then each run's events added; the
    objective and the window beside them."""
    metrics = _metrics(("answers",))
    metrics.slos_configured({"answers": (0.99, 2419200)})
    series = '{dataset="golden",outcome="%s",slo="answers",target="rag"}'
    zero = [f"rag_eval_slo_events_total{series % o} 0.0" for o in ("good", "bad")]
    assert zero == _slo_lines(metrics)[:2]
    metrics.slo_events_counted(A, {"answers": Events(good=3, bad=2)})
    metrics.slo_events_counted(A, {"answers": Events(good=4, bad=0)})
    assert [
        f"rag_eval_slo_events_total{series % 'good'} 7.0",
        f"rag_eval_slo_events_total{series % 'bad'} 2.0",
        'rag_eval_slo_objective{slo="answers"} 0.99',
        'rag_eval_slo_window_seconds{slo="answers"} 2.4192e+06',
    ] == _slo_lines(metrics)


def test_a_reload_keeps_a_kept_slos_counts_and_withdraws_a_dropped_one() -> None:
    """A job reconfigured: the SLO still counting it keeps its counts, a new one starts at
    zero, a dropped one's series and its objective are gone."""
    metrics = _metrics(("answers", "errors"))
    metrics.slos_configured({"answers": (0.99, 86400), "errors": (0.999, 86400)})
    metrics.slo_events_counted(A, {"answers": Events(1, 1), "errors": Events(2, 0)})
    metrics.job_reconfigured(
        A, k=5, config_hash="c", dataset_hash="d", interval_seconds=60.0, baseline={},
        slos=("answers", "fast"),
    )  # fmt: skip
    metrics.slos_configured({"answers": (0.99, 86400), "fast": (0.9, 86400)})
    lines = _slo_lines(metrics)
    assert not [line for line in lines if 'slo="errors"' in line]
    series = 'rag_eval_slo_events_total{dataset="golden",outcome="bad",slo="%s",target="rag"}'
    assert f"{series % 'answers'} 1.0" in lines
    assert f"{series % 'fast'} 0.0" in lines
    assert 'rag_eval_slo_objective{slo="fast"} 0.9' in lines
