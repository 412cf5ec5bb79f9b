"""The daemon's baseline gate: rag_eval_gate_passing mirrors `evaluator gate` after each run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.daemon import Daemon
from evaluator.daemon.baseline import BaselineGate
from evaluator.daemon.report_store import LATEST
from evaluator.errors import ConfigError
from tests.daemon.test_daemon import (
    Endpoint,
    Script,
    _runs,
    _sample,
    _settings,
    endpoint,
    script,
)
from tests.support.inprocess import run_bounded, running, until
from tests.support.records import record, report

__all__ = ["endpoint", "script"]  # fixtures, imported so pytest finds them here

GATES = """
[rules.recall_at_k]
max_drop = 0.0

[rules.error_rate]
max_growth = 0.0
"""


def _gate(daemon: Daemon) -> tuple[float | None, dict[str, float]]:
    failing: dict[str, float] = {}
    for family in daemon.registry.collect():
        for s in family.samples:
            if s.name == "rag_eval_gate_rule_failing":
                failing[s.labels["rule"]] = s.value
    return _sample(daemon, "rag_eval_gate_passing"), failing


def _baseline(tmp_path: Path, url: str) -> Path:
    """A first daemon's complete run, saved as the approved baseline."""
    settings = _settings(tmp_path, url, job={"run_at_start": True}, reports_dir=tmp_path / "b")

    async def body() -> None:
        async with running(settings) as daemon:
            await until(lambda: (_runs(daemon)["complete"] or 0) >= 1)
            shutil.copy(daemon.jobs[0].store.folder / LATEST, tmp_path / "baseline.json")

    run_bounded(body)
    return tmp_path / "baseline.json"


class TestBaselineGate:
    @pytest.mark.e2e
    def test_regression_fails_the_gate_per_rule(
        self, tmp_path: Path, endpoint: Endpoint, script: Script
    ) -> None:
        """More errors and lower recall than the baseline: gate 0, failing rules named."""
        baseline = _baseline(tmp_path, endpoint.url)
        (tmp_path / "gates.toml").write_text(GATES, "utf-8")
        script.failing = {"q0"}
        settings = _settings(
            tmp_path, endpoint.url, job={"run_at_start": True, "baseline": baseline},
            gates_file=tmp_path / "gates.toml", error_ratio_limit=0.5,
        )  # fmt: skip

        async def body() -> None:
            async with running(settings) as daemon:
                assert 0.75 == _sample(daemon, "rag_eval_baseline_ratio", metric="recall_at_k")
                await until(lambda: (_runs(daemon)["complete"] or 0) >= 1)
                passing, failing = _gate(daemon)
                assert 0.0 == passing
                assert {"recall_at_k.max_drop": 1.0, "error_rate.max_growth": 1.0} == failing

        run_bounded(body)

    @pytest.mark.e2e
    def test_same_quality_passes(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """A run as good as its baseline passes every rule."""
        baseline = _baseline(tmp_path, endpoint.url)
        (tmp_path / "gates.toml").write_text(GATES, "utf-8")
        settings = _settings(
            tmp_path, endpoint.url, job={"run_at_start": True, "baseline": baseline},
            gates_file=tmp_path / "gates.toml",
        )  # fmt: skip

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: (_runs(daemon)["complete"] or 0) >= 1)
                assert (1.0, {"recall_at_k.max_drop": 0.0, "error_rate.max_growth": 0.0}) == (
                    _gate(daemon)
                )

        run_bounded(body)

    @pytest.mark.e2e
    def test_a_shard_is_judged_on_its_own_cases(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """A shard lacks the other shards' cases by design: that alone never fails its gate."""
        baseline = _baseline(tmp_path, endpoint.url)
        (tmp_path / "gates.toml").write_text(GATES, "utf-8")
        settings = _settings(
            tmp_path, endpoint.url, job={"run_at_start": True, "baseline": baseline},
            gates_file=tmp_path / "gates.toml", shard_index=1, shard_count=2,
        )  # fmt: skip

        async def body() -> None:
            async with running(settings) as daemon:
                await until(lambda: (_runs(daemon)["complete"] or 0) >= 1)
                shard_cases = len(daemon.jobs[0].store.latest.cases)  # type: ignore[union-attr]
                assert 0 < shard_cases < 4
                assert 1.0 == _gate(daemon)[0]

        run_bounded(body)

    @pytest.mark.e2e
    def test_unreadable_baseline_stops_the_start(self, tmp_path: Path, endpoint: Endpoint) -> None:
        """A job whose baseline report is corrupt does not start: the file is named."""
        bad = tmp_path / "baseline.json"
        bad.write_text('{"schema_version": 1, "cases": [', "utf-8")
        settings = _settings(tmp_path, endpoint.url, job={"baseline": bad})

        async def body() -> None:
            daemon = Daemon(settings)
            try:
                with pytest.raises(ConfigError, match=str(bad)):
                    await daemon.start()
            finally:
                await daemon.stop()

        run_bounded(body)


def test_a_shards_baseline_holds_only_its_cases() -> None:
    """The baseline restricted to a shard's cases is a report of those cases, its summary
    derived from them (the report is a record: replaced as one)."""
    records = [record(f"q{i}") for i in range(4)]
    gate = BaselineGate(report(records), rules=(), source="baseline.json")
    shard = gate.for_cases(tuple(r.case for r in records[:2]), sharded=True)
    assert ["q0", "q1"] == [c.id for c in shard.cases]
    assert 2 == shard.summary.case_count
    assert gate.baseline is gate.for_cases((), sharded=False)
