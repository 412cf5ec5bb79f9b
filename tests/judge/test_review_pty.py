"""``evaluator review`` through a pseudo-terminal: labels appended as given, Ctrl-C loses
nothing, a second session resumes where the first stopped."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import msgspec
import pytest

from evaluator.judge.judged_pass import judge_report
from evaluator.judge.labels import read_labels
from evaluator.judge.panel import JudgePanel
from evaluator.judge.settings import JudgeConfig
from evaluator.report import write_report
from tests.judge.reports import golden
from tests.support.interrupts import reset_sigint
from tests.support.judges import LoopbackJudge

pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))


def _judged_report(path: Path, mode: str = "good") -> None:
    report = golden()
    with LoopbackJudge(mode) as judge:

        async def go() -> None:
            async with JudgePanel(JudgeConfig(url=judge.url, model="m")) as panel:
                judged = await judge_report(report, panel)
            write_report(msgspec.structs.replace(report, judge=judged.to_dict()), path)

        asyncio.run(go())


class Terminal:
    """A child process on a pseudo-terminal: what it printed, and keys to send it."""

    def __init__(self, *args: str) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the pty is its controlling terminal
            reset_sigint()  # a runner that ignores SIGINT must not make Ctrl-C a no-op
            os.execv(EXE, [EXE, *args])
        self.output = ""

    def expect(self, text: str, timeout: float = 30) -> None:
        """Read the child's output until ``text`` shows, failing after ``timeout`` seconds or at its
        end."""
        deadline = time.monotonic() + timeout
        while text not in self.output:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{text!r} not in output:\n{self.output}")
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} never came; output:\n{self.output}")
                self.output += chunk.decode(errors="replace")

    def send(self, keys: str) -> None:
        """Type ``keys`` into the terminal."""
        os.write(self.fd, keys.encode())

    def wait(self) -> int:
        """The child's exit code, once it ends."""
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


def test_review_labels_resumes_and_survives_ctrl_c(tmp_path: Path) -> None:
    """``evaluator review`` appends each label as given, asks again on a bad reply, loses nothing on
    Ctrl-C and resumes where it stopped."""
    report = tmp_path / "r.json"
    labels = tmp_path / "labels.jsonl"
    _judged_report(report)
    args = ("review", str(report), "--labels", str(labels), "--reviewer", "ann")

    term = Terminal(*args)
    term.expect("to review")
    term.expect("> ")
    term.send("p looks right\r")
    term.expect("[2/")
    term.send("x\r")  # not an answer: asked again
    term.expect("p, f, s or q, please")
    term.send("f\r")
    term.expect("[3/")
    term.send("\x03")  # Ctrl-C
    term.expect("stopped; 2 label(s) saved")
    assert term.wait() == 130
    first = read_labels(labels)
    assert len(first) == 2
    assert sorted(lb.verdict for lb in first.values()) == [False, True]
    assert {lb.reviewer for lb in first.values()} == {"ann"}
    assert any(lb.note == "looks right" for lb in first.values())

    term = Terminal(*args)
    term.expect("to review")
    total = int(term.output.split(" verdict(s) to review")[0].split()[-1])
    term.expect("> ")
    term.send("q\r")
    assert term.wait() == 0
    assert total == 9 - 2  # 4 fact support + 4 groundedness + 1 refusal, 2 labelled already


def test_a_disagreement_with_the_deterministic_check_comes_first(tmp_path: Path) -> None:
    """A verdict on which the judge and the deterministic check disagree is reviewed first, with
    both shown."""
    report = tmp_path / "r.json"
    # a judge that passes everything disagrees with the deterministic check on "wrong"
    _judged_report(report, mode="fooled")
    term = Terminal("review", str(report), "--labels", str(tmp_path / "l.jsonl"))
    term.expect("> ")
    first = term.output.split("[1/")[1]
    assert "case wrong  check fact_support" in first
    assert "judge: pass" in first and "deterministic check: fail" in first
    assert "fact 1: 5 business days" in first
    os.kill(term.pid, signal.SIGINT)
    term.expect("stopped; 0 label(s) saved")
    assert term.wait() == 130


def test_facts_are_highlighted_in_the_answer(tmp_path: Path) -> None:
    """On a terminal the expected facts are highlighted in the answer as the case view marks
    them."""
    report = tmp_path / "r.json"
    _judged_report(report)
    term = Terminal("review", str(report), "--labels", str(tmp_path / "l.jsonl"))
    term.expect("> ")
    # a terminal: the fact in bold green, as the case view marks it
    assert "\x1b[1;32m5 business days\x1b[0m" in term.output
    term.send("q\r")
    assert term.wait() == 0


def test_the_labels_folder_is_created_and_the_label_kept(tmp_path: Path) -> None:
    """A labels file in a folder that does not exist yet: the folder is made before the
    first question, and the label given is saved there (it used to be lost to a crash)."""
    report = tmp_path / "r.json"
    _judged_report(report)
    labels = tmp_path / "evals" / "labels" / "new.jsonl"
    term = Terminal("review", str(report), "--labels", str(labels), "--limit", "1")
    term.expect("> ")
    term.send("p\r")
    term.expect("1 label(s) saved")
    assert 0 == term.wait()
    assert [True] == [lb.verdict for lb in read_labels(labels).values()]


def test_an_unwritable_labels_path_is_refused_before_the_first_question(tmp_path: Path) -> None:
    """A labels path whose folder cannot be made (a file stands where the folder would):
    refused at once, naming the path, before any verdict is shown."""
    report = tmp_path / "r.json"
    _judged_report(report)
    (tmp_path / "evals").write_text("a file, not a folder", encoding="utf-8")
    labels = tmp_path / "evals" / "labels.jsonl"
    term = Terminal("review", str(report), "--labels", str(labels))
    term.expect("evaluator: error:")
    code = term.wait()
    assert 1 == code
    assert "[1/" not in term.output
    assert f"cannot write labels to {labels}" in term.output


def test_a_label_that_cannot_be_written_is_shown_not_lost(tmp_path: Path) -> None:
    """The labels file turns unwritable mid-review (a folder put in its place): the review
    stops, prints the label's line so it can be added by hand, and exits 1."""
    report = tmp_path / "r.json"
    _judged_report(report)
    labels = tmp_path / "labels.jsonl"
    term = Terminal("review", str(report), "--labels", str(labels), "--reviewer", "ann")
    term.expect("> ")
    labels.unlink()
    labels.mkdir()  # whatever happened to the file, the next append cannot succeed
    term.send("f wrong date\r")
    term.expect("not saved")
    assert 1 == term.wait()
    assert '"note": "wrong date"' in term.output and '"reviewer": "ann"' in term.output
