"""The baseline beside the candidate: worked examples of each marked difference."""

from __future__ import annotations

from itertools import pairwise

import pytest

from evaluator.models import CaseError
from evaluator.pages.case import case_view
from evaluator.pages.render import PageRenderer
from evaluator.pages.sidebyside import DiffPiece, baseline_diff, word_diff
from evaluator.redaction import Redactor
from tests.support.records import record, replace

SECRET = "tok-sidebyside-42"


def _pieces(pieces: list[DiffPiece] | None) -> list[tuple[str, str]]:
    return [(p.op, p.text) for p in pieces or ()]


class TestWordDiff:
    def test_a_changed_word_is_removed_on_one_side_and_added_on_the_other(self) -> None:
        """A changed word is marked removed on the baseline's side and added on the
        candidate's."""
        left, right = word_diff("refunds take 3 days", "refunds take 7 days")

        assert [("same", "refunds take "), ("removed", "3"), ("same", " days")] == _pieces(left)
        assert [("same", "refunds take "), ("added", "7"), ("same", " days")] == _pieces(right)

    def test_unspaced_scripts_are_diffed_character_by_character(self) -> None:
        """One changed character of a Chinese answer is one mark, not the whole sentence."""
        left, right = word_diff("退款3-5个工作日到账", "退款7个工作日到账")

        assert [("same", "退款"), ("removed", "3-5"), ("same", "个工作日到账")] == _pieces(left)
        assert [("same", "退款"), ("added", "7"), ("same", "个工作日到账")] == _pieces(right)

    @pytest.mark.parametrize(
        ("before", "after"),
        [
            ("", "new answer"),
            ("old answer", ""),
            ("a  b\n\tc", "a b c d"),
            ("🙂 e\u0301 x", "e\u0301 🙂"),
            ("same", "same"),
        ],
    )
    def test_each_side_joins_back_to_its_text(self, before: str, after: str) -> None:
        """Each side of a word diff joins back to its text, with only its own kind of change and
        adjacent pieces merged."""
        left, right = word_diff(before, after)

        assert before == "".join(p.text for p in left)
        assert after == "".join(p.text for p in right)
        assert all(p.op in ("same", "removed") for p in left)
        assert all(p.op in ("same", "added") for p in right)
        # adjacent pieces of one kind are merged
        for side in (left, right):
            assert all(a.op != b.op for a, b in pairwise(side))


BASELINE = record(
    "refund",
    relevance={"policy": 2, "faq": 1},
    facts=(("3-5个工作日",), ("银行卡",)),
    ranked=("policy", "faq", "noise"),
    answer=f"退回银行卡，3-5个工作日到账 [1] {SECRET}",
    citations=(1, 2),
)
CANDIDATE = record(
    "refund",
    relevance={"policy": 2, "faq": 1},
    facts=(("3-5个工作日",), ("银行卡",)),
    correct=False,
    recall=0.5,
    rr=0.5,
    ranked=("noise", "policy", "other"),
    answer="退回银行卡，七天到账 [1]",
    citations=(1, 9),
)


class TestBaselineDiff:
    def test_the_answers_facts_ranking_and_citations_are_marked(self) -> None:
        """A regressed case's diff marks the answer's words, the facts found, the ranking's
        moves and the citations, redacted."""
        d = baseline_diff(
            BASELINE,
            CANDIDATE,
            k=2,
            baseline_run="run-0",
            worse=("answer correct → incorrect",),
            redact=Redactor([SECRET]),
        )

        assert (True, ("correct", "incorrect")) == (d.regressed, d.verdicts)
        # the answers, word by word (characters in Chinese), the secret masked before diffing
        assert ("removed", "3-5个工作日") in _pieces(d.answers[0])
        assert ("added", "七天") in _pieces(d.answers[1])
        assert SECRET not in "".join(p.text for p in d.answers[0] or ())
        # the fact the baseline's answer had and the candidate's lost
        assert [("'3-5个工作日'", "lost"), ("'银行卡'", "kept")] == [
            (f.text, f.change) for f in d.facts
        ]
        # rank by rank: 'faq' is only in the baseline's ranking, 'other' only in the
        # candidate's, 'policy' and 'noise' moved
        rows = [
            (
                r.rank,
                (r.baseline.id, r.baseline.mark) if r.baseline else None,
                (r.candidate.id, r.candidate.mark) if r.candidate else None,
            )
            for r in d.ranking
        ]
        assert [
            (1, ("policy", "moved"), ("noise", "moved")),
            (2, ("faq", "only"), ("policy", "moved")),
            (3, ("noise", "moved"), ("other", "only")),
        ] == rows
        assert (3, 1) == (d.ranking[0].candidate.other_rank, d.ranking[1].candidate.other_rank)  # type: ignore[union-attr]
        # relevant ids in the top K=2: policy and faq before, policy now
        assert (["faq"], []) == (d.lost_from_top_k, d.gained_in_top_k)
        # [1] pointed at policy and now at noise; [2] (faq) is gone; [9] points at nothing
        assert [
            ("[1]", "noise", False, "added"),
            ("[9]", None, False, "added"),
            ("[1]", "policy", True, "removed"),
            ("[2]", "faq", True, "removed"),
        ] == [(c.label, c.resolves_to, c.supported, c.change) for c in d.citations]
        scores = {s.name: (s.baseline, s.candidate, s.change) for s in d.scores}
        assert ("1.00", "0.50", "worse") == scores["mrr"]
        assert ("yes", "no", "worse") == scores["answer_correct"]
        assert ("1.00", "1.00", "") == scores["citation_precision"]
        assert ("no", "no", "") == scores["refused"]
        # answer pieces on both sides, one fact, six ranked ids, four citations
        assert d.marked >= 2 + 1 + 6 + 4

    @pytest.mark.parametrize(("unanswerable", "change"), [(False, "worse"), (True, "better")])
    def test_a_new_refusal_is_worse_only_where_an_answer_was_due(
        self, unanswerable: bool, change: str
    ) -> None:
        """A new refusal is worse on an answerable case and better on an unanswerable one."""
        assert CANDIDATE.scores is not None
        before = replace(CANDIDATE, case=replace(CANDIDATE.case, unanswerable=unanswerable))
        after = replace(before, outcome=replace(CANDIDATE.scores, refused=True))
        rows = {s.name: s for s in baseline_diff(before, after, k=2, baseline_run="r").scores}

        assert ("no", "yes", change) == (
            rows["refused"].baseline,
            rows["refused"].candidate,
            rows["refused"].change,
        )

    def test_a_citation_that_moved_with_its_document_is_kept(self) -> None:
        """[1] -> [2] pointing at the same document is the same citation."""
        before = replace(BASELINE, ranked_ids=("policy", "faq"), citations=(1,))
        after = replace(BASELINE, ranked_ids=("faq", "policy"), citations=(2,))
        d = baseline_diff(before, after, k=2, baseline_run="r")

        assert [("[2]", "policy", "kept")] == [
            (c.label, c.resolves_to, c.change) for c in d.citations
        ]

    def test_a_new_error_has_no_candidate_answer(self) -> None:
        """A case that now fails has no candidate answer and shows its redacted error."""
        failed = replace(
            CANDIDATE,
            outcome=CaseError(kind="timeout", message=f"deadline {SECRET}"),
            answer=None,
            ranked_ids=(),
            citations=(),
        )
        d = baseline_diff(
            BASELINE, failed, k=2, baseline_run="r", redact=Redactor([SECRET]), worse=("x",)
        )

        assert ("correct", "error") == d.verdicts
        assert (None, "timeout: deadline ***") == d.errors
        assert d.answers[1] is None and _pieces(d.answers[0])[0][0] == "removed"
        assert ["lost", "lost"] == [f.change for f in d.facts]
        assert all(r.candidate is None and r.baseline is not None for r in d.ranking)
        assert {"removed"} == {c.change for c in d.citations}

    def test_an_improved_case_says_how(self) -> None:
        """An improved case's view says how it improved."""
        d = baseline_diff(CANDIDATE, BASELINE, k=2, baseline_run="r", better=("RR 0.50 → 1.00",))
        html = PageRenderer().case(
            case_view(BASELINE, k=2), job="j", run_id="r", run_age="now", diff=d
        )

        assert not d.regressed
        assert '<p class="changes improved">improved: RR 0.50 → 1.00</p>' in html
        assert '<p class="changes">' not in html

    def test_identical_runs_mark_nothing(self) -> None:
        """Two identical runs of a case mark nothing."""
        d = baseline_diff(BASELINE, BASELINE, k=2, baseline_run="r")

        assert (True, 0, False) == (d.answer_same, d.marked, d.regressed)

    def test_rendered_escaped_and_marked(self) -> None:
        """The case page draws both sides: struck and underlined words, marked ids, and
        nothing from the endpoint as markup."""
        hostile = replace(
            CANDIDATE, answer="<script>alert(1)</script> 七天", ranked_ids=("<b>x</b>",)
        )
        d = baseline_diff(BASELINE, hostile, k=2, baseline_run="run-0", worse=("x",))
        html = PageRenderer().case(
            case_view(hostile, k=2), job="j", run_id="r", run_age="now", diff=d
        )

        assert html.count('class="baseline-diff"') == 1
        assert '<del class="removed">' in html and '<ins class="added">' in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
        assert 'data-id="&lt;b&gt;x&lt;/b&gt;" data-mark="only"' in html
        assert 'data-change="lost"' in html
