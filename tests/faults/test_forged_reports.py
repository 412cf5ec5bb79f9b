"""Forged and inconsistent reports: the gate, the daemon's baseline and the restore of
``latest.json`` trust only a report that is valid, and judge its cases, not its summary.

Each forgery is what an attacker (or a careless script) can do to a JSON file: copy a good
summary onto cases that all failed, write ``-Infinity`` or a recall of 10.0, lower the
baseline so that a worse candidate passes, repeat a case id, nest arrays a hundred
thousand deep, write a 400-digit number. A report's summary is derived from its cases, so
a written summary that disagrees with them changes nothing; out-of-range values are
refused. ``evaluator gate`` runs as a pipeline runs it (a subprocess) and must exit 1
naming the file and the field; ``evaluator serve`` must refuse a forged (summary-only)
baseline at start, and skip a forged ``latest.json`` while serving ``/metrics``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evaluator.daemon.report_store import LATEST, job_folder_name
from evaluator.report import report_to_dict
from tests.gate.factories import record, report, write
from tests.support.prometheus import EVALUATOR, DaemonProcess

pytestmark = pytest.mark.e2e

Forgery = Callable[[dict[str, Any]], None]


def _gate(tmp: Path, baseline: Path, candidate: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    return subprocess.run(
        [EVALUATOR, "gate", "--baseline", str(baseline), "--candidate", str(candidate)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _good(run_id: str, n: int = 20) -> dict[str, Any]:
    cases = [record(f"q{i}", recall=1.0 if i % 4 else 0.5, latency=0.1 + i / 100) for i in range(n)]
    return report_to_dict(report(cases, run_id=run_id))


def _all_failed(run_id: str, n: int = 20) -> dict[str, Any]:
    cases = [record(f"q{i}", error="timeout", latency=30.0) for i in range(n)]
    return report_to_dict(report(cases, run_id=run_id))


def _assert_rejected(proc: subprocess.CompletedProcess[str], path: Path, field: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""  # no verdict printed for a report that is not trusted
    assert str(path) in proc.stderr
    assert field in proc.stderr, proc.stderr


class TestForgedCandidate:
    def test_summary_copied_from_baseline_onto_failed_cases(self, tmp_path: Path) -> None:
        """Every case failed, the summary says otherwise: the cases win, the gate refuses."""
        good = _good("base")
        forged = _all_failed("cand")
        forged["summary"] = good["summary"]
        forged["error_count"] = 0
        baseline = write(tmp_path / "baseline.json", good)
        candidate = write(tmp_path / "candidate.json", forged)
        proc = _gate(tmp_path, baseline, candidate)
        _assert_rejected(proc, candidate, "'error_count'")

    def test_summary_copied_with_counts_left_alone(self, tmp_path: Path) -> None:
        """The copied summary is not read: the gate judges the failed cases and fails."""
        good = _good("base")
        forged = _all_failed("cand")
        forged["summary"] = good["summary"]
        baseline = write(tmp_path / "baseline.json", good)
        candidate = write(tmp_path / "candidate.json", forged)
        proc = _gate(tmp_path, baseline, candidate)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "FAIL error_rate" in proc.stdout, proc.stdout

    @pytest.mark.parametrize(
        "forge",
        [
            lambda d: d["summary"].update(mrr=0.99),
            lambda d: d["summary"].update(p95_seconds=0.0),
            lambda d: d["summary"]["totals"]["recall_at_k"].update(sum=0.0),
        ],
        ids=["ratio-not-its-totals", "p95-below-p50", "totals-lowered"],
    )
    def test_summary_that_disagrees_with_the_cases_changes_nothing(
        self, tmp_path: Path, forge: Forgery
    ) -> None:
        """The verdict on a report whose summary was edited is the verdict on its cases."""
        baseline = write(tmp_path / "baseline.json", _good("base"))
        candidate = tmp_path / "candidate.json"
        write(candidate, _good("cand"))
        honest = _gate(tmp_path, baseline, candidate)
        forged = _good("cand")
        forge(forged)
        write(candidate, forged)
        proc = _gate(tmp_path, baseline, candidate)
        assert (honest.returncode, honest.stdout) == (proc.returncode, proc.stdout)

    @pytest.mark.parametrize(
        ("forge", "field"),
        [
            (lambda d: d["summary"].update(error_rate=-1.0), "'summary.error_rate'"),
            (lambda d: d["summary"].update(recall_at_k=10.0), "'summary.recall_at_k'"),
            (lambda d: d["cases"][3].update(recall_at_k=10.0), "'cases[3].recall_at_k'"),
            (lambda d: d["cases"][2].update(latency_seconds=-0.5), "'cases[2].latency_seconds'"),
            (
                lambda d: d["summary"]["totals"]["mrr"].update(count=-3),
                "'summary.totals.mrr.count'",
            ),
            (lambda d: d["cases"][5].update(id="q4"), "'cases[5].id'"),
            (lambda d: d.update(k=0), "'k'"),
        ],
        ids=[
            "negative-error-rate",
            "summary-recall-10",
            "case-recall-10",
            "negative-latency",
            "negative-count",
            "duplicate-id",
            "k-zero",
        ],
    )
    def test_out_of_range_or_inconsistent(self, tmp_path: Path, forge: Forgery, field: str) -> None:
        """A candidate with a value out of range or inconsistent with its cases is refused,
        naming the file and field."""
        forged = _good("cand")
        forge(forged)
        baseline = write(tmp_path / "baseline.json", _good("base"))
        candidate = write(tmp_path / "candidate.json", forged)
        _assert_rejected(_gate(tmp_path, baseline, candidate), candidate, field)

    def test_error_rate_minus_infinity(self, tmp_path: Path) -> None:
        """``-Infinity`` is not JSON; the message still names the field."""
        forged = _good("cand")
        text = json.dumps(forged).replace('"error_rate": 0.0', '"error_rate": -Infinity', 1)
        assert "-Infinity" in text
        candidate = tmp_path / "candidate.json"
        candidate.write_text(text, "utf-8")
        baseline = write(tmp_path / "baseline.json", _good("base"))
        _assert_rejected(_gate(tmp_path, baseline, candidate), candidate, "'summary.error_rate'")

    @pytest.mark.parametrize(
        ("old", "new"),
        [
            ('"latency_seconds": 0.1,', '"latency_seconds": ' + "9" * 400 + ","),
            ('"k": 5', '"k": ' + "9" * 400),
            ('"k": 5', '"k": 5, "extra": ' + "[" * 100_000 + "]" * 100_000),
        ],
        ids=["400-digit-float", "400-digit-int", "nested-100000-deep"],
    )
    def test_huge_numbers_and_deep_nesting(self, tmp_path: Path, old: str, new: str) -> None:
        """A candidate with huge numbers or deep nesting is refused in one line naming the file,
        without a traceback."""
        text = json.dumps(_good("cand"))
        assert old in text
        candidate = tmp_path / "candidate.json"
        candidate.write_text(text.replace(old, new, 1), "utf-8")
        baseline = write(tmp_path / "baseline.json", _good("base"))
        proc = _gate(tmp_path, baseline, candidate)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert str(candidate) in proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.splitlines()) == 1


class TestForgedBaseline:
    def test_lowered_baseline_cannot_let_a_worse_candidate_pass(self, tmp_path: Path) -> None:
        """The baseline's summary lowered below its own cases: judged on its cases, exit 2."""
        honest = _good("base")
        forged = json.loads(json.dumps(honest))
        totals = forged["summary"]["totals"]["recall_at_k"]
        totals["sum"] = totals["count"] * 0.1
        forged["summary"]["recall_at_k"] = 0.1
        worse = [record(f"q{i}", recall=0.5, latency=0.1 + i / 100) for i in range(20)]
        baseline = write(tmp_path / "baseline.json", forged)
        candidate = write(tmp_path / "candidate.json", report(worse, run_id="cand"))
        honest_path = write(tmp_path / "honest.json", honest)
        assert _gate(tmp_path, honest_path, candidate).returncode == 2  # it is worse
        assert _gate(tmp_path, baseline, candidate).returncode == 2

    def test_daemon_refuses_a_forged_baseline_at_start(self, tmp_path: Path) -> None:
        """A summary-only baseline is judged on its summary, which must agree with itself."""
        forged = _good("base")
        forged["cases"] = []
        forged["summary"]["error_rate"] = 0.5
        baseline = write(tmp_path / "baseline.json", forged)
        config = _daemon_config(tmp_path, baseline=baseline)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            result = daemon.wait_exit(timeout=30)
        assert result.returncode == 1
        assert str(baseline) in result.stderr
        assert "'summary.error_rate'" in result.stderr


GOLDEN = "".join(
    json.dumps({"id": f"q{i}", "question": f"question {i}?", "relevant_ids": ["d1"]}) + "\n"
    for i in range(5)
)


def _daemon_config(tmp: Path, baseline: Path | None = None) -> Path:
    golden = tmp / "golden.jsonl"
    golden.write_text(GOLDEN, "utf-8")
    lines = [
        f'reports_dir = "{tmp / "reports"}"',
        'log_format = "json"',
        "",
        "[[targets]]",
        'name = "rag"',
        'url = "http://127.0.0.1:9/rag"',  # never called: no run at start
        "",
        "[[jobs]]",
        'target = "rag"',
        f'dataset = "{golden}"',
        "interval_seconds = 3600",
        "run_at_start = false",
    ]
    if baseline is not None:
        lines.append(f'baseline = "{baseline}"')
    config = tmp / "evaluator.toml"
    config.write_text("\n".join(lines) + "\n", "utf-8")
    return config


def _latest_path(tmp: Path) -> Path:
    folder = tmp / "reports" / job_folder_name("rag/golden")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / LATEST


def _for_golden(data: dict[str, Any]) -> dict[str, Any]:
    """Stamp a report with the golden set's hash and names, as a real run would."""
    data.update(
        dataset_hash=hashlib.sha256(GOLDEN.encode()).hexdigest(),
        target="rag",
        dataset="golden",
    )
    return data


class TestRestore:
    def test_forged_latest_is_not_restored(self, tmp_path: Path) -> None:
        """A forged latest report is rejected at start and its numbers never exported."""
        forged = _for_golden(_all_failed("forged", n=5))
        forged["cases"] = []  # summary-only, and its summary disagrees with itself
        forged["summary"] = _good("x", n=5)["summary"]
        forged["summary"]["recall_at_k"] = 0.123456
        latest = _latest_path(tmp_path)
        write(latest, forged)
        config = _daemon_config(tmp_path)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready(timeout=30)
            rejected = daemon.wait_for_log(lambda e: e.get("event") == "latest_report_rejected")
            metrics = daemon.get("/metrics")
            daemon.stop()
        assert str(latest) in rejected["reason"]
        assert metrics.status_code == 200
        assert "0.123456" not in metrics.text
        assert "rag_eval_last_run_timestamp_seconds{" not in metrics.text

    def test_restored_report_without_totals_keeps_metrics_up(self, tmp_path: Path) -> None:
        """A valid summary-only report with no totals (older writers) is restored, and
        every scrape still answers: no series for the metrics it lacks."""
        data = _for_golden(_good("old", n=5))
        data["cases"] = []
        summary = data["summary"]
        summary["totals"] = {}
        summary.pop("by_tag", None)
        for name in (
            "recall_at_k", "mrr", "ndcg_at_k", "citation_precision", "citation_recall",
            "answer_accuracy", "fact_recall", "false_refusal_rate", "correct_refusal_rate",
        ):  # fmt: skip
            summary[name] = None
        write(_latest_path(tmp_path), data)
        config = _daemon_config(tmp_path)
        with DaemonProcess(["--config", str(config)], workdir=tmp_path) as daemon:
            daemon.wait_ready(timeout=30)
            daemon.wait_for_log(lambda e: e.get("event") == "job_restored")
            scrapes = [daemon.get("/metrics") for _ in range(3)]
            daemon.stop()
        assert [s.status_code for s in scrapes] == [200, 200, 200]
        text = scrapes[-1].text
        assert 'rag_eval_last_complete_run_timestamp_seconds{dataset="golden",target="rag"}' in text
        assert 'rag_eval_last_run_scored_cases{dataset="golden",target="rag"} 5.0' in text
        assert "rag_eval_recall_at_k{" not in text


#: what a terminal or a log viewer breaks a line at or acts on: C0 but tab and newline,
#: DEL, C1 (U+0085 is NEL, a line break), the Unicode line and paragraph separators
_LINE_BREAKING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_SEPARATORS = "a\u2028b\u2029c\u0085d"


@pytest.mark.parametrize("field", ["case id", "run_id", "target"])
@pytest.mark.parametrize("output", ["text", "markdown", "json"])
def test_line_separators_from_a_report_stay_inside_their_line(
    tmp_path: Path, field: str, output: str
) -> None:
    """U+2028, U+2029 and U+0085 (NEL) in a candidate's case id, run id or target are
    shown escaped in every gate output: none starts a line (a forged ``verdict:``) there."""
    data = _good("cand")
    base = _good("base")
    if field == "case id":
        data["cases"][0]["id"] = _SEPARATORS  # also no longer the golden set's cases: refused
    elif field == "run_id":
        data["run_id"] = _SEPARATORS
    else:
        data["target"] = _SEPARATORS
    baseline = write(tmp_path / "baseline.json", base)
    candidate = write(tmp_path / "candidate.json", data)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    proc = subprocess.run(
        [EVALUATOR, "gate", "--baseline", str(baseline), "--candidate", str(candidate),
         "--format", output],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1, 2), out
    assert "internal error" not in out and "Traceback" not in out, out
    found = sorted({f"U+{ord(c):04X}" for c in _LINE_BREAKING.findall(out)})
    assert not found, f"{found} in gate --format {output}:\n{out[-1500:]}"
