"""deploy/compose/alertmanager.yml: amtool accepts it, and a real Alertmanager inhibits as meant.

The label sets posted are the ones the rules produce, taken from the promtool unit tests'
expected alerts (deploy/prometheus/tests/), so a rule that changes its labels breaks the
inhibition test, not only the rule test. Alertmanager (Debian prometheus-alertmanager)
listens on loopback with gossip off; .ci/run installs it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.deploy.deploy_support import DEPLOY, RULE_TESTS, alerting_rules, load_yaml
from tests.support.ports import free_port

CONFIG = DEPLOY / "compose" / "alertmanager.yml"
ALERT_NAMES = {rule["alert"] for rule in alerting_rules()}


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"{name} is missing: CI must install the Debian package prometheus-alertmanager"
            )
        pytest.skip(f"{name} is not installed (Debian package prometheus-alertmanager)")
    return path


def _tested_labels() -> dict[str, dict[str, str]]:
    """alertname -> the labels of one alert the promtool tests expect it to fire with."""
    found: dict[str, dict[str, str]] = {}
    for path in RULE_TESTS:
        for test in load_yaml(path)["tests"]:
            for case in test.get("alert_rule_test", []):
                for alert in case.get("exp_alerts") or []:
                    labels = {k: str(v) for k, v in alert["exp_labels"].items()}
                    found.setdefault(case["alertname"], {"alertname": case["alertname"], **labels})
    return found


LABELS = _tested_labels()


def _matches(matchers: list[str], labels: dict[str, str]) -> bool:
    for matcher in matchers:
        name, op, value = re.fullmatch(r'(\w+)\s*(=~|!~|!=|=)\s*"(.*)"', matcher).groups()  # type: ignore[union-attr]
        actual = labels.get(name, "")
        ok = {
            "=": actual == value,
            "!=": actual != value,
            "=~": re.fullmatch(value, actual) is not None,
            "!~": re.fullmatch(value, actual) is None,
        }[op]
        if not ok:
            return False
    return True


@pytest.mark.e2e
def test_amtool_accepts_the_config() -> None:
    """Alertmanager's own checker (amtool check-config) accepts the shipped configuration."""
    amtool = _binary("amtool")
    done = subprocess.run(
        [amtool, "check-config", str(CONFIG)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_tested_labels() -> None:
    """Every alert of the rules has its labels listed here, so each is routed in a test."""
    assert set(LABELS) == ALERT_NAMES


def test_inhibit_rules_can_match_the_alerts_they_name() -> None:
    """Every `equal` label is on each source and target alert the rule selects: the old
    `equal: [job, instance]` never matched the alerts built on recording rules."""
    config = load_yaml(CONFIG)
    for rule in config["inhibit_rules"]:
        sources = [n for n, lab in LABELS.items() if _matches(rule["source_matchers"], lab)]
        targets = [n for n, lab in LABELS.items() if _matches(rule["target_matchers"], lab)]
        assert sources and targets, rule
        for name in sources + targets:
            missing = set(rule.get("equal", [])) - set(LABELS[name])
            assert not missing, f"{name} lacks {missing}: the inhibition never applies"


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    """A fresh Alertmanager per test: alerts posted by one test do not inhibit another's."""
    binary = _binary("prometheus-alertmanager")
    root = tmp_path
    port = free_port()
    log = (root / "alertmanager.log").open("wb")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={CONFIG}",
            f"--storage.path={root}",
            f"--web.listen-address=127.0.0.1:{port}",
            # one replica: no gossip (it would need a private address)
            "--cluster.listen-address=",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (
                root / "alertmanager.log"
            ).read_text()
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _post(url: str, alerts: list[dict[str, str]]) -> None:
    now = datetime.now(UTC)
    body: list[dict[str, Any]] = [
        {
            "labels": labels,
            "annotations": {"summary": "test"},
            "startsAt": now.isoformat(),
            "endsAt": (now + timedelta(hours=1)).isoformat(),
        }
        for labels in alerts
    ]
    assert httpx.post(f"{url}/api/v2/alerts", json=body, timeout=10).status_code == 200


def _inhibited(url: str, alertname: str, **labels: str) -> bool:
    """Whether Alertmanager marks the alert inhibited (inhibition is computed on read)."""
    deadline = time.monotonic() + 15
    while True:
        alerts = [
            a
            for a in httpx.get(f"{url}/api/v2/alerts", timeout=10).json()
            if a["labels"]["alertname"] == alertname
            and all(a["labels"].get(k) == v for k, v in labels.items())
        ]
        if alerts:
            (alert,) = alerts
            return bool(alert["status"]["inhibitedBy"])
        assert time.monotonic() < deadline, f"{alertname} {labels} never arrived"
        time.sleep(0.2)


def _with(alertname: str, **labels: str) -> dict[str, str]:
    return {**LABELS[alertname], **labels}


@pytest.mark.e2e
def test_evaluator_down_inhibits_the_aggregated_alerts(alertmanager: str) -> None:
    """A real Alertmanager: while the evaluator is down, the quality alerts it would cause are
    inhibited."""
    _post(
        alertmanager,
        [
            _with("RagEvalEvaluatorDown"),
            _with("RagEvalAnswerAccuracyDrop", dataset="down-set"),
            _with("RagEvalShardMissing", dataset="down-set"),
            _with("RagEvalResultsStale", dataset="down-set"),
            _with("RagEvalLatencyP95Up", dataset="down-set"),
        ],
    )
    for name in (
        "RagEvalAnswerAccuracyDrop",
        "RagEvalShardMissing",
        "RagEvalResultsStale",
        "RagEvalLatencyP95Up",
    ):
        assert _inhibited(alertmanager, name, dataset="down-set"), name
    assert not _inhibited(alertmanager, "RagEvalEvaluatorDown")


@pytest.mark.e2e
def test_missing_shard_and_stale_results_inhibit_only_their_golden_set(alertmanager: str) -> None:
    """A missing shard or stale results inhibit the quality alerts of their own golden set only, not
    another's."""
    url = alertmanager
    _post(
        url,
        [
            _with("RagEvalShardMissing", dataset="sharded"),
            _with("RagEvalRecallDrop", dataset="sharded"),
            _with("RagEvalRecallDrop", dataset="other"),
            _with("RagEvalResultsStale", dataset="stale"),
            _with("RagEvalGateFailing", dataset="stale"),
            _with("RagEvalStageLatencyP95Up", dataset="stale"),
            _with("RagEvalRunsFailing", dataset="stale"),
        ],
    )
    assert _inhibited(url, "RagEvalRecallDrop", dataset="sharded")
    assert not _inhibited(url, "RagEvalRecallDrop", dataset="other")
    assert _inhibited(url, "RagEvalGateFailing", dataset="stale")
    assert _inhibited(url, "RagEvalStageLatencyP95Up", dataset="stale")
    # a cause of stale results is not hidden by them
    assert not _inhibited(url, "RagEvalRunsFailing", dataset="stale")
    assert not _inhibited(url, "RagEvalShardMissing", dataset="sharded")
