"""``evaluator run --repeat`` and ``evaluator gate --repeat`` as subprocesses on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.e2e

CASES = ["steady1", "steady2", "steady3", "wobbly", "broke"]


class Script:
    """``wobbly`` passes every other call; ``broke`` fails once ``broken`` is set."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.order: list[str] = []
        self.broken = False
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        """The scripted answer to a case, the wobbly one wrong every other call and the broke
        one wrong once broken."""
        case = str(request["question"])
        with self.lock:
            self.calls[case] += 1
            self.order.append(case)
            n = self.calls[case]
        good = not (case == "wobbly" and n % 2 == 0) and not (case == "broke" and self.broken)
        answer = f"the fact of {case}" if good else "no idea"
        return Reply({"answer": answer, "retrieved": [{"id": f"doc-{case}"}]})


def _evaluator(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("evaluator")
    return subprocess.run(
        [str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def _golden(path: Path) -> Path:
    rows = [
        {"id": c, "question": c, "relevant_ids": [f"doc-{c}"], "expected_facts": [f"fact of {c}"]}
        for c in CASES
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def test_run_and_gate_with_repeats_and_a_quarantine(tmp_path: Path) -> None:
    """`run --repeat` and `gate` over a real service: repeat counts in the report, a flaky case told
    from a regression, a quarantined case left out and named."""
    golden = _golden(tmp_path / "golden.jsonl")
    script = Script()
    with LoopbackServer(script) as server:
        common = ["--dataset", str(golden), "--target-url", server.url, "--concurrency", "1"]
        base = _evaluator("run", *common, "--repeat", "4", "--output", "base.json", cwd=tmp_path)
        assert base.returncode == 0, base.stderr
        assert (
            "repeats: each case 4 times, interleaved; pass^1 0.900, pass^2 0.833, pass^4 0.800"
            in base.stdout
        )
        assert "flaky within this run (1): wobbly" in base.stdout
        # spread: no case is asked twice in a row
        assert all(a != b for a, b in zip(script.order, script.order[1:], strict=False))
        report = json.loads((tmp_path / "base.json").read_text("utf-8"))
        assert report["case_count"] == 5 and report["repeats"]["n"] == 4
        wobbly = next(c for c in report["repeats"]["cases"] if c["id"] == "wobbly")
        assert (wobbly["passes"], wobbly["judged"], wobbly["pass_rate"]) == (2, 4, 0.5)

        script.broken = True
        gate = [*common, "--baseline", "base.json", "--repeat", "4", "--output", "cand.json"]
        failed = _evaluator("gate", *gate, cwd=tmp_path)
        assert failed.returncode == 2, failed.stdout + failed.stderr
        assert "FAIL cases regressed beyond chance: 1: broke (4/4 -> 0/4" in failed.stdout
        assert "flaky (pass and fail within one report's repeats) (1): wobbly" in failed.stdout

        gates = tmp_path / "gates.toml"
        gates.write_text(
            "[rules.answer_accuracy]\nmax_drop = 0.0\n\n"
            '[quarantine]\ncases = ["broke"]\nflaky = true\n',
            "utf-8",
        )
        quarantined = _evaluator(
            "gate", "--baseline", "base.json", "--candidate", "cand.json", "--gates", str(gates),
            cwd=tmp_path,
        )  # fmt: skip
        assert quarantined.returncode == 0, quarantined.stdout + quarantined.stderr
        assert (
            "LEFT OUT of the hard rules (2): broke (quarantine), wobbly (flaky)"
            in quarantined.stdout
        )
        misuse = _evaluator(
            "gate", "--baseline", "base.json", "--candidate", "cand.json", "--repeat", "3",
            cwd=tmp_path,
        )  # fmt: skip
        assert misuse.returncode == 1 and "--repeat only apply without --candidate" in misuse.stderr
