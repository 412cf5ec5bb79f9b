"""The status page's trends as rendered: lines, marks and the change's start in words."""

from __future__ import annotations

import re

from evaluator.daemon.baseline import BaselineGate
from evaluator.daemon.pages import gate_limits
from evaluator.gate import Rule
from evaluator.pages.render import PageRenderer
from evaluator.pages.status import JobPage, JobView, job_view
from evaluator.pages.trend import RunPoint
from tests.support.records import record, report

#: 2026-01-01 00:00 UTC
T0 = 1_767_225_600.0
BASELINE = report([record("a", rr=1.0), record("b", rr=0.5)], run_id="base")  # MRR 0.75
RULES = (Rule("mrr", "max_drop", 0.01), Rule("citation_precision", "min", 0.7))


def _runs() -> list[RunPoint]:
    """Eight runs a quarter of an hour apart, newest first: MRR 0.75 until r5, 0.25 since;
    the golden set changed at r3; one run's id full of markup."""
    out = []
    for i in range(8):
        out.append(
            RunPoint(
                "<b>r7</b>" if i == 7 else f"r{i}",
                T0 + 900 * i,
                "complete",
                {"mrr": 0.75 if i < 5 else 0.25, "error_rate": 0.0, "p95_seconds": 0.01},
                "cfg",
                "d1" if i < 3 else "d2",
            )
        )
    return out[::-1]


def _view(**changes: object) -> JobView:
    gate = BaselineGate(BASELINE, RULES, "test")
    state = JobPage(
        "rag",
        "golden",
        BASELINE,
        "complete",
        T0 + 900 * 7,
        baseline=BASELINE,
        gate_passing=False,
        gate_failing=("mrr.max_drop",),
        runs=_runs(),
        gate_limits=gate_limits(gate),
        **changes,  # type: ignore[arg-type]
    )
    return job_view(
        state, case_href=lambda *a: "/case", report_href="/r", anchor="job-0", now=T0 + 9000
    )


def test_the_gate_rules_become_lines_against_the_baseline() -> None:
    """MRR may drop 0.01 from the baseline's 0.75: a floor at 0.74; a fixed floor stays."""
    limits = gate_limits(BaselineGate(BASELINE, RULES, "test"))
    assert [("mrr", 0.74, False), ("citation_precision", 0.7, False)] == [
        (lim.metric, round(lim.value, 6), lim.bad_above) for lim in limits
    ]
    assert "the gate's limit (may drop at most 0.01)" == limits[0].label


def test_the_change_began_where_mrr_crossed_the_gates_line() -> None:
    """The job's change is dated at the run where MRR crossed the gate's line, with its onset in
    words."""
    view = _view()

    assert view.began is not None
    assert ("r5", "2026-01-01 01:15:00 UTC", "2 runs ago", "#job-0-trends") == (
        view.began.run_id,
        view.began.when,
        view.began.ago,
        view.began.href,
    )
    assert ["mrr below the gate's limit (may drop at most 0.01)"] == view.began.onsets
    assert [("dataset", "golden set changed (d1 → d2) at run r3 (2026-01-01 00:45:00 UTC)")] == (
        view.config_changes
    )


def test_newly_failing_cases_can_start_the_change_earlier() -> None:
    """A case failing since r4 (history's window: the latest five runs, r3..r7) began the
    change a run before MRR crossed the gate's line."""
    view = _view(newly_failing_verdicts={"a": [True, False, False, False, False]}, window_runs=5)
    assert view.began is not None
    assert ("r4", 3) == (view.began.run_id, int(view.began.ago.split()[0]))
    assert [
        "1 case newly failing",
        "mrr below the gate's limit (may drop at most 0.01), since run r5",
    ] == view.began.onsets


def test_the_page_draws_the_lines_and_marks_escaped() -> None:
    """The trend chart draws the limit lines, the change marks and the tick labels, escaped."""
    html = PageRenderer(lambda s: s).status([_view()])
    mrr = html[html.index('data-metric="mrr"') :]
    mrr = mrr[: mrr.index("</figure>")]

    assert 'class="limit limit-baseline" data-value="0.7500"' in mrr
    assert 'class="limit limit-gate" data-value="0.7400"' in mrr
    assert re.search(r'class="marker marker-dataset" data-run="r3"', mrr)
    assert re.search(r'class="marker marker-began" data-run="r5"', mrr)
    # a labelled tick at the first and the last run, every run a tick
    labels = re.findall(r'class="tick-label"[^>]*>([^<]*)<', mrr)
    assert ("00:00", "01:45") == (labels[0], labels[-1])
    assert 8 == mrr.count('class="tick"')
    assert "8 runs, 2026-01-01 00:00 – 01:45 UTC" in html
    assert "Change began at run" in html and 'href="#job-0-trends"' in html
    assert 'id="job-0-trends"' in html
    # the alert threshold on the error ratio's chart
    err = html[html.index('data-metric="error_rate"') :]
    assert 'class="limit limit-alert" data-value="0.0500"' in err[: err.index("</figure>")]
    # a run id is data: escaped in its tooltip, never markup
    assert "<b>r7</b>" not in html and "&lt;b&gt;r7&lt;/b&gt;" in html
    assert "<script" not in html and "http" not in html.split("<body>")[1]
