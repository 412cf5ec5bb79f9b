"""What a newcomer noticed on the status page (issue 37, item 16): "and 5 more" is a link to
the rest, a job without a baseline never says "no change against the baseline", the drift
headline's "now" is the latest run rather than an average with the runs before the change,
a correctly refused unanswerable case is not among the worst, the trend charts' time labels
stay inside their charts, and the P95 chart's legend writes its limit in the unit of its
values."""

from __future__ import annotations

import pytest

from evaluator.daemon.pages import _drift_signals
from evaluator.gate.rules import Rule
from evaluator.history.drift import CheckDrift, Drift
from evaluator.history.job import JobHistory
from evaluator.models import Case, CaseScores
from evaluator.pages.health import DriftSignal, JobSignals, job_health
from evaluator.pages.render import PageRenderer
from evaluator.pages.status import CHANGED_SHOWN, JobPage, job_view
from evaluator.pages.trend import RunPoint
from evaluator.pages.worst import badness, reasons, worst_cases
from tests.pages.conftest import RunningDaemon, Tab
from tests.pages.test_views import RECORD, _report
from tests.support.records import record


def test_and_n_more_links_the_case_table_of_that_class() -> None:
    """The cases of a class past the shown ones are a link to the job's case table showing
    that class."""
    newly = [f"case-{i}" for i in range(CHANGED_SHOWN + 5)]
    view = job_view(
        JobPage("t", "golden", _report(RECORD), "complete", 990.0, newly_failing=newly),
        case_href=lambda t, d, c: f"/case?id={c}",
        report_href="/r",
        anchor="job-0",
        now=1000.0,
        cases_href="/case-table?target=t&dataset=golden",
    )
    html = PageRenderer().status([view])
    assert (
        '<li class="muted"><a href="/case-table?target=t&amp;dataset=golden&amp;show='
        'newly_failing">and 5 more</a></li>'
    ) in html


def test_a_job_without_a_baseline_says_no_change_in_its_history_only() -> None:
    """Green with a baseline: no change against the baseline or history; green without one:
    the words name history alone."""
    with_baseline = job_health(JobSignals("complete", 100, gate_passing=True, has_baseline=True))
    without = job_health(JobSignals("complete", 100))
    assert "no change against the baseline or history" == with_baseline.headline
    assert "no change in history (no baseline configured)" == without.headline


def test_a_job_view_knows_whether_it_has_a_baseline() -> None:
    """The job's section of a page for a job without a baseline does not claim one."""
    view = job_view(
        JobPage("t", "golden", _report(RECORD), "complete", 990.0),
        case_href=lambda t, d, c: "",
        report_href="/r",
        anchor="job-0",
        now=1000.0,
    )
    assert "baseline" not in view.health.headline.replace("no baseline configured", "")


def test_the_drift_headline_now_is_the_latest_run() -> None:
    """MRR was 0.90 in the reference runs and stayed so until the latest run, 0.50: the
    headline says 0.90 → 0.50, not the 0.77 an average over the current side gives."""
    check = CheckDrift("mrr", "sign_test", 10, -0.13, 0.001, 0.05, True)
    history = JobHistory(10, 10, (), Drift(10, 3, 0.05, {"mrr": check}))
    values = [0.9] * 10 + [0.9, 0.9, 0.5]  # oldest first
    runs = [RunPoint(f"r{i}", 1000.0 + i, "complete", {"mrr": v}) for i, v in enumerate(values)][
        ::-1
    ]
    (signal,) = _drift_signals(history, runs)
    assert signal.before == pytest.approx(0.9) and 0.5 == signal.after
    health = job_health(
        JobSignals(
            "complete",
            100,
            drift=[DriftSignal("mrr", True, -0.13, before=0.9, after=0.5)],
            drift_current_runs=3,
        )
    )
    assert "MRR 0.90 → 0.50 in the latest run, significant over the last 3 runs" == (
        health.headline
    )


def test_a_correctly_refused_unanswerable_case_is_not_among_the_worst() -> None:
    """An unanswerable case the service refused is right, whatever it retrieved: no badness,
    no reasons, not first among the worst (a wrong answer is)."""
    refused = record(
        "refused",
        outcome=CaseScores(
            recall_at_k=0.0,
            mrr=0.0,
            ndcg_at_k=0.0,
            citation_precision=1.0,
            answer_correct=True,
            refused=True,
        ),
        unanswerable=True,
    )
    wrong = record("wrong", correct=False)
    right = record("right")
    assert (0.0, ()) == (badness(refused), reasons(refused))
    assert ["wrong"] == [r.id for r in worst_cases([refused, wrong, right], 1)]
    assert isinstance(refused.case, Case) and refused.case.unanswerable


#: every text of every trend chart: where it is drawn against its chart's own box
_OUTSIDE = """
() => [...document.querySelectorAll('figure.trend svg')].flatMap((svg) => {
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('text')].map((t) => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left - box.left, right: box.right - r.right,
            top: r.top - box.top, bottom: box.bottom - r.bottom};
  });
})
"""


def test_a_first_run_charts_and_names_its_job_plainly(daemon: RunningDaemon, tab: Tab) -> None:
    """Over HTTP, in Chromium, a daemon's first runs (one run per job, no baseline): every
    label of every trend chart is drawn inside its chart (the lone run's time too), and no
    job claims a baseline it does not have."""
    tab.page.goto(daemon.url + "/")
    texts = tab.page.evaluate(_OUTSIDE)
    assert any(t["text"].count(":") == 2 for t in texts), "no time label drawn"
    clipped = [t for t in texts if min(t["left"], t["right"], t["top"], t["bottom"]) < -0.5]
    assert [] == clipped
    for headline in tab.page.locator("section.job p.reason").all_inner_texts():
        assert "against the baseline" not in headline
    assert [] == tab.errors


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        (Rule("p95_seconds", "max", 0.25), "at most 250.00ms"),
        (Rule("p95_seconds", "max_growth", 0.05), "may grow at most 50.00ms"),
        (
            Rule("p95_seconds", "max_relative_growth", 0.2, noise_floor=0.05),
            "may grow at most 20% (growth up to 50.00ms is noise)",
        ),
        (Rule("mrr", "max_drop", 0.01), "may drop at most 0.01"),
        (Rule("output_tokens_total", "max", 2000.0), "at most 2,000"),
    ],
)
def test_a_rule_writes_its_limit_in_the_metric_s_unit(rule: Rule, text: str) -> None:
    """The P95 chart's legend read "the gate's limit (at most 0.25) 250.0ms": a rule's words
    write its limit as the metric's values are written (durations in ms or s, counts whole)."""
    assert text == rule.text
