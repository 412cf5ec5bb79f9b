"""Read the figures a page shows and the sources they claim, and say where they disagree.

The sources are the daemon's own ``/reports/latest`` (the report as JSON, with the history's
lists beside it) and ``/metrics``. :func:`consistent` reads them before and after the page
loads, so the page is compared with one state of the daemon even while it runs a job every
few seconds. Numbers are parsed back from what the page writes (``0.9123``, ``12.3ms``) and
compared within half of the last digit shown: the test reads the page, not the formatter.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from playwright.sync_api import Locator, Page
from prometheus_client.parser import text_string_to_metric_families

from evaluator.metrics import METRICS

__all__ = ["Sources", "close", "consistent", "failed_ids", "sources"]

#: the series a page's figures come from: compared before and after a page load
_WATCHED = re.compile(r"rag_eval_(?!case_latency|stage_latency|event_loop|ttft)")
#: each summary metric's gauge, from the registry
GAUGE = {s.name: s.gauge for s in METRICS if s.gauge is not None}


@dataclass(frozen=True)
class Sources:
    report: dict[str, Any]
    metrics: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def metric(self, name: str, **labels: str) -> float | None:
        """The scraped value of ``name`` for the report's job with ``labels`` (None: not
        exported)."""
        job = {"target": self.report["target"], "dataset": self.report["dataset"]}
        return self.metrics.get((name, frozenset({**job, **labels}.items())))

    @property
    def summary(self) -> dict[str, Any]:
        """The report's summary block."""
        summary: dict[str, Any] = self.report["summary"]
        return summary

    @property
    def cases(self) -> dict[str, dict[str, Any]]:
        """The report's cases by id."""
        return {c["id"]: c for c in self.report["cases"]}


def sources(http: httpx.Client) -> Sources:
    """The daemon's report and series now (``http``: a client on its base URL)."""
    report = http.get("/reports/latest").json()
    text = http.get("/metrics").text
    metrics = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if _WATCHED.match(sample.name):
                metrics[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Sources(report, metrics)


def consistent(
    http: httpx.Client,
    page: Page,
    path: str,
    check: Callable[[Page, Sources], list[str]],
    *,
    attempts: int = 15,
) -> None:
    """Load ``path`` in ``page`` between two identical reads of the sources and run ``check``;
    retried (bounded) when a run finished meanwhile or the history caught up later. A figure
    that disagrees with its source in every consistent read fails the test."""
    problems = ["the sources never held still around a page load"]
    for _ in range(attempts):
        before = sources(http)
        response = page.goto(str(http.base_url).rstrip("/") + path)
        after = sources(http)
        assert response is not None and 200 == response.status, path
        if before == after:
            problems = check(page, before)
            if not problems:
                return
        time.sleep(0.5)
    raise AssertionError(f"{path}: " + "; ".join(problems[:20]))


_SECONDS = re.compile(r"^(-?[0-9.]+)(µs|ms|s)$")
_SCALE = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}


def close(shown: str, value: float | None) -> bool:
    """Whether ``shown`` (a ratio, a count or a time as the pages write them) is ``value``."""
    shown = shown.strip()
    if shown in ("n/a", ""):
        return value is None
    if value is None:
        return False
    scale = 1.0
    if match := _SECONDS.match(shown):
        shown, scale = match.group(1), _SCALE[match.group(2)]
    decimals = len(shown.partition(".")[2])
    return abs(float(shown) * scale - value) <= 0.5 * 10**-decimals * scale + 1e-9


def failed_ids(report: Mapping[str, Any]) -> list[str]:
    """The report's cases whose verdict is a fail, read from its JSON: the answer check when
    the case has one, else "a relevant id in the top K" (errored cases are no verdict)."""
    out = []
    for case in report["cases"]:
        if case["error"] is not None:
            continue
        verdict = case["answer_correct"]
        if verdict is None and not case["unanswerable"] and case["recall_at_k"] is not None:
            verdict = case["recall_at_k"] > 0
        if verdict is False:
            out.append(case["id"])
    return out


def texts(locator: Locator) -> list[str]:
    return [t.strip() for t in locator.all_inner_texts()]
