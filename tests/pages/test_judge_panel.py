"""The judge's panel of a case view: verdict, reason, unsupported claims and the human label
per check; redacted, bounded, escaped; a report or labels file it cannot read is said, never
an error page (no browser needed; the live pages are in test_judge_pages.py)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from evaluator.judge.labels import Label, append_label
from evaluator.judge.record import (
    CaseJudgement,
    CheckOutcome,
    JudgedRun,
    Vote,
    answer_hash,
)
from evaluator.models import CaseError
from evaluator.pages.case import case_view
from evaluator.pages.judge_panel import (
    CLAIMS_SHOWN,
    KnownLabels,
    judge_panel,
    read_known_labels,
    report_panels,
)
from evaluator.pages.render import PageRenderer
from evaluator.pages.report import report_view
from evaluator.redaction import Redactor
from tests.judge.judged_runs import canary, judged_run
from tests.judge.reports import record, report
from tests.support.records import replace

SECRET = "tok-judge-5e4d3c2b1a"
WRONG = "Refunds take a month."
FACT = (("5 business days",),)


def _redact(text: str) -> str:
    return text.replace(SECRET, "***")


def _outcomes(claim: str = WRONG) -> tuple[CheckOutcome, ...]:
    return (
        CheckOutcome(
            "fact_support",
            "judged",
            {"fact_recall": 0.0, "answer_correct": False},
            "0 of 1 facts stated",
        ),
        CheckOutcome(
            "groundedness",
            "judged",
            {"faithfulness": 0.0},
            f"the evidence says 5 days ({SECRET})",
            (claim,),
            cached=True,
        ),
    )


def _judged(*cases: CaseJudgement, compromised: bool = False) -> JudgedRun:
    """A judged run of ``cases`` by the ``demo`` judge, its canary passed when
    ``compromised``."""
    return judged_run(
        *cases, model="demo", prompt_version="judge-prompts-1", canaries=(canary(compromised),)
    )


def _labels(*labels: Label) -> KnownLabels:
    return KnownLabels.of("labels.jsonl", {label.key: label for label in labels})


def _label(case_id: str, answer: str, check: str, verdict: bool, note: str = "") -> Label:
    return Label(case_id, answer_hash(answer), check, verdict, "ann", "2026-12-01T10:00:00Z", note)


def test_each_check_shows_the_verdict_the_reason_the_claims_and_the_human_label() -> None:
    """Each judged check of a case shows its verdict, values, reason, unsupported claims and the
    human label, redacted."""
    wrong = record("wrong", WRONG, FACT)
    judged = _judged(CaseJudgement("wrong", answer_hash(WRONG), _outcomes()))
    labels = _labels(
        _label("wrong", WRONG, "fact_support", False),
        _label("wrong", WRONG, "groundedness", True, f"a month is fine {SECRET}"),
    )
    panel = judge_panel(judged, wrong, labels=labels, redact=_redact)
    facts, grounded = panel.checks
    assert (facts.check, facts.status, facts.values) == (
        "fact_support",
        "fail",
        [("fact_recall", "0.00"), ("answer_correct", "no")],
    )
    assert facts.description.startswith("each expected fact")
    assert facts.human is not None and facts.human.verdict == "fail" and facts.human.agrees
    assert grounded.status == "fail" and grounded.unsupported == [WRONG] and grounded.cached
    assert grounded.reason == "the evidence says 5 days (***)"
    assert grounded.human is not None and grounded.human.agrees is False
    assert grounded.human.note == "a month is fine ***"  # a note is outside input too
    assert (panel.labels_source, panel.labels_error, panel.note) == ("labels.jsonl", None, None)


def test_a_label_of_another_answer_is_not_this_answers_label() -> None:
    """A label of another answer of the case is never shown as this answer's, only said to
    exist."""
    wrong = record("wrong", WRONG, FACT)
    judged = _judged(CaseJudgement("wrong", answer_hash(WRONG), _outcomes()))
    labels = _labels(_label("wrong", "an earlier answer", "fact_support", True))
    facts, grounded = judge_panel(judged, wrong, labels=labels, redact=_redact).checks
    assert facts.human is None and facts.other_answer_labelled
    assert grounded.human is None and not grounded.other_answer_labelled
    no_file = judge_panel(judged, wrong, labels=None, redact=_redact)
    assert no_file.labels_source is None and not no_file.checks[0].other_answer_labelled


def test_errors_skips_and_verdictless_checks_are_never_a_pass_or_a_fail() -> None:
    """A judge error or a budget skip shows as itself, never as a pass or a fail."""
    answer = "Refunds arrive within 5 business days."
    ok = record("ok", answer, FACT)
    outcomes = (
        CheckOutcome("fact_support", "error", error_kind="judge_timeout", error="no answer"),
        CheckOutcome("groundedness", "skipped"),
    )
    judged = _judged(CaseJudgement("ok", answer_hash(answer), outcomes))
    facts, grounded = judge_panel(judged, ok, redact=_redact).checks
    assert (facts.status, facts.error) == ("error", "judge_timeout: no answer")
    assert (grounded.status, grounded.error) == ("skipped", None)
    # a judged check with no claim has no faithfulness: no verdict to agree with a label
    claimless = CheckOutcome("groundedness", "judged", {}, "no factual claim")
    judged = _judged(CaseJudgement("ok", answer_hash(answer), (claimless,)))
    labels = _labels(_label("ok", answer, "groundedness", True))
    (only,) = judge_panel(judged, ok, labels=labels, redact=_redact).checks
    assert only.status == "no verdict" and only.human is not None and only.human.agrees is None


def test_a_split_vote_shows_uncertain_with_every_vote() -> None:
    """An uncertain check shows as uncertain, never a pass or a fail, beside a label it cannot
    agree or disagree with, and lists each judge's vote by sample."""
    answer = "Refunds arrive within 5 business days."
    ok = record("ok", answer, FACT)
    said = {True: ("pass", 1.0), False: ("fail", 0.0)}
    votes = tuple(
        Vote(
            member,
            0,
            CheckOutcome(
                "fact_support",
                "judged",
                {"fact_recall": said[verdict][1], "answer_correct": verdict},
            ),
        )
        for member, verdict in ((f"judge-{SECRET}", True), ("other", False))
    )
    uncertain = CheckOutcome("fact_support", "uncertain", votes=votes)
    judged = _judged(CaseJudgement("ok", answer_hash(answer), (uncertain,)))
    labels = _labels(_label("ok", answer, "fact_support", True))
    (only,) = judge_panel(judged, ok, labels=labels, redact=_redact).checks
    assert ("uncertain", [("judge-*** #0", "pass"), ("other #0", "fail")]) == (
        only.status,
        only.votes,
    )
    assert only.human is not None and only.human.agrees is None


def test_an_unjudged_case_and_a_changed_answer_say_why_nothing_is_shown() -> None:
    """A case not judged, failed by the target, or judged on another answer says why no verdict
    is shown."""
    wrong = record("wrong", WRONG, FACT)
    nothing = _judged()
    assert judge_panel(nothing, wrong, redact=_redact).note == "not judged in this run"
    failed = replace(wrong, outcome=CaseError(kind="http_status", message="500"))
    assert judge_panel(nothing, failed, redact=_redact).note == (
        "not judged: the target failed this case"
    )
    other = _judged(CaseJudgement("wrong", answer_hash("another answer"), _outcomes()))
    panel = judge_panel(other, wrong, redact=_redact)
    assert panel.checks == [] and panel.note is not None and "another answer" in panel.note


def test_claims_and_texts_are_bounded() -> None:
    """The claims listed and the reason shown are bounded, the rest counted."""
    wrong = record("wrong", WRONG, FACT)
    claims = tuple(f"claim {i}" for i in range(CLAIMS_SHOWN + 7))
    outcome = CheckOutcome("groundedness", "judged", {"faithfulness": 0.0}, "r" * 5000, claims)
    judged = _judged(CaseJudgement("wrong", answer_hash(WRONG), (outcome,)))
    (grounded,) = judge_panel(judged, wrong, redact=_redact).checks
    assert len(grounded.unsupported) == CLAIMS_SHOWN and grounded.unsupported_more == 7
    assert len(grounded.reason) == 1000 and grounded.reason.endswith("…")


def test_a_report_judge_block_that_cannot_be_read_is_said_on_the_page() -> None:
    """A report's judge block that cannot be read is said on the page, and an unjudged report
    shows no panel."""
    wrong = record("wrong", WRONG, FACT)
    broken = msgspec.structs.replace(report(wrong), judge={"model": 7})
    panel = report_panels(broken, source="r.json", labels=None, redact=_redact)(wrong)
    assert panel is not None and panel.checks == []
    assert panel.note is not None
    assert panel.note.startswith("the report's judge block is unreadable")
    assert report_panels(report(wrong), source="r.json", labels=None, redact=_redact)(wrong) is None


def test_a_labels_file_that_cannot_be_read_is_said_and_a_missing_one_is_empty(
    tmp_path: Path,
) -> None:
    """A missing labels file has no labels, and one with a bad line is reported by its line."""
    path = tmp_path / "labels.jsonl"
    assert read_known_labels(path).labels == {} and read_known_labels(path).error is None
    append_label(path, _label("wrong", WRONG, "fact_support", False))
    known = read_known_labels(path)
    assert list(known.labels) == [("wrong", answer_hash(WRONG), "fact_support")]
    assert known.labelled == frozenset({("wrong", "fact_support")})
    with path.open("a") as f:
        f.write('{"check": "nonsense"}\n')
    broken = read_known_labels(path)
    assert broken.labels == {} and broken.error is not None and ":2:" in broken.error


def test_the_html_report_shows_the_panel_escaped_and_redacted() -> None:
    """The HTML report shows the judge's panel and why it is untrusted (a canary passed),
    escaped and redacted."""
    hostile = f"<script>alert(1)</script> {SECRET}"
    wrong = record("wrong", WRONG, FACT)
    case = CaseJudgement("wrong", answer_hash(WRONG), _outcomes(hostile))
    judged = _judged(case, compromised=True)
    judged_report = msgspec.structs.replace(report(wrong), judge=judged.to_dict())
    labels = _labels(_label("wrong", WRONG, "groundedness", True, "<b>fine</b>"))
    redact = Redactor([SECRET]).redact_text
    view = report_view(
        judged_report,
        source="r.json",
        redact=redact,
        panels=report_panels(judged_report, source="r.json", labels=labels, redact=redact),
    )
    (shown,) = view.worst
    assert shown.judge is not None
    assert "compromised (a canary answer was judged supported)" == shown.judge.untrusted
    assert (
        "canaries accepted: injection 1/1, specific_but_wrong 0/0, vague_but_topical 0/0"
        == shown.judge.canaries
    )
    html = PageRenderer(redact).report(view)
    assert SECRET not in html and "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;fine&lt;/b&gt;" in html
    assert html.count('class="judge-check"') == 2
    assert "the judge disagrees" in html and "compromised" in html
    assert f'<p class="muted judge-canaries">{shown.judge.canaries}</p>' in html
    assert "human labels from" in html and "labels.jsonl" in html
    # an unjudged report has no panel at all
    plain = report_view(report(wrong), source="r.json", redact=redact)
    unjudged = report_panels(report(wrong), source="r", labels=None, redact=redact)
    assert plain == report_view(report(wrong), source="r.json", redact=redact, panels=unjudged)
    assert "judge-panel" not in PageRenderer(redact).report(plain)


def test_the_daemon_case_page_lays_the_panel_out_under_the_citations() -> None:
    """The daemon's case page puts the judge's panel under the citations, before the scores."""
    wrong = record("wrong", WRONG, FACT)
    judged = _judged(CaseJudgement("wrong", answer_hash(WRONG), _outcomes()))
    panel = judge_panel(judged, wrong, labels=None, redact=_redact)
    view = case_view(wrong, k=5, redact=_redact, judge=panel)
    html = PageRenderer(_redact).case(view, job="t / golden", run_id="run1", run_age="now")
    assert html.index("<h3>Citations</h3>") < html.index("judge-panel") < html.index("Scores")
    assert "no labels file configured" in html
    assert json.dumps(WRONG)[1:-1] in html
