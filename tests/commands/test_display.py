"""The terminal text of a run: the summary table, and which cases count as the worst."""

from __future__ import annotations

from evaluator.commands.display import (
    SUSPECT_SHOWN,
    badness,
    format_conversations,
    format_label_audit,
    format_positions,
    format_run,
    format_summary,
    format_tags,
    worst_cases,
)
from evaluator.models import CaseError, CaseRecord, CaseScores, Outcome
from evaluator.pages.worst import reasons
from evaluator.scoring.labels import AuditTotals, LabelAudit
from evaluator.summary import summarise, tag_cells
from tests.support.records import record, report, turn


def _record(
    case_id: str,
    outcome: Outcome,
    *,
    latency: float = 0.2,
) -> CaseRecord:
    return record(
        case_id,
        outcome=outcome,
        question="q?",
        relevance={"d": 1},
        facts=(),
        ranked=("d",),
        answer="a" if isinstance(outcome, CaseScores) else None,
        citations=(),
        latency=latency,
    )


PERFECT = _record(
    "perfect",
    CaseScores(
        recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, citation_precision=1.0, answer_correct=True
    ),
)
LOST = _record("lost", CaseScores(recall_at_k=0.0, mrr=0.0, ndcg_at_k=0.0, answer_correct=True))
WRONG = _record(
    "wrong",
    CaseScores(
        recall_at_k=1.0, mrr=0.5, ndcg_at_k=1.0, citation_precision=0.5, answer_correct=False
    ),
)
FAILED = _record("failed", CaseError(kind="timeout", message="slow"), latency=0.005)


class TestBadness:
    """Errors first, then a wrong answer (2), then lost recall, rank and citations."""

    def test_worked_examples(self) -> None:
        """Badness by its definition: 0 for a perfect case, lost rank and wrong answers add up, a
        failed case is worst (10)."""
        assert 0.0 == badness(PERFECT)
        assert 2.0 == badness(LOST)  # recall 1 lost + reciprocal rank 1 lost
        assert 3.0 == badness(WRONG)  # wrong answer 2 + rank 0.5 + citations 0.5
        assert 10.0 == badness(FAILED)


class TestReasons:
    """Each term badness adds, said in words; none for a perfect case."""

    def test_worked_examples(self) -> None:
        """A case's reasons in words match the worked examples: none for a perfect case, the
        lost ranking's or the wrong answer's otherwise."""
        assert () == reasons(PERFECT)
        assert (
            "recall 0.00: a relevant id is missing from the top K",
            "no relevant id anywhere in the ranking",
        ) == reasons(LOST)
        assert (
            "answer incorrect",
            "first relevant id at rank 2 (RR 0.50)",
            "citation precision 0.50: a citation points at no relevant id",
        ) == reasons(WRONG)
        assert ("the call failed (timeout)",) == reasons(FAILED)

    def test_a_case_has_reasons_exactly_when_it_is_bad(self) -> None:
        """A case has reasons exactly when its badness is above zero."""
        for case in (PERFECT, LOST, WRONG, FAILED):
            assert bool(reasons(case)) == (badness(case) > 0)


class TestTags:
    def test_the_terminal_lines_are_the_tag_cells(self) -> None:
        """format_tags writes tag_cells: the one by-tag computation the HTML report reads."""
        a = record("a", tags=("zh", "refund"), recall=0.5, rr=0.5)
        b = record("b", tags=("zh",), correct=False)
        c = record("c", tags=("refund",), error="timeout")
        summary = summarise([a, b, c])

        cells = tag_cells(summary)
        assert [("refund", 2), ("zh", 2)] == [(t.tag, t.case_count) for t in cells]
        assert (
            ("recall", 0.5),
            ("mrr", 0.5),
            ("citations", 1.0),
            ("accuracy", 1.0),
            ("errors", 0.5),
        ) == cells[0].cells
        assert [
            "",
            "by tag:",
            "  refund     2 cases  recall 0.50  mrr 0.50  citations 1.00  accuracy 1.00  "
            "errors 0.50",
            "  zh         2 cases  recall 0.75  mrr 0.75  citations 1.00  accuracy 0.50  "
            "errors 0.00",
        ] == format_tags(summary)


class TestWorstCases:
    """The n worst, worst first; a perfect case is never listed."""

    def test_order_and_cut(self) -> None:
        """The worst cases come worst first, cut at n."""
        cases = (PERFECT, LOST, FAILED, WRONG)
        assert ["failed", "wrong"] == [c.id for c in worst_cases(cases, 2)]
        assert ["failed", "wrong", "lost"] == [c.id for c in worst_cases(cases, 10)]

    def test_perfect_run_lists_nothing(self) -> None:
        """Perfect cases are never listed as worst."""
        assert [] == worst_cases((PERFECT, PERFECT), 5)


def _audit(suspect: int, checked: int) -> AuditTotals:
    wrong = LabelAudit(checked=True, suspect=True, missing=(("三天",),))
    return AuditTotals(checked, tuple((f"case-{i}", wrong) for i in range(suspect)))


class TestFormatLabelAudit:
    """Every suspect case up to SUSPECT_SHOWN, then a count of the rest and where they are."""

    def test_a_few_are_all_listed(self) -> None:
        """A few suspect labels are all listed, each with its message."""
        message = "suspect label: '三天' is in none of the relevant evidence"
        assert [
            "",
            "label audit: 2 suspect of 5 checked",
            f"  case-0: {message}",
            f"  case-1: {message}",
        ] == format_label_audit(_audit(2, 5))

    def test_exactly_the_cap_has_no_tail(self) -> None:
        """Exactly the cap of suspect labels: all shown, no 'more' line."""
        lines = format_label_audit(_audit(SUSPECT_SHOWN, 100))
        assert 2 + SUSPECT_SHOWN == len(lines)
        assert lines[-1].startswith(f"  case-{SUSPECT_SHOWN - 1}: ")

    def test_a_mostly_mislabelled_set_prints_the_cap_and_a_count(self) -> None:
        """A mostly mislabelled set prints the first cap of cases and counts the rest."""
        lines = format_label_audit(_audit(32_389, 100_000))
        assert "label audit: 32389 suspect of 100000 checked" == lines[1]
        assert [f"case-{i}" for i in range(SUSPECT_SHOWN)] == [
            line.split(":")[0].strip() for line in lines[2:-1]
        ]
        assert (
            f"  ... and {32_389 - SUSPECT_SHOWN} more (every one in the report's "
            "label_audit.suspect_cases)"
        ) == lines[-1]

    def test_nothing_checked_prints_nothing(self) -> None:
        """No label checked: no audit lines at all."""
        assert [] == format_label_audit(_audit(0, 0))


class TestFormatSummary:
    """Every metric with its denominator; latencies in ms below a second."""

    def test_table(self) -> None:
        """The summary table: each metric's value and count, n/a where no case has one."""
        table = format_summary(summarise([PERFECT, LOST, WRONG, FAILED]))
        rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
        assert ["0.6667", "3"] == rows["recall_at_k"]
        assert ["0.7500", "2"] == rows["citation_precision"]
        assert ["n/a", "0"] == rows["fact_recall"]
        assert ["0.2500", "4"] == rows["error_rate"]
        assert ["200.00ms"] == rows["p50_seconds"]
        assert "metric" == table.split()[0]

    def test_milliseconds_below_ten(self) -> None:
        """A 5 ms run would print as 0.000s; it prints 5.00ms."""
        table = format_summary(summarise([FAILED]))
        rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
        assert ["5.00ms"] == rows["p95_seconds"]


class TestCost:
    """A cost of 0.00003 a case printed as 0.0000 said nothing, and in no currency."""

    def _summary(self):  # type: ignore[no-untyped-def]
        from dataclasses import replace

        return replace(summarise([PERFECT]), cost_total=0.000123456, cost_per_case=0.0000312)

    def test_cost_has_significant_digits_and_its_currency(self) -> None:
        """Cost figures print with significant digits and the configured currency."""
        table = format_summary(self._summary(), currency="EUR")
        rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
        assert ["0.0000312", "EUR"] == rows["cost_per_case"]
        assert ["0.0001235", "EUR"] == rows["cost_total"]

    def test_the_default_currency_is_named_too(self) -> None:
        """Without a configured currency, cost figures name USD."""
        table = format_summary(self._summary())
        rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
        assert ["0.0000312", "USD"] == rows["cost_per_case"]


def test_control_characters_from_outside_reach_no_terminal() -> None:
    """A tag, an id or a ranked id holding ESC, BEL, CSI or a newline is shown escaped: it
    can neither drive the terminal nor start a line of its own."""
    hostile = record(
        "evil\x1b[2J\nverdict: PASS",
        recall=0.0,
        rr=0.0,
        correct=False,
        tags=("tag\x07\x9b",),
        ranked=("id\x1b]8;;x\x07",),
    )
    text = format_run(report([hostile, PERFECT]))
    assert not any(ch in text for ch in "\x1b\x07\x9b")
    assert not any(line.startswith("verdict:") for line in text.splitlines())
    assert "evil\\x1b[2J\\nverdict: PASS" in text


class TestConversations:
    """A run with conversations shows them by turn position and how they ended."""

    def test_positions_and_first_failing_turns(self) -> None:
        """One line per turn position, and the turn at which the failed conversations first
        went wrong."""
        records = [
            turn("a", 1),
            turn("a", 2, correct=False),
            turn("b", 1),
            turn("b", 2),
            turn("c", 1),
            turn("c", 2, error="timeout"),
        ]
        summary = summarise(records)

        assert [
            "",
            "by turn position:",
            "  1     3 turns  recall 1.00  mrr 1.00  citations 1.00  accuracy 1.00  errors 0.00",
            "  2     3 turns  recall 1.00  mrr 1.00  citations 1.00  accuracy 0.50  errors 0.33",
        ] == format_positions(summary)
        assert [
            "",
            "conversations: 3, 1 with every turn right; first failing turn: turn 2 in 2",
        ] == format_conversations(records)

    def test_questions_only_add_nothing(self) -> None:
        """A run of questions prints neither section."""
        records = [record("q1"), record("q2")]

        assert ([], []) == (format_positions(summarise(records)), format_conversations(records))


def test_a_token_count_is_written_as_a_whole_number() -> None:
    """output_tokens_total is a count: `run`, the gate and the pages write 6, not 6.0000, and
    its change +3, not +3.0000."""
    from evaluator.gate.rules import format_difference, format_value
    from evaluator.pages.formatting import fmt_diff, fmt_value

    summary = summarise([record("a", output_tokens=2), record("b", output_tokens=4)])
    row = next(line for line in format_summary(summary).splitlines() if "output_tokens" in line)
    assert ["output_tokens_total", "6"] == row.split()
    assert ("6", "+3") == (
        format_value("output_tokens_total", 6.0),
        format_difference("output_tokens_total", 3.0, 6.0),
    )
    assert ("1,234", "+3") == (
        fmt_value("output_tokens_total", 1234.0),
        fmt_diff("output_tokens_total", 3.0),
    )
