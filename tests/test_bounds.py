"""Caps on what a case keeps: ranking, ids, answer, error messages; bounded stage names."""

from __future__ import annotations

import pytest

from evaluator import redaction
from evaluator.bounds import (
    MAX_SCORED_ANSWER_CHARS,
    OTHER_STAGE,
    RecordLimits,
    StageNames,
    cut,
    one_line,
    sanitise_label,
)
from evaluator.models import Retrieved, TargetResponse
from evaluator.redaction import MASK, register_secrets


class TestCut:
    def test_short_text_untouched(self) -> None:
        """A text within the bound is untouched."""
        assert "abc" == cut("abc", 3)

    def test_long_text_marked(self) -> None:
        """A text past the bound is cut and the rest counted."""
        assert "ab... (3 more chars)" == cut("abcde", 2)

    def test_secret_redacted_before_the_cut(self) -> None:
        """A secret is redacted before the text is cut."""
        register_secrets(["cut-secret-0123456789"])
        out = cut("x" * 10 + "cut-secret-0123456789" + "y" * 100, 15)
        assert "cut-sec" not in out and out.startswith("x" * 10 + MASK)

    def test_one_line(self) -> None:
        """One-line text folds whitespace and is bounded, however long."""
        assert "a b c" == one_line("a\n\n b\t\r\nc", 100)
        huge = "error " + "z" * 3_000_000
        out = one_line(huge, 300)
        assert "\n" not in out and len(out) < 340


class TestRecordLimits:
    def test_ranking_cut_before_scoring(self) -> None:
        """The ranking is cut to its bound before scoring."""
        response = TargetResponse(retrieved=tuple(Retrieved(id=str(i)) for i in range(50)))
        assert 10 == len(RecordLimits(max_ranked_ids=10).ranking(response).retrieved)

    def test_scored_answer_cut_to_the_scored_length(self) -> None:
        """What is scored: the ranking cut and at most MAX_SCORED_ANSWER_CHARS of the answer
        (normalisation grows U+FDFA 18 times: the input is what bounds it)."""
        long = TargetResponse(
            answer="\ufdfa" * (MAX_SCORED_ANSWER_CHARS + 5),
            retrieved=tuple(Retrieved(id=str(i)) for i in range(50)),
        )
        scored = RecordLimits(max_ranked_ids=10).scored(long)
        assert scored.answer == "\ufdfa" * MAX_SCORED_ANSWER_CHARS
        assert 10 == len(scored.retrieved)
        short = TargetResponse(answer="fact")
        assert RecordLimits().scored(short) is short
        assert RecordLimits().scored(TargetResponse()).answer is None

    def test_ids_and_citations_cut(self) -> None:
        """Ids and citations are cut in number and length."""
        limits = RecordLimits(max_ranked_ids=2, max_id_chars=4)
        assert ("a", "bbbb... (1 more chars)") == limits.ids(("a", "bbbbb", "c"))
        assert (1, "cccc... (2 more chars)") == limits.citations((1, "cccccc", 3))

    def test_answer_cut_and_none_kept(self) -> None:
        """The answer is cut to its bound and no answer stays None."""
        limits = RecordLimits(max_answer_chars=3)
        assert limits.answer(None) is None
        assert "abc... (1 more chars)" == limits.answer("abcd")


class TestStageNames:
    def test_cap_folds_the_rest_summing_their_time(self) -> None:
        """Stage names past the cap fold into one stage summing their time, each folded name
        reported."""
        folded: list[tuple[str, bool]] = []
        stages = StageNames(cap=2, on_fold=lambda name, first: folded.append((name, first)))
        out = stages.fold({"retrieve": 0.1, "rerank": 0.2, "x-1": 0.3, "x-2": 0.4})
        assert {"retrieve": 0.1, "rerank": 0.2, OTHER_STAGE: 0.7} == out
        assert [("x-1", True), ("x-2", True)] == folded
        assert {"retrieve", "rerank"} == stages.kept and 2 == stages.folded

    def test_allow_list(self) -> None:
        """Stages outside the allow-list fold into the other stage."""
        stages = StageNames(allowed=["retrieve"], cap=100)
        assert {"retrieve": 1.0, OTHER_STAGE: 2.0} == stages.fold({"retrieve": 1.0, "llm": 2.0})

    def test_fold_logs_only_the_first_distinct_names(self) -> None:
        """Only the first distinct folded names are reported as first seen."""
        firsts: list[bool] = []
        stages = StageNames(cap=0, on_fold=lambda _n, first: firsts.append(first))
        for i in range(100):
            stages.fold({f"t{i}": 0.1, "s0": 0.1})
        assert 20 == sum(firsts) and 200 == len(firsts)

    def test_sanitise(self) -> None:
        """Stage names are sanitised into bounded label values with secrets removed."""
        assert "a_b_c" == sanitise_label(' a b/"c ')
        assert "unnamed" == sanitise_label("///")
        assert 64 == len(sanitise_label("x" * 10_000))
        register_secrets(["label-secret-xyz"])
        assert "label-secret" not in sanitise_label("db label-secret-xyz")

    def test_remembered_names_follow_secrets_registered_later(self) -> None:
        """A remembered stage name is redacted of a secret registered after it was first
        seen."""
        # names are sanitised once per job and remembered: a secret registered after a
        # name was first seen must still be redacted from it
        stages = StageNames(cap=10)
        assert {"db-stage-secret-7q": 1.0} == stages.fold({"db-stage-secret-7q": 1.0})
        register_secrets(["stage-secret-7q"])
        assert {"db-": 2.0} == stages.fold({"db-stage-secret-7q": 2.0})

    def test_a_repeated_response_folds_as_the_first_did(self) -> None:
        """The same stages again (copied when every name is its own kept label) fold to what
        the first response gave, names past the cap counted each time."""
        stages = StageNames(cap=2)
        timings = {"retrieve": 0.1, "a b": 0.2, "x": 0.3}
        first = stages.fold(timings)
        assert [first, first, first] == [stages.fold(timings) for _ in range(3)]
        assert {"retrieve": 0.1, "a_b": 0.2, OTHER_STAGE: 0.3} == first
        assert 4 == stages.folded
        assert {"retrieve": 0.5} == stages.fold({"retrieve": 0.5})

    def test_a_stage_of_minus_zero_seconds_is_kept_as_reported(self) -> None:
        """-0.0 seconds (in range: it is zero) is the same figure whether the names are
        folded one by one or copied."""
        stages = StageNames(cap=5)
        assert [("s", "-0.0"), ("s", "-0.0")] == [
            (name, repr(seconds))
            for _ in range(2)
            for name, seconds in stages.fold({"s": -0.0}).items()
        ]

    def test_memo_is_bounded(self) -> None:
        """The memo of sanitised names is bounded."""
        stages = StageNames(cap=0)
        for i in range(5000):
            stages.fold({f"n{i}": 0.1})
        assert 5000 == stages.folded and len(stages._sanitised) <= 1024


class TestCutOfHugeText:
    """A huge text is redacted only as far as what is kept can reach (issue 24.2: a 3.6 MB
    id redacted whole to keep 256 characters cost 0.15 s on the event loop)."""

    def test_secret_straddling_the_cut_is_masked_and_the_count_kept(self) -> None:
        """A secret straddling the cut of a huge text is masked and the count of the rest
        kept."""
        secret = "huge-cut-secret-0123456789"
        register_secrets([secret])
        text = "x" * 10 + secret + "y" * 3_000_000
        out = cut(text, 15)
        assert out.startswith("x" * 10 + MASK[:5]) and "huge-c" not in out
        assert out.endswith(f"({len(text) - len(secret) + len(MASK) - 15} more chars)")

    def test_only_the_reach_is_redacted(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Only the reach of the cut is redacted, not the whole huge text."""
        register_secrets(["huge-cut-secret-0123456789"])
        seen: list[int] = []
        active = redaction.redactor()
        real = active.redact_text

        def recording(text: str) -> str:
            seen.append(len(text))
            return real(text)

        monkeypatch.setattr(active, "redact_text", recording)
        cut("z" * 3_000_000, 256)
        assert seen and max(seen) <= 256 + active.span
