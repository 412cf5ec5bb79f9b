"""No secret leaves the process, in any encoding, whatever the endpoint echoes back.

A real ``evaluator serve`` (then ``run``, ``probe`` and a live ``gate``) calls an endpoint
that echoes every header and query value it received, in ten encodings, into the answer,
the ranked ids, the texts, the citations, the stage names, a 500's body and an invalid-JSON
body. Everything the processes let out is then searched for every form of every secret:
each report file and ``latest.json``, the history store, ``/reports/latest``, ``/metrics``,
the daemon's stdout and stderr, and each command's stdout, stderr and report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.hostile import HostileEndpoint
from tests.support.prometheus import DaemonProcess
from tests.support.secret_forms import leaked_forms

pytestmark = pytest.mark.e2e

TOKEN = "tok/5ecret+Zq81=xy"
KEY = "key-5ecret-77/ab"
SEARCH = "srch+5ecret/9=q"
ENV = {"RAG_TOKEN": TOKEN, "RAG_KEY": KEY, "SEARCH_KEY": SEARCH}
#: written in the config as they are: their names say they hold a secret
FUNCTIONS_KEY = "fnkey-5ecret&<q>-31"
SIG = "sig-5ecret/ZZ09"
SECRETS = {
    "token": TOKEN,
    "header": f"Bearer {TOKEN}",
    "key": KEY,
    "search": SEARCH,
    "functions-key": FUNCTIONS_KEY,
    "sig": SIG,
}
EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
CASES = [
    {"id": f"c{i}", "question": f"q{i}", "relevant_ids": ["d0"], "expected_facts": ["sent"]}
    for i in range(4)
]


def _config(tmp_path: Path, url: str) -> Path:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in CASES), "utf-8")
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f"""
reports_dir = "{tmp_path / "reports"}"
[[targets]]
name = "echo"
url = "{url}"
timeout_seconds = 5
retry = {{ retries = 0 }}
request.params = {{ api_key = "${{SEARCH_KEY}}", sig = "{SIG}" }}
[targets.request.headers]
Authorization = "Bearer ${{RAG_TOKEN}}"
"X-Api-Key" = "${{RAG_KEY}}"
"X-Functions-Key" = "{FUNCTIONS_KEY}"
[[jobs]]
target = "echo"
dataset = "{golden}"
interval_seconds = 0.5
""",
        "utf-8",
    )
    return config


def _files(folder: Path) -> dict[str, str]:
    """Every file the processes wrote (the test's own config, which holds secrets, aside)."""
    return {
        str(p): p.read_bytes().decode("latin-1")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "evaluator.toml"
    }


def _cli(args: list[str], tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    proc = subprocess.run(
        [EVALUATOR, *args],
        capture_output=True,
        env={**env, **ENV},
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    name = " ".join(args[:1])
    return {
        f"{name} stdout": proc.stdout.decode("utf-8", "replace"),
        f"{name} stderr": proc.stderr.decode("utf-8", "replace"),
    }


def test_no_secret_leaves_in_any_encoding(tmp_path: Path) -> None:
    """Secrets a target echoes never leave in any encoding through the reports, logs, gate
    outputs or probe output, though the target got them."""
    outputs: dict[str, str] = {}
    with HostileEndpoint("echo") as endpoint:
        config = _config(tmp_path, endpoint.url)
        reports = tmp_path / "reports"
        with DaemonProcess(["--config", str(config)], workdir=tmp_path, env=ENV) as daemon:
            daemon.wait_ready()
            deadline = time.monotonic() + 30
            while len(list(reports.rglob("2*.json"))) < 2:
                assert time.monotonic() < deadline, "no two reports in 30 s"
                time.sleep(0.1)
            outputs["/reports/latest"] = daemon.get("/reports/latest").text
            outputs["/metrics"] = daemon.get(
                "/metrics", headers={"Accept": "application/openmetrics-text"}
            ).text
            result = daemon.stop()
        outputs["serve stdout"] = daemon.stdout_path.read_text("utf-8", "replace")
        # the logs (stderr), the JSON events and whatever else landed there
        outputs["serve stderr"] = daemon.log_text() + result.stderr
        baseline = next(iter(sorted(reports.rglob("2*.json"))))
        outputs.update(_cli(["run", "--config", str(config), "--output", "run.json"], tmp_path))
        for question in ("q0", "q1", "q2"):
            probe = _cli(["probe", "--config", str(config), "--question", question], tmp_path)
            outputs.update({f"{k} {question}": v for k, v in probe.items()})
        # the baseline failed 2 of 3 cases by design: accepted, so the gate runs to its end
        gate = ["gate", "--config", str(config), "--baseline", str(baseline)]
        gate += ["--baseline-max-error-rate", "1"]
        outputs.update(_cli([*gate, "--output", "candidate.json", "--junit", "gate.xml"], tmp_path))
        outputs.update(_files(tmp_path / "reports"))
        outputs.update(_files(tmp_path))
        received = endpoint.request_headers
    leaks = {
        where: found for where, text in outputs.items() if (found := leaked_forms(text, SECRETS))
    }
    assert {} == leaks
    # the endpoint really got the credentials, and really echoed them
    assert any(h.get("Authorization") == f"Bearer {TOKEN}" for h in received)
    assert all((tmp_path / name).is_file() for name in ("run.json", "candidate.json", "gate.xml"))
    report = json.loads(outputs["/reports/latest"])
    assert "***" in report["cases"][0]["answer"]
    messages = " ".join(str(c["error"]) for c in report["cases"])
    assert "HTTP 500" in messages and "not valid JSON" in messages
    assert "probe stdout q0" in outputs and "***" in outputs["probe stdout q0"]
