"""The case table on a live daemon: its filters driven in Chromium with JavaScript off, and
every figure on the status page and the case table held to the ``/metrics`` series or
``/reports/latest`` field it comes from, through healthy, degraded and incomplete runs.

One baseline for the module, recorded from a healthy run; each test gets a daemon of its own,
with a history of its own, that gates every run against it and judges stability over a
short window, so healthy runs, a degraded one and a healthy one again give stable, newly
failing, regressed and flaky cases. A history shared by the tests would carry one test's
degraded runs into the next one's: a case that failed in the drift test's runs before the
window is flaky when it fails again, not newly failing, and the second test would wait for a
class the first one made impossible.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page

from tests.pages.conftest import Tab
from tests.pages.figures import GAUGE, Sources, close, consistent, failed_ids, texts
from tests.pages.stack import EVALUATOR, REPO, clean_env, serving, wait_for
from tests.support.ports import free_port
from tests.support.reference import ReferenceServer

pytestmark = pytest.mark.e2e

LATEST = "/reports/latest?target=reference&dataset=rag_cases"
GATES = """
[rules.mrr]
max_drop = 0.02
"""
#: the history section's lists by the words the pages use for them
CLASSES = {
    "newly failing": "newly_failing",
    "recovered": "recovered",
    "flaky": "flaky",
    "always failing": "stable_fail",
}


@dataclass
class Live:
    url: str
    reference: ReferenceServer
    baseline: dict[str, Any]
    #: one client for the module (a client per request loads the CA store every time)
    http: httpx.Client


def _config(folder: Path, port: int, url: str, extra: str) -> Path:
    config = folder / f"evaluator-{port}.toml"
    config.write_text(
        f"""
listen = "127.0.0.1:{port}"
reports_dir = "{folder / f"reports-{port}"}"
log_format = "json"
gates_file = "{folder / "gates.toml"}"
[[targets]]
name = "reference"
url = "{url}/rag"
[[jobs]]
target = "reference"
dataset = "{REPO / "evals" / "rag_cases.jsonl"}"
{extra}
""",
        "utf-8",
    )
    return config


@pytest.fixture(scope="module")
def baseline(reference_server: ReferenceServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The approved baseline: a healthy run of a first daemon, saved, beside the gates file,
    for the module's daemons."""
    reference_server.failure_modes.set([])
    folder = tmp_path_factory.mktemp("case-table")
    (folder / "gates.toml").write_text(GATES, "utf-8")
    port = free_port()
    config = _config(folder, port, reference_server.url, "interval_seconds = 3600")
    log = folder / "baseline.log"
    with serving([EVALUATOR, "serve", "--config", str(config)], cwd=folder, env=clean_env(),
                 log=log) as process:  # fmt: skip
        wait_for(f"http://127.0.0.1:{port}", [LATEST], process, log)
        body = httpx.get(f"http://127.0.0.1:{port}{LATEST}", timeout=10).content
    path = folder / "baseline.json"
    path.write_bytes(body)
    return path


@pytest.fixture
def live(reference_server: ReferenceServer, baseline: Path) -> Iterator[Live]:
    """A daemon of the test's own against the reference service, gating on the approved
    baseline, with a case history of its own (its reports folder is new, named by its
    port): no earlier test's runs in its windows."""
    reference_server.failure_modes.set([])
    folder = baseline.parent
    port = free_port()
    extra = f'interval_seconds = 3\nbaseline = "{baseline}"\n[history]\nwindow = 4\nrecent = 2'
    config = _config(folder, port, reference_server.url, extra)
    url = f"http://127.0.0.1:{port}"
    log = folder / f"serve-{port}.log"
    try:
        with serving([EVALUATOR, "serve", "--config", str(config)], cwd=folder,
                     env=clean_env(), log=log) as process:  # fmt: skip
            wait_for(url, [LATEST], process, log)
            with httpx.Client(base_url=url, timeout=10) as http:
                yield Live(url, reference_server, json.loads(baseline.read_bytes()), http)
    finally:
        reference_server.failure_modes.set([])


def _until(what: str, ready: Any, seconds: float = 120.0) -> Any:
    """Poll ``ready`` until it returns something truthy (bounded, not timed)."""
    deadline = time.monotonic() + seconds
    while not (value := ready()):
        assert time.monotonic() < deadline, f"not within {seconds:g} s: {what}"
        time.sleep(0.5)
    return value


def _history(live: Live) -> dict[str, Any]:
    history: dict[str, Any] = live.http.get(LATEST).json().get("history") or {}
    return history


def _row_ids(page: Page) -> list[str]:
    return texts(page.locator("table.cases tbody tr td:nth-child(1)"))


def _submit(page: Page, **fields: str) -> None:
    """Fill the filter form as a person would and submit it (a plain GET, no script)."""
    form = page.locator("form.filter")
    for name, value in fields.items():
        if name == "q":
            form.locator("input[name=q]").fill(value)
        else:
            form.locator(f"select[name={name}]").select_option(value)
    with page.expect_navigation():
        form.locator("button[type=submit]").click()


def _same_run(live: Live, page: Page, read: Any) -> tuple[dict[str, Any], Any]:
    """``read(page)`` and the report of the run the page shows (bounded retries)."""
    for _ in range(15):
        report = live.http.get(LATEST).json()
        page.reload()
        shown = page.locator(".run-id").inner_text()
        value = read(page)
        again = live.http.get(LATEST).json()
        if shown == report["run_id"] == again["run_id"] and report.get("history") == again.get(
            "history"
        ):
            return report, value
        time.sleep(0.5)
    raise AssertionError("no page load fell within one run")


@pytest.mark.timeout(300)  # a dozen runs of the golden set, 3 s apart
def test_filters_sort_and_pages_work_without_javascript(live: Live, tab_no_js: Tab) -> None:
    """The case table's filters, tag and text search, column sorting and pages work by links and
    forms alone, without JavaScript."""
    page = tab_no_js.page
    live.reference.failure_modes.set([])
    _until("three runs in the window", lambda: _history(live).get("runs_in_window", 0) >= 3)

    # the status page links the job's table
    page.goto(live.url + "/")
    page.locator("section.job a.case-table").click()
    assert "/case-table?" in page.url
    assert "Cases of reference / rag_cases" == page.locator("h1").inner_text()
    report = live.http.get(LATEST).json()
    ids = sorted(c["id"] for c in report["cases"])
    assert ids[:50] == _row_ids(page)
    assert "cases 1–50 of 138 shown · page 1 of 3" == page.locator("p.matched").inner_text()

    # failed, all on one page: healthy runs fail the same cases every time
    _submit(page, show="failed", size="200")
    assert "show=failed" in page.url
    failed = failed_ids(report)
    assert failed and sorted(failed) == _row_ids(page)
    verdicts = set(texts(page.locator("table.cases td:nth-child(3) .badge")))
    assert verdicts and {"incorrect", "relevant missed"} >= verdicts

    # a tag and a text search, combined
    _submit(page, show="all", tag="refund", q="退款")
    wanted = sorted(
        c["id"]
        for c in report["cases"]
        if "refund" in c["tags"] and ("退款" in c["id"] or "退款" in c["question"])
    )
    assert wanted and wanted == _row_ids(page)
    assert "refund" == page.locator("select[name=tag]").input_value()
    assert "退款" == page.locator("input[name=q]").input_value()

    # sorted by a column: its link sorts ascending, a second click descending
    page.goto(live.url + "/case-table?size=200")
    page.locator("table.cases th a[data-sort=rr]").click()
    rr = texts(page.locator("table.cases td:nth-child(4)"))
    values = [float(v) for v in rr if v != "n/a"]
    assert 138 == len(rr) and values == sorted(values) and values[0] < values[-1]
    page.locator("table.cases th a[data-sort=rr]").click()
    values = [float(v) for v in texts(page.locator("table.cases td:nth-child(4)")) if v != "n/a"]
    assert values == sorted(values, reverse=True)

    # pages: the next link goes on where the first page ended
    page.goto(live.url + "/case-table?size=25")
    page.locator("a[rel=next]").click()
    assert ids[25:50] == _row_ids(page)
    assert "cases 26–50 of 138 shown · page 2 of 6" == page.locator("p.matched").inner_text()

    # a page that does not exist, and an unknown filter, are 400 pages saying why
    response = page.goto(live.url + "/case-table?page=99")
    assert response is not None and 400 == response.status
    assert "Bad request" == page.locator("h1").inner_text()
    assert "page: 99 is beyond the last page (3) of 138 cases" in page.locator("main").inner_text()
    response = page.goto(live.url + "/case-table?show=broken")
    assert response is not None and 400 == response.status
    assert "show: 'broken' is not one of all, failed" in page.locator("main").inner_text()
    # one job: /case needs no target or dataset, and an unknown case is a 404 page
    response = page.goto(live.url + "/case?id=zh-refund-deadline")
    assert response is not None and 200 == response.status
    assert "zh-refund-deadline" in page.locator("h2").first.inner_text()
    assert "always failing" == page.locator("p .badge.stability").inner_text()
    response = page.goto(live.url + "/case?id=no-such-case")
    assert response is not None and 404 == response.status
    assert "no such case in the last run" in page.locator("main").inner_text()

    # degraded: the cases that just started failing, each with its badge, all regressed
    live.reference.failure_modes.set(["rerank_degraded"])
    _until("newly failing cases", lambda: _history(live).get("newly_failing"))
    page.goto(live.url + "/case-table")
    page.locator("ul.filters a", has_text="newly failing").click()
    report, (newly, badges) = _same_run(
        live,
        page,
        lambda p: (_row_ids(p), set(texts(p.locator("table.cases td:nth-child(7)")))),
    )
    assert sorted(report["history"]["newly_failing"]) == newly
    assert {"newly failing"} == badges
    page.goto(live.url + "/case-table?show=regressed&size=200")
    regressed = _row_ids(page)
    assert set(newly) <= set(regressed)
    assert all(texts(page.locator("table.cases td.changes")))
    # the case view carries the badge too
    page.goto(live.url + "/case-table?show=newly_failing")
    page.locator("table.cases tbody tr a.id").first.click()
    assert "/case?" in page.url
    assert "newly failing" == page.locator("p .badge.stability").inner_text()

    # healthy again: a case that failed once, between passes, is flaky
    live.reference.failure_modes.set([])
    _until("flaky cases", lambda: _history(live).get("flaky"))
    page.goto(live.url + "/case-table")
    page.locator("ul.filters a", has_text="flaky").click()
    report, flaky = _same_run(live, page, _row_ids)
    assert sorted(report["history"]["flaky"])[:50] == flaky
    # the 400 and 404 pages asked for above are all Chromium complains of
    refused = "Failed to load resource: the server responded with a status of {}"
    assert [
        refused.format("400 (Bad Request)"),
        refused.format("400 (Bad Request)"),
        refused.format("404 (Not Found)"),
    ] == tab_no_js.errors


# --- every figure against its source --------------------------------------------------------


def _kv(page: Page) -> dict[str, str]:
    kv = page.locator("section.job").first.locator("dl.kv")
    return dict(zip(texts(kv.locator("dt")), texts(kv.locator("dd")), strict=True))


class _Problems(list[str]):
    """The figures of a page that disagree with their source, in words."""

    def expect(self, what: str, ok: bool) -> None:
        """Note ``what`` unless ``ok``."""
        if not ok:
            self.append(what)


def _run_line_problems(out: _Problems, kv: dict[str, str], src: Sources) -> str | None:
    """The last run's line (outcome, run id, duration, case count) against the report and
    /metrics; its outcome, None when the line cannot be read (noted)."""
    report = src.report
    last = re.search(r"^(\w+) .* · run (\S+) · took (\S+) · report JSON · all (\d+) cases$",
                     kv["last run"])  # fmt: skip
    if last is None:
        out.append(f"last run reads {kv['last run']!r}")
        return None
    outcome, run_id, took, linked = last.groups()
    out.expect(f"run id {run_id}", run_id == report["run_id"])
    out.expect(f"took {took}", close(took, report["duration_seconds"]))
    out.expect(f"took {took} (metrics)", close(took, src.metric("rag_eval_run_duration_seconds")))
    out.expect(f"all {linked} cases", int(linked) == report["case_count"])
    return outcome


def _cases_line_problems(out: _Problems, kv: dict[str, str], src: Sources, outcome: str) -> bool:
    """The cases line (count, scored, failed, error kinds) against the report and /metrics;
    False when it cannot be read (noted)."""
    report, summary = src.report, src.summary
    cases = re.fullmatch(r"(\d+) · (\d+) scored · (\d+) failed(?: \((.*)\))?", kv["cases"])
    if cases is None:
        out.append(f"cases reads {kv['cases']!r}")
        return False
    count, scored, errored, kinds = cases.groups()
    out.expect(f"{count} cases", int(count) == report["case_count"] == summary["case_count"])
    out.expect(f"{scored} scored", int(scored) == summary["scored_count"])
    if outcome == "complete":
        last_scored = src.metric("rag_eval_last_run_scored_cases")
        out.expect(f"{scored} scored (metrics)", int(scored) == last_scored)
    out.expect(f"{errored} failed", int(errored) == report["error_count"])
    shown_kinds = dict(k.rsplit(" ", 1) for k in kinds.split(", ")) if kinds else {}
    out.expect(
        f"errors {shown_kinds}",
        {k: int(n) for k, n in shown_kinds.items()} == summary["errors_by_kind"],
    )
    return True


def _gate_line_problems(out: _Problems, kv: dict[str, str], src: Sources) -> None:
    """The gate's line (PASS/FAIL, the failing rules) against /metrics."""
    if "gate" not in kv:
        return
    passing = src.metric("rag_eval_gate_passing")
    out.expect(f"gate {kv['gate']}", kv["gate"].startswith("PASS" if passing else "FAIL"))
    failing = sorted(
        dict(labels)["rule"]
        for (name, labels), v in src.metrics.items()
        if name == "rag_eval_gate_rule_failing" and v == 1
    )
    shown = kv["gate"].partition("failing: ")[2]
    out.expect(f"failing rules {shown!r}", shown.split(", ") == failing if shown else not failing)


def _metric_row_problems(
    out: _Problems, cells: dict[str, str], src: Sources, baseline: dict[str, Any], outcome: str
) -> None:
    """One row of the quality table: its value (and, complete, its gauge), its count, and
    the baseline's value and the change against the baseline file and its gauge."""
    report, summary = src.report, src.summary
    metric = cells["metric"]
    value = summary.get(metric)
    out.expect(f"{metric} {cells['value']}", close(cells["value"], value))
    if outcome == "complete" and metric in GAUGE:
        gauge = src.metric(GAUGE[metric])
        out.expect(f"{metric} {cells['value']} (metrics)", close(cells["value"], gauge))
    total = summary["totals"].get(metric)
    wanted = total["count"] if total else (report["case_count"] if metric == "error_rate" else None)
    out.expect(
        f"{metric} count {cells['cases']}",
        (cells["cases"] or None) == (None if wanted is None else str(wanted)),
    )
    if "baseline" not in cells:
        return
    before = baseline["summary"].get(metric)
    out.expect(f"{metric} baseline {cells['baseline']}", close(cells["baseline"], before))
    ratio = src.metric("rag_eval_baseline_ratio", metric=metric)
    if ratio is not None:
        out.expect(f"{metric} baseline (metrics)", close(cells["baseline"], ratio))
    if value is not None and before is not None and cells["change"]:
        out.expect(
            f"{metric} change {cells['change']}",
            close(cells["change"].lstrip("+"), value - before),
        )


def _exported_problems(out: _Problems, section: Any, src: Sources, outcome: str) -> None:
    """The error ratio's gauge, and after an incomplete run the note with both figures,
    each equal to its source."""
    summary = src.summary
    error_ratio = src.metric("rag_eval_error_ratio")
    out.expect("error ratio (metrics)", close(f"{summary['error_rate']:.6f}", error_ratio))
    exported = section.locator("table.exported-values tbody tr")
    out.expect(
        "exported note", (section.locator(".exported").count() == 1) == (outcome != "complete")
    )
    for row in exported.all():
        metric, this, there = texts(row.locator("td"))
        out.expect(f"{metric} this run {this}", close(this, summary.get(metric)))
        out.expect(f"{metric} /metrics {there}", close(there, src.metric(GAUGE[metric])))


def _history_problems(out: _Problems, section: Any, src: Sources) -> None:
    """The drift table and the changed cases against the drift and stability series."""
    history = src.report.get("history") or {}
    for row in section.locator("table.drift tbody tr").all():
        check, _metric, _before, _now, shift, verdict = texts(row.locator("td"))
        out.expect(
            f"drift {check} shift {shift}",
            close(shift, src.metric("rag_eval_drift_shift", check=check)),
        )
        significant = src.metric("rag_eval_drift_significant", check=check) == 1
        out.expect(f"drift {check} {verdict}", (verdict == "significant") == significant)
    for head, listed in zip(
        texts(section.locator("h3.changed")),
        section.locator("ul.changed-cases").all(),
        strict=True,
    ):
        label, n = re.fullmatch(r"(.+) \((\d+)\)", head).groups()  # type: ignore[union-attr]
        key = CLASSES[label.lower()]
        out.expect(
            f"{head}",
            int(n)
            == len(history.get(key, ()))
            == src.metric("rag_eval_stability_cases", **{"class": key}),
        )
        ids = texts(listed.locator("a.id"))
        out.expect(f"{head} ids", ids == history.get(key, [])[: len(ids)])


def _audit_and_trend_problems(out: _Problems, section: Any, src: Sources) -> None:
    """The label audit's counts and each trend's last value against the report."""
    audit = re.search(r"label audit: (\d+) suspect of (\d+) labels", section.inner_text())
    if audit is not None:
        suspect, checked = map(int, audit.groups())
        labels = src.report["label_audit"]
        out.expect(
            f"audit {audit.group(0)}",
            (suspect, checked) == (labels["suspect"], labels["checked"]),
        )
    for trend in section.locator(".trend").all():
        metric = trend.locator(".id").inner_text()
        shown = trend.locator("strong").inner_text()
        out.expect(f"trend {metric} {shown}", close(shown, src.summary.get(metric)))


def _worst_problems(out: _Problems, section: Any, src: Sources) -> None:
    """Each worst case's words against its record: its error, or its recall and RR."""
    by_id = src.cases
    for item in section.locator("ol.worst li").all():
        case = by_id.get(item.locator("a.id").inner_text())
        what = item.inner_text()
        if case is None:
            out.append(f"worst {what!r}: no such case")
        elif case["error"] is not None:
            out.expect(f"worst {what!r}", f"error {case['error']['kind']}" in what)
        elif m := re.search(r"recall (\S+), RR (\S+),", what):
            out.expect(
                f"worst {what!r}",
                close(m.group(1), case["recall_at_k"]) and close(m.group(2), case["mrr"]),
            )


def _status_problems(baseline: dict[str, Any]) -> Any:
    def problems(page: Page, src: Sources) -> list[str]:
        out = _Problems()
        section = page.locator("section.job").first
        kv = _kv(page)
        outcome = _run_line_problems(out, kv, src)
        if outcome is None or not _cases_line_problems(out, kv, src, outcome):
            return out
        _gate_line_problems(out, kv, src)
        # the quality table, against the report, the baseline file and (complete) the gauges
        table = section.locator("table.metrics")
        heads = texts(table.locator("thead th"))
        for row in table.locator("tbody tr").all():
            cells = dict(zip(heads, texts(row.locator("td")), strict=True))
            _metric_row_problems(out, cells, src, baseline, outcome)
        # an incomplete run: the page says so and shows both, each equal to its source
        _exported_problems(out, section, src, outcome)
        _history_problems(out, section, src)
        _audit_and_trend_problems(out, section, src)
        _worst_problems(out, section, src)
        return out

    return problems


def _count_problems(page: Page, src: Sources) -> list[str]:
    """Each filter's count against its source: a report field, a series, or the failed
    cases."""
    out: list[str] = []
    for count in page.locator(".count").all():
        shown = int(count.inner_text())
        field, metric, derived = (
            count.get_attribute(f"data-{a}") for a in ("report", "metric", "count")
        )
        if field is not None:
            want: float | None = src.report[field]
        elif metric is not None:
            labels = dict(
                p.split("=", 1) for p in (count.get_attribute("data-labels") or "").split(",") if p
            )
            want = src.metric(metric, **labels)
        elif derived == "failed":
            want = len(failed_ids(src.report))
        else:
            continue  # the page's own comparison with the baseline: no source to hold
        if shown != want:
            out.append(f"{count.get_attribute('data-show')} {shown} != {want}")
    return out


def _expected_verdict(case: dict[str, Any], shown: str) -> str:
    """A case's verdict from its record: the answer check, else retrieval (``shown``, the
    case view's words, when neither checks it)."""
    hit = None if case["unanswerable"] or case["recall_at_k"] is None else case["recall_at_k"] > 0
    if case["error"]:
        return "error"
    return (
        {True: "correct", False: "incorrect"}.get(case["answer_correct"])
        or {True: "relevant retrieved", False: "relevant missed"}.get(hit)  # type: ignore[arg-type]
        or shown  # neither check: the words are the case view's
    )


def _row_problems(
    case_id: str,
    case: dict[str, Any],
    cells: dict[int, str],
    history: dict[str, Any],
) -> list[str]:
    """One row: verdict, RR, recall, latency and stability badge against the record and
    history."""
    out: list[str] = []
    verdict = cells[3]
    want_verdict = _expected_verdict(case, verdict)
    if verdict != want_verdict:
        out.append(f"{case_id} verdict {verdict} != {want_verdict}")
    for n, field in ((4, "mrr"), (5, "recall_at_k"), (6, "latency_seconds")):
        if not close(cells[n], case[field]):
            out.append(f"{case_id} {field} {cells[n]} != {case[field]}")
    label = cells[7]
    klass = CLASSES.get(label)
    for key in CLASSES.values():
        if (key == klass) != (case_id in history.get(key, ())):
            out.append(f"{case_id} badge {label!r} but history {key} says otherwise")
    return out


def _table_problems(show: str) -> Any:
    def problems(page: Page, src: Sources) -> list[str]:
        report, history = src.report, src.report.get("history") or {}
        out = _count_problems(page, src)
        ids = _row_ids(page)
        expected = {
            "all": [c["id"] for c in report["cases"]],
            "failed": failed_ids(report),
            "errored": [c["id"] for c in report["cases"] if c["error"] is not None],
        }.get(show, history.get(show, []))
        if sorted(expected) != ids:
            out.append(f"{show}: rows {len(ids)} != {len(expected)} cases")
        matched = page.locator(".matched-count")
        if matched.count() and int(matched.inner_text()) != len(expected):
            out.append(f"{show}: {matched.inner_text()} shown != {len(expected)}")
        columns = {n: texts(page.locator(f"table.cases td:nth-child({n})")) for n in (4, 5, 6, 7)}
        columns[3] = texts(page.locator("table.cases td:nth-child(3) .badge"))
        by_id = src.cases
        for i, case_id in enumerate(ids):
            cells = {n: column[i] for n, column in columns.items()}
            out += _row_problems(case_id, by_id[case_id], cells, history)
        return out

    return problems


@pytest.mark.timeout(300)
def test_every_figure_equals_its_source(live: Live, tab_no_js: Tab) -> None:
    """Status page and case table against /metrics and /reports/latest: after a degraded
    complete run (gate failing, cases newly failing), then after an incomplete run, where
    the page shows the run's own figures beside the ones /metrics still exports."""
    page = tab_no_js.page
    # newly failing: passing in the window's first runs, failing from the latest on
    _until("two healthy runs in the window", lambda: _history(live).get("runs_in_window", 0) >= 2)
    live.reference.failure_modes.set(["rerank_degraded"])
    _until("a degraded run", lambda: _history(live).get("newly_failing"))
    status = _status_problems(live.baseline)
    consistent(live.http, page, "/", status)
    for show in ("all", "failed", "newly_failing"):
        params = "size=200" + ("" if show == "all" else f"&show={show}")
        consistent(live.http, page, f"/case-table?{params}", _table_problems(show))

    live.reference.failure_modes.set(["server_errors"])
    _until("an incomplete run", lambda: live.http.get(LATEST).json()["error_count"])  # fmt: skip
    consistent(live.http, page, "/", status)
    assert "Not what /metrics shows" in page.locator(".exported").inner_text()
    assert page.locator("table.exported-values tbody tr").count() >= 4
    consistent(live.http, page, "/case-table?size=200&show=errored", _table_problems("errored"))
    live.reference.failure_modes.set([])
    assert [] == tab_no_js.errors
