"""The daemon in-process: schedules, outcomes, reloads, reports, restore and start errors.

Each test runs real ``Daemon`` objects on their own event loop (``asyncio.run``) against a
loopback endpoint, with a fresh metrics registry per daemon, bounded to a few seconds.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
import structlog.testing
from aiohttp import web

from evaluator.config import HttpTargetConfig, JobConfig, RetryConfig, Settings, load_settings
from evaluator.daemon import Daemon
from evaluator.daemon.report_store import LATEST
from evaluator.daemon.schedule import stagger_offsets
from evaluator.errors import ERROR_KINDS, ConfigError
from tests.support.contract import QUALITY_GAUGES as QUALITY
from tests.support.inprocess import run_bounded, running, until
from tests.support.loopback import LoopbackServer, Reply

LABELS = {"target": "loop", "dataset": "golden"}


#: four cases; q1 and q3 score badly, so averages differ from one subset of cases to another
CASES = [
    {"id": f"c{i}", "question": f"q{i}", "relevant_ids": [f"d{i}"], "expected_facts": [f"fact{i}"]}
    for i in range(4)
]


def _answer(question: str) -> dict[str, Any]:
    i = question[1:]
    if question == "q1":  # relevant second, wrong answer, unsupported citation
        return {"answer": "nope", "retrieved": [{"id": "x"}, {"id": "d1"}], "citations": [1]}
    if question == "q3":  # nothing found
        return {"answer": "", "retrieved": [], "citations": []}
    return {
        "answer": f"it is fact{i}",
        "retrieved": [{"id": f"d{i}"}],
        "citations": [1],
        "timings": {"model": 0.01},
    }


class Script:
    """Replies by question; ``failing`` questions get HTTP 500, ``delay`` slows every reply."""

    def __init__(self) -> None:
        self.failing: set[str] = set()
        self.delay = 0.0

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The answer to the request's question after the script's delay, a 500 for a failing
        question."""
        question = str(request["question"])
        if question in self.failing:
            return Reply(body={"detail": "boom"}, status=500)
        return Reply(_answer(question), delay=self.delay)


class Endpoint(LoopbackServer):
    """The loopback endpoint, counting requests in flight (one case a run: runs in flight)."""

    def __init__(self, script: Script) -> None:
        super().__init__(script)
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopped = False

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await super()._handle(request)
        finally:
            self.in_flight -= 1

    def questions(self) -> list[str]:
        """The questions asked, in order."""
        return [str(r["question"]) for r in self.requests]

    def stop(self) -> None:
        """Take the target down: connections are refused from now on."""
        if not self.stopped:
            self.stopped = True
            self.__exit__(None, None, None)


@pytest.fixture
def script() -> Script:
    """A script every case answers well and at once."""
    return Script()


@pytest.fixture
def endpoint(script: Script) -> Iterator[Endpoint]:
    """A loopback endpoint answering by ``script``."""
    server = Endpoint(script)
    server.__enter__()
    yield server
    server.stop()


def _write_cases(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), "utf-8")
    return path


def _settings(
    tmp_path: Path, url: str, *, job: dict[str, Any] | None = None, **top: Any
) -> Settings:
    golden = tmp_path / "golden.jsonl"
    if not golden.exists():
        _write_cases(golden, CASES)
    fields: dict[str, Any] = {
        "target": "loop",
        "dataset": golden,
        "interval_seconds": 3600,
        "run_at_start": False,
    }
    fields.update(job or {})
    values: dict[str, Any] = {
        "targets": [
            HttpTargetConfig(
                name="loop",
                url=url,
                timeout_seconds=2,
                retry=RetryConfig(
                    retries=1, backoff_initial_seconds=0.01, backoff_max_seconds=0.02
                ),
            )
        ],
        "jobs": [JobConfig(**fields)],
        "reports_dir": tmp_path / "reports",
        "listen": "127.0.0.1:0",
        "shutdown_grace_seconds": 5,
    }
    values.update(top)
    return Settings(**values)


def _sample(daemon: Daemon, name: str, **labels: str) -> float | None:
    return daemon.registry.get_sample_value(name, {**LABELS, **labels})


def _runs(daemon: Daemon) -> dict[str, float | None]:
    outcomes = ("complete", "incomplete", "failed", "skipped")
    return {o: _sample(daemon, "rag_eval_runs_total", outcome=o) for o in outcomes}


def _quality(daemon: Daemon) -> dict[str, float | None]:
    return {name: _sample(daemon, name) for name in QUALITY}


def _job_info(daemon: Daemon) -> dict[str, str]:
    for family in daemon.registry.collect():
        for sample in family.samples:
            if sample.name == "rag_eval_job_info" and sample.labels["dataset"] == "golden":
                return dict(sample.labels)
    raise AssertionError("no rag_eval_job_info sample")


def _latest(daemon: Daemon) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((daemon.jobs[0].store.folder / LATEST).read_text("utf-8"))
    return data


def _expected_quality(report: dict[str, Any]) -> dict[str, float]:
    return {name: report["summary"][key] for name, key in QUALITY.items()}


@pytest.mark.e2e
class TestSchedule:
    """Runs follow the schedule and never overlap."""

    def test_run_longer_than_interval_is_skipped_and_counted(
        self, tmp_path: Path, endpoint: Endpoint, script: Script
    ) -> None:
        """A run outlasting its 0.3 s interval makes the next fires skips; runs never overlap."""
        _write_cases(tmp_path / "golden.jsonl", CASES[:1])
        script.delay = 1.0
        settings = _settings(
            tmp_path, endpoint.url, job={"interval_seconds": 0.3, "run_at_start": True}
        )

        async def body() -> None:
            async with running(settings) as daemon:
                await until(
                    lambda: (
                        (_runs(daemon)["skipped"] or 0) >= 1
                        and (_runs(daemon)["complete"] or 0) >= 1
                    ),
                    seconds=6,
                )
                runs = _runs(daemon)
            assert runs["skipped"] is not None and runs["skipped"] >= 1
            assert (0.0, 0.0) == (runs["incomplete"], runs["failed"])

        run_bounded(body)
        assert 1 == endpoint.max_in_flight
        assert len(endpoint.requests) >= 1

    def test_first_runs_at_start_then_every_interval(
        self, tmp_path: Path, endpoint: Endpoint
    ) -> None:
        """With run_at_start, the first run starts at once and the next ones follow the interval."""
        settings = _settings(
            tmp_path, endpoint.url, job={"interval_seconds": 1.0, "run_at_start": True}
        )

        async def body() -> None:
            started = time.monotonic()
            async with running(settings) as daemon:
                # the first fire at start is tests/daemon/test_schedule.py's pure check; an
                # upper bound on wall time here would only measure the machine's load
                await until(lambda: (_runs(daemon)["complete"] or 0) >= 1, seconds=2)
                await until(lambda: (_runs(daemon)["complete"] or 0) >= 2, seconds=3)
                assert time.monotonic() - started >= 1.0  # the second one an interval later

        run_bounded(body)

    @pytest.mark.parametrize("log_cases", [True, False])
    def test_log_cases_switches_the_per_case_lines_and_keeps_the_run_line(
        self, tmp_path: Path, endpoint: Endpoint, log_cases: bool
    ) -> None:
        """log_cases = false (the demo's console) keeps the run line; the default logs each case."""
        settings = _settings(
            tmp_path, endpoint.url, job={"run_at_start": True}, log_cases=log_cases
        )

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: (_runs(daemon)["complete"] or 0) >= 1, seconds=3)

        with structlog.testing.capture_logs() as logs:
            run_bounded(body)
        events = [e["event"] for e in logs]
        assert (4 if log_cases else 0) == events.count("case")
        assert 1 == events.count("run")

    def test_a_failed_case_logs_a_warning_with_every_key_a_scored_one_has(
        self, tmp_path: Path, endpoint: Endpoint, script: Script
    ) -> None:
        """A failed case is a ``warning`` line (a scored one ``info``), and both carry the same
        keys: what was not measured, such as ``ttfb_seconds``, is null rather than absent."""
        script.failing.add("q2")
        settings = _settings(tmp_path, endpoint.url, job={"run_at_start": True})

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: sum(v or 0 for v in _runs(daemon).values()) >= 1, seconds=5)

        with structlog.testing.capture_logs() as logs:
            run_bounded(body)
        cases = {e["case_id"]: e for e in logs if e["event"] == "case"}
        assert "warning" == cases["c2"]["log_level"]
        assert {"info"} == {cases[c]["log_level"] for c in ("c0", "c1", "c3")}
        assert "http_status" == cases["c2"]["error_kind"]
        assert set(cases["c0"]) == set(cases["c2"])
        assert cases["c2"]["ttfb_seconds"] is None

    def test_run_at_start_false_waits_an_interval_for_every_job(
        self, tmp_path: Path, endpoint: Endpoint
    ) -> None:
        """run_at_start false holds back the first run of each job, staggered ones included."""
        base = _settings(tmp_path, endpoint.url)
        second = base.jobs[0].model_copy(update={"dataset_label": "other"})
        settings = base.model_copy(update={"jobs": (base.jobs[0], second)})

        async def body() -> None:
            async with running(settings) as daemon:
                assert daemon._scheduler is not None
                soonest = min(job.next_run_time.timestamp() for job in daemon._scheduler.get_jobs())
                assert soonest - time.time() > 3000  # an hour away, not the stagger offset

        run_bounded(body)

    def test_jobs_a_reload_adds_start_as_at_start_up(
        self, tmp_path: Path, endpoint: Endpoint
    ) -> None:
        """A reload's new jobs are staggered among themselves and, with run_at_start false,
        wait an interval (they used to run at once); a kept job keeps its next run."""
        base = _settings(tmp_path, endpoint.url)
        more = [base.jobs[0].model_copy(update={"dataset_label": f"more-{i}"}) for i in range(3)]
        grown = base.model_copy(update={"jobs": (base.jobs[0], *more)})

        async def body() -> None:
            daemon = Daemon(base, reload=lambda: grown)
            await daemon.start()
            try:
                scheduler = daemon._scheduler
                assert scheduler is not None
                kept = daemon.jobs[0].key
                kept_next = scheduler.get_job(kept).next_run_time
                before = datetime.now(UTC)
                assert await daemon.reload()
                after = datetime.now(UTC)
                assert kept_next == scheduler.get_job(kept).next_run_time
                added = [scheduler.get_job(r.key).next_run_time for r in daemon.jobs[1:]]
                # three newcomers over 1.5 s (0.5 s a job), each one interval after its start
                for at, offset in zip(added, stagger_offsets(3, 1.5), strict=True):
                    wait = timedelta(seconds=3600 + offset)
                    assert before + wait <= at <= after + wait
                await asyncio.sleep(0.3)  # a run fired at once would have asked by now
                assert [] == endpoint.requests
            finally:
                await daemon.stop()

        run_bounded(body)


@pytest.mark.e2e
class TestOutcomes:
    """Outcomes follow docs/daemon.md; only a complete run moves the quality gauges."""

    def test_target_down_for_a_whole_run_fails_and_keeps_gauges(
        self, tmp_path: Path, endpoint: Endpoint
    ) -> None:
        """Refused connections for every case: failed, gauges kept, error ratio 1, connect."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as daemon:
                runner = daemon.jobs[0]
                assert "complete" == await runner.run()
                before = _quality(daemon)
                assert _expected_quality(_latest(daemon)) == before
                assert 0.0 == _sample(daemon, "rag_eval_error_ratio")
                last_complete = _sample(daemon, "rag_eval_last_complete_run_timestamp_seconds")

                endpoint.stop()
                assert "failed" == await runner.run()
                assert before == _quality(daemon)
                assert 1.0 == _sample(daemon, "rag_eval_error_ratio")
                assert last_complete == _sample(
                    daemon, "rag_eval_last_complete_run_timestamp_seconds"
                )
                errors = {
                    k: _sample(daemon, "rag_eval_case_errors_total", kind=k) for k in ERROR_KINDS
                }
                assert dict.fromkeys(ERROR_KINDS, 0.0) | {"connect": 4.0} == errors
                assert 4.0 == _sample(daemon, "rag_eval_case_retries_total")
                assert {"complete": 1.0, "incomplete": 0.0, "failed": 1.0, "skipped": 0.0} == (
                    _runs(daemon)
                )
                report = _latest(daemon)
                assert (4, "connect") == (
                    report["error_count"],
                    report["cases"][0]["error"]["kind"],
                )

        run_bounded(body)

    def test_errors_above_the_limit_make_the_run_incomplete(
        self, tmp_path: Path, endpoint: Endpoint, script: Script
    ) -> None:
        """Half the cases failing (limit 0.1): incomplete, gauges kept, error ratio 0.5."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as daemon:
                runner = daemon.jobs[0]
                assert "complete" == await runner.run()
                before = _quality(daemon)
                script.failing = {"q2", "q3"}
                assert "incomplete" == await runner.run()
                partial = _latest(daemon)
                assert 1.0 == partial["summary"]["recall_at_k"] != before["rag_eval_recall_at_k"]
                assert before == _quality(daemon)
                assert 0.5 == _sample(daemon, "rag_eval_error_ratio")
                assert 2.0 == _sample(daemon, "rag_eval_case_errors_total", kind="http_status")
                assert {"complete": 1.0, "incomplete": 1.0, "failed": 0.0, "skipped": 0.0} == (
                    _runs(daemon)
                )

        run_bounded(body)

    def test_errors_at_the_limit_still_complete(
        self, tmp_path: Path, endpoint: Endpoint, script: Script
    ) -> None:
        """One failure in four with a 0.25 limit is complete: gauges cover the scored cases."""
        script.failing = {"q3"}
        settings = _settings(tmp_path, endpoint.url, error_ratio_limit=0.25)

        async def body() -> None:
            async with running(settings) as daemon:
                assert "complete" == await daemon.jobs[0].run()
                report = _latest(daemon)
                assert (4, 3) == (report["case_count"], report["summary"]["scored_count"])
                assert _expected_quality(report) == _quality(daemon)
                assert 2 / 3 == pytest.approx(_sample(daemon, "rag_eval_answer_accuracy"))
                assert 0.25 == _sample(daemon, "rag_eval_error_ratio")

        run_bounded(body)


@pytest.mark.e2e
class TestDatasetReload:
    """A changed golden set is picked up at the next run; an invalid one is rejected."""

    def test_invalid_then_valid_replacement(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """An invalid set is counted and the old cases keep running; a valid one is picked up."""
        settings = _settings(tmp_path, endpoint.url)
        golden = tmp_path / "golden.jsonl"

        async def body() -> None:
            async with running(settings) as daemon:
                runner = daemon.jobs[0]
                assert "complete" == await runner.run()
                old_hash = _job_info(daemon)["dataset_hash"]
                assert 0.0 == _sample(daemon, "rag_eval_dataset_reload_errors_total")

                golden.write_text('{"id": "c0", "question": "q0"}\n{not json\n', "utf-8")
                endpoint.requests.clear()
                assert "complete" == await runner.run()
                assert 1.0 == _sample(daemon, "rag_eval_dataset_reload_errors_total")
                assert ["q0", "q1", "q2", "q3"] == sorted(endpoint.questions())
                assert ["c0", "c1", "c2", "c3"] == [c["id"] for c in _latest(daemon)["cases"]]
                assert old_hash == _job_info(daemon)["dataset_hash"]

                # the same invalid file is not counted again at every run
                assert "complete" == await runner.run()
                assert 1.0 == _sample(daemon, "rag_eval_dataset_reload_errors_total")

                _write_cases(golden, CASES[:2])
                endpoint.requests.clear()
                assert "complete" == await runner.run()
                assert ["q0", "q1"] == sorted(endpoint.questions())
                report = _latest(daemon)
                assert ["c0", "c1"] == [c["id"] for c in report["cases"]]
                info = _job_info(daemon)
                assert old_hash != info["dataset_hash"] == report["dataset_hash"]
                assert report["config_hash"] == info["config_hash"]
                assert 1.0 == _sample(daemon, "rag_eval_dataset_reload_errors_total")

        run_bounded(body)


@pytest.mark.e2e
class TestReports:
    """Reports on disk: retention, an unwritable folder, and restore after a restart."""

    def test_retention_keeps_the_last_n_and_latest(
        self, tmp_path: Path, endpoint: Endpoint
    ) -> None:
        """With reports_keep=2, four runs leave the last two reports plus latest.json."""
        settings = _settings(tmp_path, endpoint.url, reports_keep=2)

        async def body() -> None:
            async with running(settings) as daemon:
                run_ids = []
                for _ in range(4):
                    assert "complete" == await daemon.jobs[0].run()
                    run_ids.append(_latest(daemon)["run_id"])
                folder = daemon.jobs[0].store.folder
                files = sorted(p.name for p in folder.iterdir())
                assert 3 == len(files), files
                assert LATEST in files
                kept = {json.loads((folder / f).read_text("utf-8"))["run_id"] for f in files}
                assert set(run_ids[2:]) == kept
                assert run_ids[-1] == _latest(daemon)["run_id"]

        run_bounded(body)

    def test_unwritable_reports_dir(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """Writes fail (a file stands where a folder must be): counted, runs go on, served
        from memory; the gauges and freshness timestamps stay put (no report was written)."""
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("a regular file", "utf-8")
        settings = _settings(tmp_path, endpoint.url, reports_dir=blocker / "reports")

        async def body() -> None:
            async with running(settings) as daemon:
                runner = daemon.jobs[0]
                assert "complete" == await runner.run()
                assert 1.0 == _sample(daemon, "rag_eval_report_write_errors_total")
                assert "complete" == await runner.run()
                assert 2.0 == _sample(daemon, "rag_eval_report_write_errors_total")
                assert 2.0 == _sample(daemon, "rag_eval_runs_total", outcome="complete")
                assert runner.store.latest is not None
                async with httpx.AsyncClient() as client:
                    response = await client.get(
                        f"http://127.0.0.1:{daemon.http.port}/reports/latest"
                    )
                assert 200 == response.status_code
                assert runner.store.latest.run_id == response.json()["run_id"]
                assert all(v is None for v in _quality(daemon).values())
                assert _sample(daemon, "rag_eval_last_run_timestamp_seconds") is None
                assert 2.0 == _sample(daemon, "rag_eval_publish_errors_total", step="report")

        run_bounded(body)
        assert blocker.is_file()

    def test_restart_restores_gauges_from_latest(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """A new daemon on the same reports folder exports the last run's values at once."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as first:
                assert "complete" == await first.jobs[0].run()
                report = _latest(first)
                stamp = _sample(first, "rag_eval_last_run_timestamp_seconds")
            requests = len(endpoint.requests)
            async with running(settings) as second:
                assert _expected_quality(report) == _quality(second)
                assert 0.0 == _sample(second, "rag_eval_error_ratio")
                restored = _sample(second, "rag_eval_last_complete_run_timestamp_seconds")
                assert stamp is not None and restored is not None
                assert abs(stamp - restored) < 1.0
                assert report["duration_seconds"] == _sample(
                    second, "rag_eval_run_duration_seconds"
                )
                async with httpx.AsyncClient() as client:
                    response = await client.get(
                        f"http://127.0.0.1:{second.http.port}/reports/latest"
                    )
                served = response.json()
                # the history lists ride beside the report (restored from the store too)
                assert served.pop("history")["runs_in_window"] == 1
                assert (200, report) == (response.status_code, served)
                # restoring is not running: the counters start again at zero
                assert 0.0 == _sample(second, "rag_eval_runs_total", outcome="complete")
            assert requests == len(endpoint.requests)

        run_bounded(body)

    def test_restart_after_an_incomplete_run_keeps_the_complete_one(
        self, tmp_path: Path, endpoint: Endpoint, script: Script
    ) -> None:
        """Latest run incomplete: quality from the kept complete report, error ratio from latest."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as first:
                assert "complete" == await first.jobs[0].run()
                complete = _latest(first)
                stamp = _sample(first, "rag_eval_last_complete_run_timestamp_seconds")
                script.failing = {"q2", "q3"}
                assert "incomplete" == await first.jobs[0].run()
            async with running(settings) as second:
                assert _expected_quality(complete) == _quality(second)
                assert 0.5 == _sample(second, "rag_eval_error_ratio")
                restored = _sample(second, "rag_eval_last_complete_run_timestamp_seconds")
                assert stamp is not None and restored is not None
                assert abs(stamp - restored) < 1.0

        run_bounded(body)

    def test_restart_ignores_latest_of_another_golden_set(
        self, tmp_path: Path, endpoint: Endpoint
    ) -> None:
        """When the golden set changed while stopped, the old numbers are not restored."""
        settings = _settings(tmp_path, endpoint.url)

        async def body() -> None:
            async with running(settings) as first:
                assert "complete" == await first.jobs[0].run()
            _write_cases(tmp_path / "golden.jsonl", CASES[:2])
            async with running(settings) as second:
                assert dict.fromkeys(QUALITY) == _quality(second)
                assert _sample(second, "rag_eval_last_run_timestamp_seconds") is None

        run_bounded(body)


class TestStartErrors:
    """A bad configuration stops the daemon at start with a message naming the field."""

    @pytest.mark.e2e
    @pytest.mark.parametrize(
        ("cron", "needle"),
        [("61 * * * *", "61"), ("*/5 * * *", "expected 5 fields"), ("* * * * mon-xyz", "xyz")],
    )
    def test_invalid_cron_names_the_job(
        self, tmp_path: Path, endpoint: Endpoint, cron: str, needle: str
    ) -> None:
        """An invalid cron expression stops the configuration load, naming the job and the
        expression, before any daemon exists."""
        config = tmp_path / "evaluator.toml"
        config.write_text(
            f'[[targets]]\nname = "loop"\nurl = "{endpoint.url}"\n'
            f'[[jobs]]\ntarget = "loop"\ndataset = "golden.jsonl"\nname = "nightly"\n'
            f"cron = {json.dumps(cron)}\n"
        )
        with pytest.raises(ConfigError) as caught:
            load_settings(config)
        message = str(caught.value)
        assert "jobs.0" in message and repr(cron) in message and needle in message

    @pytest.mark.e2e
    def test_valid_cron_schedules_the_job(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """A valid cron expression starts, and its interval is exported."""
        settings = _settings(
            tmp_path, endpoint.url, job={"interval_seconds": None, "cron": "*/15 * * * *"}
        )

        async def body() -> None:
            async with running(settings) as daemon:
                assert 900.0 == _sample(daemon, "rag_eval_run_interval_seconds")

        run_bounded(body)

    @pytest.mark.e2e
    @pytest.mark.parametrize(
        ("listen", "needle"),
        [("localhost", "expected HOST:PORT"), ("127.0.0.1:99999", "expected HOST:PORT")],
    )
    def test_bad_listen_address(
        self, tmp_path: Path, endpoint: Endpoint, listen: str, needle: str
    ) -> None:
        """A listen address that is not HOST:PORT is a ConfigError naming it."""
        settings = _settings(tmp_path, endpoint.url, listen=listen)

        async def body() -> None:
            daemon = Daemon(settings)
            with pytest.raises(ConfigError, match=needle) as caught:
                await daemon.start()
            await daemon.stop()
            assert repr(listen) in str(caught.value)

        run_bounded(body)

    def test_no_job_configured(self, tmp_path: Path) -> None:
        """A daemon with nothing to run refuses to start."""

        async def body() -> None:
            daemon = Daemon(Settings(reports_dir=tmp_path))
            with pytest.raises(ConfigError, match="no job configured"):
                await daemon.start()

        run_bounded(body)

    @pytest.mark.parametrize(
        ("job_line", "field"),
        [
            ("interval_seconds = 0", "jobs.0.interval_seconds"),
            ("intervall = 5", "jobs.0.intervall"),
            ('target = "nowhere"', "jobs.0.target"),
        ],
    )
    def test_invalid_config_file_names_the_field(
        self, tmp_path: Path, job_line: str, field: str
    ) -> None:
        """load_settings rejects a bad [[jobs]] entry with a ConfigError naming the field."""
        golden = _write_cases(tmp_path / "golden.jsonl", CASES)
        target_line = "" if job_line.startswith("target") else 'target = "loop"\n'
        config = tmp_path / "evaluator.toml"
        config.write_text(
            f'[[targets]]\nname = "loop"\nurl = "http://127.0.0.1:9/rag"\n\n'
            f'[[jobs]]\n{target_line}dataset = "{golden}"\n{job_line}\n',
            "utf-8",
        )
        with pytest.raises(ConfigError) as caught:
            load_settings(config)
        assert field in str(caught.value)
        assert str(config) in str(caught.value)

    def test_invalid_environment_names_the_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An out-of-range environment override is a ConfigError naming field and variable."""
        monkeypatch.setenv("EVALUATOR_SHUTDOWN_GRACE_SECONDS", "-1")
        with pytest.raises(ConfigError) as caught:
            load_settings(None, {})
        message = str(caught.value)
        assert "shutdown_grace_seconds" in message
        assert "EVALUATOR_SHUTDOWN_GRACE_SECONDS" in message
