"""``evaluator review REPORT [--labels FILE] [--reviewer NAME] [--overlap N]``: label the
judge's verdicts in the terminal.

Walks the reviewer through the judged checks of a report (disagreements with the
deterministic check first, then a stratified sample), showing question, expected facts
(highlighted in the answer as the case view does), answer, evidence and the judge's
verdict. Each label is appended to the labels file as it is given: Ctrl-C or end of input
loses nothing, and running it again resumes where it stopped. The labels file's folder is
made, and the file opened for appending, before the first question (a path that cannot be
written is refused then, not after a label was given); a label whose write fails is printed
with the reason, for the reviewer to keep.

``--overlap N`` gives a second reviewer N answers a first one labelled, without that label,
the judge's verdict or the deterministic check: the two reviewers' agreement is the check's
human ceiling, which ``evaluator calibrate`` reports beside the judge's.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluator.border import printable
from evaluator.commands.flags import CommonOptions
from evaluator.errors import ConfigError, ExitCode
from evaluator.judge.checks import check as judged_check
from evaluator.judge.derived import judged_of
from evaluator.judge.labels import Label, append_label, now, read_labels, read_reviews
from evaluator.judge.record import JudgedRun
from evaluator.judge.review import ReviewItem, overlap_queue, review_queue
from evaluator.models import CaseRecord
from evaluator.pages.highlight import segments
from evaluator.report import read_report

__all__ = ["Options", "configure", "handle"]

_EVIDENCE_SHOWN = 3
_EVIDENCE_CHARS = 400


@dataclass(frozen=True)
class Options(CommonOptions):
    report: str
    labels: str | None
    reviewer: str | None
    limit: int | None
    overlap: int | None = None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT", help="a judged run report")
    parser.add_argument(
        "--labels", metavar="FILE", help="labels file (JSONL; default REPORT's folder/labels.jsonl)"
    )
    parser.add_argument("--reviewer", metavar="NAME", help="your name (default: the login name)")
    parser.add_argument("--limit", type=int, metavar="N", help="stop after N labels")
    parser.add_argument(
        "--overlap",
        type=int,
        metavar="N",
        help="label N answers another reviewer labelled, shown without their label or the "
        "judge's verdict (the reviewers' agreement is evaluator calibrate's human ceiling)",
    )


def _highlighted(text: str, facts: tuple[tuple[str, ...], ...], bold: bool) -> str:
    """``text`` with the facts found in it marked, every piece of it :func:`printable` (the
    target's text cannot clear the screen nor start a line of its own); the marks are ours."""
    pieces = [(printable(s.text), s.fact is not None) for s in segments(text, facts)]
    if not bold:
        return "".join(f"[{t}]" if fact else t for t, fact in pieces)
    return "".join(f"\x1b[1;32m{t}\x1b[0m" if fact else t for t, fact in pieces)


def _show_conversation(earlier: Sequence[CaseRecord]) -> None:
    """The turns before a conversation's turn, as the judge was given them: each question
    and the answer to it (cut, one line each)."""
    if not earlier:
        return
    print("conversation so far:")
    for turn in earlier:
        place = turn.case.turn
        position = place.position if place is not None else 0
        print(f"  #{position} user: {printable(turn.case.question)}")
        if turn.answer is not None:
            answer = " ".join(turn.answer.split())[:_EVIDENCE_CHARS]
            print(f"     assistant: {printable(answer)}")


def _show_case(record: CaseRecord, colour: bool) -> None:
    """The case as the judge saw it: question, expected facts, the answer and the evidence
    that came back, the facts highlighted."""
    case = record.case
    print(f"question: {printable(case.question)}")
    for i, alternatives in enumerate(case.expected_facts, start=1):
        print(f"  fact {i}: {printable(' | '.join(alternatives))}")
    if case.unanswerable:
        print("  (unanswerable: the right answer is a refusal)")
    print(f"answer: {_highlighted(record.answer or '', case.expected_facts, colour)}")
    shown = [i for i in record.ranked_ids if i in record.texts][:_EVIDENCE_SHOWN]
    for doc_id in shown:
        text = " ".join(record.texts[doc_id].split())[:_EVIDENCE_CHARS]
        shown_id = printable(doc_id)
        print(f"  evidence {shown_id}: {_highlighted(text, case.expected_facts, colour)}")


def _show(item: ReviewItem, position: int, total: int, colour: bool) -> None:
    """One verdict to review: the case, the judge's verdict and reason, the deterministic
    check beside it, and the check's question to the reviewer."""
    record, outcome = item.record, item.outcome
    print(f"\n[{position}/{total}] case {printable(record.case.id)}  check {outcome.check}")
    _show_conversation(item.earlier)
    _show_case(record, colour)
    if not item.blind:
        _show_verdicts(item)
    print(judged_check(outcome.check).question)


def _show_verdicts(item: ReviewItem) -> None:
    """The judge's verdict and reason, and the deterministic check beside it (never shown
    on an overlap item: the second label must not lean on them)."""
    outcome = item.outcome
    judge = "uncertain" if item.judge is None else ("pass" if item.judge else "fail")
    print(f"judge: {judge} ({printable(outcome.reason)})")
    for claim in outcome.unsupported:
        print(f"  unsupported: {printable(claim)}")
    if item.deterministic is not None:
        print(f"deterministic check: {'pass' if item.deterministic else 'fail'}")


def _ask() -> tuple[str, str]:
    """The reviewer's answer (p, f, s or q) and the note after it, asked until it is one."""
    while True:
        reply = input("> ").strip()
        verdict, _, note = reply.partition(" ")
        if verdict in ("p", "f", "s", "q"):
            return verdict, note
        print("p, f, s or q, please")


@dataclass
class _Session:
    """How a review went: the labels saved, what stopped it early (Ctrl-C, end of input, a
    label that could not be written), if anything."""

    saved: int = 0
    stop: KeyboardInterrupt | EOFError | None = None
    unsaved: tuple[Label, OSError] | None = None


def _writable(path: Path) -> None:
    """Make the labels file's folder and open the file for appending, before any question.

    Raises:
        ConfigError: the folder cannot be made or the file not written, naming the path.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot write labels to {path}: {exc.strerror or exc}") from None


def _review(queue: Sequence[ReviewItem], labels_path: Path, reviewer: str) -> _Session:
    """Ask about each verdict in turn, appending each label as it is given; stop at q, at
    Ctrl-C or end of input, or at a label that cannot be written (kept in the session)."""
    colour = sys.stdout.isatty()
    session = _Session()
    try:
        for position, item in enumerate(queue, start=1):
            _show(item, position, len(queue), colour)
            verdict, note = _ask()
            if verdict == "q":
                break
            if verdict == "s":
                continue
            label = Label(
                item.record.id,
                item.answer_hash,
                item.outcome.check,
                verdict == "p",
                reviewer,
                now(),
                note.strip()[:2000],
            )
            try:
                append_label(labels_path, label)
            except OSError as exc:
                session.unsaved = (label, exc)
                break
            session.saved += 1
    except (KeyboardInterrupt, EOFError) as stop:
        session.stop = stop
    return session


def _queue(
    options: Options,
    records: tuple[CaseRecord, ...],
    judged: JudgedRun,
    labels_path: Path,
    reviewer: str,
) -> list[ReviewItem]:
    """The items to label: the unlabelled verdicts, or an overlap sample (``--overlap``).

    Raises:
        ConfigError: ``--overlap`` is not a positive count.
    """
    if options.overlap is None:
        return review_queue(records, judged, read_labels(labels_path))
    if options.overlap < 1:
        raise ConfigError("--overlap must be at least 1")
    reviews = read_reviews(labels_path)
    return overlap_queue(records, judged, reviews, reviewer, size=options.overlap)


def handle(options: Options) -> int:
    """Review a judged report's verdicts one by one, saving a human label for each."""
    report = read_report(options.report)
    judged = judged_of(report, options.report)
    if judged is None:
        raise ConfigError(f"{options.report}: the report was not judged (`evaluator judge`)")
    labels_path = Path(options.labels or Path(options.report).parent / "labels.jsonl")
    _writable(labels_path)
    reviewer = options.reviewer or getpass.getuser()
    queue = _queue(options, report.cases, judged, labels_path, reviewer)
    if options.limit is not None:
        queue = queue[: options.limit]
    if options.overlap is not None:
        print(
            f"{len(queue)} answer(s) another reviewer labelled, for {reviewer} to label "
            f"without seeing their label or the judge's; labels go to {labels_path}"
        )
    else:
        print(f"{len(queue)} verdict(s) to review; labels go to {labels_path}")
    print("answer p (pass), f (fail), s (skip) or q (quit), a note may follow: f wrong date")
    session = _review(queue, labels_path, reviewer)
    if session.unsaved is not None:
        label, exc = session.unsaved
        print(
            f"\nlabel not saved ({exc.strerror or exc}); add this line to {labels_path} by "
            f"hand:\n{label.to_line()}"
            f"{session.saved} label(s) saved before it",
            file=sys.stderr,
        )
        return ExitCode.ERROR
    if session.stop is not None:
        print(f"\nstopped; {session.saved} label(s) saved in {labels_path}")
        interrupted = isinstance(session.stop, KeyboardInterrupt)
        return ExitCode.INTERRUPTED if interrupted else ExitCode.OK
    print(f"{session.saved} label(s) saved in {labels_path}")
    return ExitCode.OK
