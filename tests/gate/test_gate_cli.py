"""`evaluator gate` as a pipeline runs it: its exit code, stdout and stderr.

Most cases call the CLI's ``main`` in process (the same code path, without a Python start
per case); :class:`TestAsAProcess` and :class:`TestLiveCandidate` run real subprocesses.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from evaluator.cli import main
from tests.gate.factories import (
    EXERCISE_BASELINE,
    EXERCISE_CANDIDATE,
    record,
    report,
    summary_report,
    write,
)
from tests.support.loopback import LoopbackServer, Reply
from tests.support.ports import free_port

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

EVALUATOR = Path(sys.executable).with_name("evaluator")


def _gate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``evaluator gate`` in ``cwd`` (no config/ there: built-in rules, no config file), in
    process: ``main``'s exit code and what it printed (the autouse fixture strips
    ``EVALUATOR_*`` from the environment)."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["gate", *args]
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # --help
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _gate_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``evaluator gate`` as a pipeline starts it: a process of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    return subprocess.run(
        [str(EVALUATOR), "gate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _pair(
    tmp_path: Path, baseline: Mapping[str, Any], candidate: Mapping[str, Any]
) -> tuple[str, str]:
    return (
        str(write(tmp_path / "baseline.json", baseline)),
        str(write(tmp_path / "candidate.json", candidate)),
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """Exit 1 with exactly one line on stderr and no traceback."""
    assert 1 == proc.returncode, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert 1 == len(lines), proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("evaluator: error: ")
    return lines[0]


class TestExercise:
    """The gate exercise, end to end."""

    def test_three_failures_and_diagnosis(self, tmp_path: Path) -> None:
        """Exit 2; exactly MRR, citation precision and P95 fail; the diagnosis says where."""
        b, c = _pair(
            tmp_path, summary_report(EXERCISE_BASELINE), summary_report(EXERCISE_CANDIDATE)
        )
        proc = _gate("--baseline", b, "--candidate", c, cwd=tmp_path)
        assert 2 == proc.returncode, proc.stderr
        assert "" == proc.stderr
        fails = [line for line in proc.stdout.splitlines() if line.startswith("FAIL ")]
        assert [
            "FAIL mrr: baseline 0.7600, candidate 0.7400, difference -0.0200; "
            "rule: may drop at most 0.01",
            "FAIL citation_precision: baseline 0.9800, candidate 0.9600, difference -0.0200; "
            "rule: may drop at most 0.01",
            "FAIL p95_seconds: baseline 2.000s, candidate 2.800s, difference +800.00ms (+40.0%); "
            "rule: may grow at most 20% (growth up to 50.00ms is noise)",
        ] == fails
        assert proc.stdout.startswith("gate FAILED: 3 of 6 rules failed\n")
        assert "recall +0.020, MRR -0.020: look at fusion or rerank" in proc.stdout
        assert (
            "accuracy +0.030, citation precision -0.020: look at citation protocol or checking"
            in proc.stdout
        )

    def test_json_exercise(self, tmp_path: Path) -> None:
        """--format json: stdout is one JSON document with every rule and the diagnosis."""
        b, c = _pair(
            tmp_path, summary_report(EXERCISE_BASELINE), summary_report(EXERCISE_CANDIDATE)
        )
        proc = _gate("--baseline", b, "--candidate", c, "--format", "json", cwd=tmp_path)
        assert 2 == proc.returncode
        data = json.loads(proc.stdout)
        failed = [r["name"] for r in data["rules"] if r["status"] == "fail"]
        assert [
            "mrr.max_drop",
            "citation_precision.max_drop",
            "p95_seconds.max_relative_growth",
        ] == (failed)
        assert 6 == len(data["rules"])
        assert ["rerank", "citation", "latency"] == [d["area"] for d in data["diagnosis"]]


class TestBoundaries:
    """Exactly the allowance passes; a hair beyond fails."""

    @pytest.mark.parametrize(("p95", "code"), [(2.4, 0), (2.41, 2)])
    def test_allowance(self, tmp_path: Path, p95: float, code: int) -> None:
        """MRR .76 -> .75 (drop of exactly .01) passes; P95 2.0 -> 2.4 passes, -> 2.41 fails."""
        base = {**EXERCISE_BASELINE}
        cand = {**EXERCISE_BASELINE, "mrr": 0.75, "p95_seconds": p95}
        b, c = _pair(tmp_path, summary_report(base), summary_report(cand))
        proc = _gate("--baseline", b, "--candidate", c, cwd=tmp_path)
        assert code == proc.returncode, proc.stdout
        assert "pass mrr: baseline 0.7600, candidate 0.7500" in proc.stdout


class TestComparability:
    """Different golden sets or K: exit 1 with the reason, unless the change is allowed."""

    def _reports(self, tmp_path: Path, *, k: int = 5) -> tuple[str, str]:
        b = report([record("a"), record("b"), record("gone")], dataset_hash="old")
        c = report([record("a"), record("b"), record("new")], dataset_hash="new", k=k)
        return _pair(tmp_path, _dict(b), _dict(c))

    def test_different_golden_set(self, tmp_path: Path) -> None:
        """Refused in one line that names the flag."""
        b, c = self._reports(tmp_path)
        line = _one_error_line(_gate("--baseline", b, "--candidate", c, cwd=tmp_path))
        assert "different golden sets" in line and "--allow-dataset-change" in line

    def test_different_k(self, tmp_path: Path) -> None:
        """Refused even with --allow-dataset-change."""
        b, c = self._reports(tmp_path, k=10)
        proc = _gate("--baseline", b, "--candidate", c, "--allow-dataset-change", cwd=tmp_path)
        assert "different K (baseline K=5, candidate K=10)" in _one_error_line(proc)

    def test_allowed_change(self, tmp_path: Path) -> None:
        """Compares the shared cases and lists the removed and added ones."""
        b, c = self._reports(tmp_path)
        proc = _gate("--baseline", b, "--candidate", c, "--allow-dataset-change", cwd=tmp_path)
        assert 0 == proc.returncode, proc.stdout + proc.stderr
        assert "golden set changed: comparing the 2 shared case(s)" in proc.stdout
        assert "  removed (1): gone" in proc.stdout
        assert "  added (1): new" in proc.stdout


def _dict(r: Any) -> dict[str, Any]:
    from evaluator.report import report_to_dict

    return report_to_dict(r)


class TestCases:
    """A candidate missing a baseline case fails the gate."""

    def test_missing_case(self, tmp_path: Path) -> None:
        """Exit 2, naming the case, although every rule passes."""
        b = report([record("a"), record("b")])
        c = report([record("a")])
        bp, cp = _pair(tmp_path, _dict(b), _dict(c))
        proc = _gate("--baseline", bp, "--candidate", cp, cwd=tmp_path)
        assert 2 == proc.returncode
        assert "FAIL cases: candidate lacks 1 baseline case(s): b" in proc.stdout
        assert 1 == sum(line.startswith("FAIL ") for line in proc.stdout.splitlines())


class TestBadInput:
    """Corrupt, truncated or missing reports and bad gates files: exit 1, one line."""

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (None, "cannot read report"),
            (b"", "not valid JSON (truncated or corrupt?)"),
            (b"\x00\xff garbage", "not valid JSON (truncated or corrupt?)"),
            (b"[1, 2]", "not a report"),
            (b'{"schema_version": 1, "cases": []}', "field 'run_id' is missing"),
        ],
    )
    def test_corrupt_candidate(self, tmp_path: Path, content: bytes | None, message: str) -> None:
        """The message names the file and what is wrong with it."""
        b = str(write(tmp_path / "baseline.json", _dict(report([record("a")]))))
        cand = tmp_path / "candidate.json"
        if content is not None:
            cand.write_bytes(content)
        line = _one_error_line(_gate("--baseline", b, "--candidate", str(cand), cwd=tmp_path))
        assert str(cand) in line and message in line

    def test_truncated_baseline(self, tmp_path: Path) -> None:
        """A report cut in half (a crashed copy) is reported, not a traceback."""
        full = json.dumps(_dict(report([record("a"), record("b")])))
        base = tmp_path / "baseline.json"
        base.write_text(full[: len(full) // 2])
        c = str(write(tmp_path / "candidate.json", _dict(report([record("a"), record("b")]))))
        line = _one_error_line(_gate("--baseline", str(base), "--candidate", c, cwd=tmp_path))
        assert "baseline.json: not valid JSON (truncated or corrupt?)" in line

    def test_bad_gates_file(self, tmp_path: Path) -> None:
        """An unknown key in the gates file: one line naming the file and the key."""
        gates = tmp_path / "gates.toml"
        gates.write_text("[rules.mrr]\nmax_dorp = 0.01\n")
        b, c = _pair(tmp_path, _dict(report([record("a")])), _dict(report([record("a")])))
        proc = _gate("--baseline", b, "--candidate", c, "--gates", str(gates), cwd=tmp_path)
        assert f"{gates}: rules.mrr.max_dorp: unknown key" in _one_error_line(proc)

    @pytest.mark.parametrize(
        ("table", "key"),
        [
            ('[judged.judged_fact_recall]\nmin = "high"\n', "judged.judged_fact_recall.min"),
            ("[baseline]\nmax_error_rate = 2\n", "baseline.max_error_rate"),
        ],
    )
    def test_a_bad_table_beside_the_rules_stops_the_gate_before_any_output(
        self, tmp_path: Path, table: str, key: str
    ) -> None:
        """The gates file is read and parsed once, before anything is judged: a bad
        [judged.*] table no longer lets the verdict and its files be written first, and a
        bad [baseline] table is refused even when the flag sets the ceiling."""
        gates = tmp_path / "gates.toml"
        gates.write_text("[rules.mrr]\nmax_drop = 0.5\n" + table)
        junit = tmp_path / "junit.xml"
        b, c = _pair(tmp_path, _dict(report([record("a")])), _dict(report([record("a")])))
        proc = _gate(
            "--baseline", b, "--candidate", c, "--gates", str(gates), "--junit", str(junit),
            "--baseline-max-error-rate", "0.5", cwd=tmp_path,
        )  # fmt: skip
        assert f"{gates}: {key}" in _one_error_line(proc)
        assert ("", False) == (proc.stdout, junit.exists())

    def test_gates_file_from_config(self, tmp_path: Path) -> None:
        """config/gates.toml in the working directory replaces the defaults."""
        (tmp_path / "config").mkdir()
        (tmp_path / "config" / "gates.toml").write_text("[rules.mrr]\nmax_drop = 0.5\n")
        b, c = _pair(
            tmp_path, summary_report(EXERCISE_BASELINE), summary_report(EXERCISE_CANDIDATE)
        )
        proc = _gate("--baseline", b, "--candidate", c, cwd=tmp_path)
        assert 0 == proc.returncode, proc.stdout
        assert "rules: config/gates.toml" in proc.stdout

    def test_live_flags_with_candidate(self, tmp_path: Path) -> None:
        """--dataset and friends with --candidate are a usage error (exit 1, not 2)."""
        b, c = _pair(tmp_path, _dict(report([record("a")])), _dict(report([record("a")])))
        proc = _gate("--baseline", b, "--candidate", c, "--dataset", "x.jsonl", cwd=tmp_path)
        assert "--dataset only apply without --candidate" in _one_error_line(proc)

    def test_missing_baseline_flag(self, tmp_path: Path) -> None:
        """No --baseline: exit 1, not argparse's 2."""
        c = str(write(tmp_path / "candidate.json", _dict(report([record("a")]))))
        assert "--baseline FILE is required" in _one_error_line(
            _gate("--candidate", c, cwd=tmp_path)
        )


class TestOutputs:
    """--junit and --pushgateway alongside the text output."""

    def test_junit_and_markdown(self, tmp_path: Path) -> None:
        """The JUnit file has one test case per rule; Markdown goes to stdout."""
        b, c = _pair(
            tmp_path, summary_report(EXERCISE_BASELINE), summary_report(EXERCISE_CANDIDATE)
        )
        junit = tmp_path / "out" / "gate.xml"
        proc = _gate(
            "--baseline", b, "--candidate", c, "--junit", str(junit), "--format", "markdown",
            cwd=tmp_path,
        )  # fmt: skip
        assert 2 == proc.returncode
        assert proc.stdout.startswith("## ❌ Release gate")
        root = ET.parse(junit).getroot()
        assert 7 == len(root.findall("./testsuite/testcase"))  # 6 rules + cases.complete
        assert "3" == root.get("failures")

    def test_push_failure_does_not_change_verdict(self, tmp_path: Path) -> None:
        """An unreachable Pushgateway is a warning; the exit code is still the verdict."""
        port = free_port()
        b, c = _pair(tmp_path, _dict(report([record("a")])), _dict(report([record("a")])))
        proc = _gate(
            "--baseline", b, "--candidate", c, "--pushgateway", f"http://127.0.0.1:{port}",
            cwd=tmp_path,
        )  # fmt: skip
        assert 0 == proc.returncode
        assert proc.stderr.startswith("evaluator: warning: cannot push to the Pushgateway")

    def test_significance_named(self, tmp_path: Path) -> None:
        """--significance is reflected in the output."""
        b, c = _pair(tmp_path, _dict(report([record("a")])), _dict(report([record("a")])))
        proc = _gate("--baseline", b, "--candidate", c, "--significance", cwd=tmp_path)
        assert 0 == proc.returncode
        assert "mode: significance" in proc.stdout


GOLDEN = [
    {"id": "g1", "question": "q1", "relevant_ids": ["d1"], "expected_facts": ["seven days"]},
    {"id": "g2", "question": "q2", "relevant_ids": ["d2"], "expected_facts": ["receipt"]},
    {"id": "g3", "question": "q3", "relevant_ids": ["d3"], "expected_facts": ["free"]},
]


def _answers(good: bool) -> dict[str, Reply]:
    """Each question answered right; with ``good=False`` q2's evidence drops to rank 2."""
    facts = {"q1": "seven days", "q2": "receipt", "q3": "free"}
    replies = {}
    for n, (q, fact) in enumerate(facts.items(), start=1):
        ranked = [f"d{n}"] if good or q != "q2" else ["x", f"d{n}"]
        replies[q] = Reply(
            body={
                "answer": f"It is {fact}.",
                "retrieved": [{"id": i} for i in ranked],
                "citations": [ranked.index(f"d{n}") + 1],
            }
        )
    return replies


@pytest.mark.e2e
class TestAsAProcess:
    """The process a pipeline sees: the exit code, and one stderr line with no traceback."""

    def test_failed_gate_exits_2(self, tmp_path: Path) -> None:
        """A failed gate is exit 2, with the verdict on stdout."""
        b, c = _pair(
            tmp_path, summary_report(EXERCISE_BASELINE), summary_report(EXERCISE_CANDIDATE)
        )
        proc = _gate_process("--baseline", b, "--candidate", c, cwd=tmp_path)
        assert 2 == proc.returncode, proc.stderr
        assert "verdict: FAIL (exit 2)" in proc.stdout

    def test_unreadable_report_is_one_line(self, tmp_path: Path) -> None:
        """A missing baseline: exit 1, one line on stderr, no traceback."""
        _, c = _pair(tmp_path, summary_report(EXERCISE_BASELINE), summary_report(EXERCISE_BASELINE))
        proc = _gate_process(
            "--baseline", str(tmp_path / "absent.json"), "--candidate", c, cwd=tmp_path
        )
        assert "absent.json" in _one_error_line(proc)


@pytest.mark.e2e
class TestLiveCandidate:
    """Without --candidate the configured job runs now, against a real loopback endpoint."""

    def _golden(self, tmp_path: Path) -> Path:
        path = tmp_path / "golden.jsonl"
        path.write_text("\n".join(json.dumps(c) for c in GOLDEN) + "\n", encoding="utf-8")
        return path

    def _gates(self, tmp_path: Path) -> str:
        """The default rules without P95: loopback latency of 3 cases is noise."""
        path = tmp_path / "gates.toml"
        path.write_text(
            "[rules.recall_at_k]\nmax_drop = 0\n[rules.mrr]\nmax_drop = 0.01\n"
            "[rules.answer_accuracy]\nmax_drop = 0\n[rules.error_rate]\nmax_growth = 0\n"
        )
        return str(path)

    def test_runs_writes_and_judges(self, tmp_path: Path) -> None:
        """A baseline from `evaluator run`, a worse live candidate: report written, exit 2."""
        golden = self._golden(tmp_path)
        gates = self._gates(tmp_path)
        baseline = tmp_path / "baseline.json"
        with LoopbackServer(_answers(good=True)) as server:
            run = subprocess.run(
                [str(EVALUATOR), "run", "--dataset", str(golden), "--target-url", server.url,
                 "--output", str(baseline)],
                cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert 0 == run.returncode, run.stderr
            same = _gate(
                "--baseline", str(baseline), "--dataset", str(golden), "--target-url",
                server.url, "--output", str(tmp_path / "same.json"), "--gates", gates,
                cwd=tmp_path,
            )  # fmt: skip
        assert 0 == same.returncode, same.stdout + same.stderr
        with LoopbackServer(_answers(good=False)) as server:
            worse = _gate(
                "--baseline", str(baseline), "--dataset", str(golden), "--target-url",
                server.url, "--output", str(tmp_path / "cand.json"), "--gates", gates,
                cwd=tmp_path,
            )  # fmt: skip
        assert 2 == worse.returncode, worse.stdout + worse.stderr
        assert f"candidate report: {tmp_path / 'cand.json'}" in worse.stderr
        assert json.loads((tmp_path / "cand.json").read_text())["case_count"] == 3
        assert "FAIL mrr: baseline 1.0000, candidate 0.8333" in worse.stdout
        assert "  g2: RR 1.00 → 0.50" in worse.stdout

    def test_k_mismatch_fails_before_running(self, tmp_path: Path) -> None:
        """A K the baseline was not run with is refused before any call to the target."""
        golden = self._golden(tmp_path)
        baseline = str(write(tmp_path / "b.json", _dict(report([record("a")], k=5))))
        with LoopbackServer(_answers(good=True)) as server:
            proc = _gate(
                "--baseline", baseline, "--dataset", str(golden), "--target-url", server.url,
                "--k", "3", cwd=tmp_path,
            )  # fmt: skip
            assert [] == server.requests
        assert "different K (baseline K=5, candidate K=3)" in _one_error_line(proc)
