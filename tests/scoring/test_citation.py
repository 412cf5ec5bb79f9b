"""Citation resolution, precision, recall and validity."""

from __future__ import annotations

from typing import Any, cast

import pytest

from evaluator.models import Citation
from evaluator.scoring import citation_precision, citation_recall, citations_valid
from evaluator.scoring.citation import resolve_citation

RETRIEVED = ("a", "x", "b", "y")
RELEVANCE = {"a": 1, "b": 2, "c": 1}


def _bad(value: Any) -> Citation:
    """A value of a type the endpoint should not send, typed as a citation for the test."""
    return cast(Citation, value)


class TestResolveCitation:
    """Ints are 1-based positions into retrieved as returned; strings are ids."""

    def test_position(self) -> None:
        """Position 1 is the first retrieved id."""
        assert resolve_citation(1, RETRIEVED) == "a"

    def test_position_counts_duplicates(self) -> None:
        """Positions index the list as returned, repeated ids included."""
        assert resolve_citation(3, ("a", "a", "c")) == "c"

    @pytest.mark.parametrize("position", [0, -1, 5, 99])
    def test_position_out_of_range(self, position: int) -> None:
        """Zero, negative and past-the-end positions resolve to nothing."""
        assert resolve_citation(position, RETRIEVED) is None

    def test_id(self) -> None:
        """A retrieved id resolves to itself."""
        assert resolve_citation("b", RETRIEVED) == "b"

    def test_numeric_string_is_an_id(self) -> None:
        """The string "1" is an id, never position 1."""
        assert (
            resolve_citation("1", RETRIEVED),
            resolve_citation("1", ("z", "1")),
        ) == (None, "1")

    def test_unretrieved_id(self) -> None:
        """An id that was not retrieved resolves to nothing, even if relevant."""
        assert resolve_citation("c", RETRIEVED) is None

    @pytest.mark.parametrize("value", [True, False, 1.0, None, [1]])
    def test_other_types_never_resolve(self, value: object) -> None:
        """Bools are not positions (True is not 1), nor are floats, None or lists."""
        assert resolve_citation(_bad(value), RETRIEVED) is None


class TestCitationPrecision:
    """Supported distinct citations over distinct citations."""

    def test_article_example(self) -> None:
        """[1, 3, 9] with positions 1 and 3 relevant and 9 out of range is 2/3."""
        assert pytest.approx(2 / 3) == citation_precision([1, 3, 9], RETRIEVED, RELEVANCE)

    def test_ids(self) -> None:
        """String citations are checked against relevance by id."""
        assert citation_precision(["a", "x"], RETRIEVED, RELEVANCE) == 0.5

    def test_numeric_string_id(self) -> None:
        """A string "1" is judged as the id "1", not as position 1."""
        assert (
            citation_precision(["1"], RETRIEVED, RELEVANCE),
            citation_precision(["1"], ("z", "1"), {"1": 1}),
        ) == (0.0, 1.0)

    def test_repeated_citation_cannot_inflate(self) -> None:
        """Citing a relevant position five times counts once."""
        assert citation_precision([1, 1, 1, 1, 1, 2], RETRIEVED, RELEVANCE) == 0.5

    def test_same_document_by_position_and_id_counts_once(self) -> None:
        """Position 1 and id "a" are the same document."""
        assert citation_precision([1, "a", 2], RETRIEVED, RELEVANCE) == 0.5

    def test_same_document_at_two_positions_counts_once(self) -> None:
        """Two positions holding the same id are one cited document."""
        assert citation_precision([1, 3, 2], ("a", "x", "a"), RELEVANCE) == 0.5

    def test_repeated_unresolved_counts_once(self) -> None:
        """An out-of-range position repeated is one unsupported citation."""
        assert citation_precision([1, 9, 9, 9], RETRIEVED, RELEVANCE) == 0.5

    def test_unretrieved_relevant_id_unsupported(self) -> None:
        """Citing a relevant id that was not retrieved is not supported."""
        assert citation_precision(["c"], RETRIEVED, RELEVANCE) == 0.0

    def test_no_citations_answerable(self) -> None:
        """An answerable case without citations scores 0."""
        assert citation_precision([], RETRIEVED, RELEVANCE) == 0.0

    def test_no_citations_unanswerable(self) -> None:
        """An unanswerable case without citations scores 1: there was nothing to cite."""
        assert citation_precision([], RETRIEVED, {}, unanswerable=True) == 1.0

    def test_citations_on_unanswerable(self) -> None:
        """On an unanswerable case every citation is unsupported."""
        assert citation_precision([1, "x"], RETRIEVED, {}, unanswerable=True) == 0.0

    def test_bool_is_not_position_one(self) -> None:
        """True is an unsupported citation, not position 1."""
        assert citation_precision([_bad(True)], RETRIEVED, RELEVANCE) == 0.0


class TestCitationRecall:
    """Relevant ids cited over relevant ids."""

    def test_partial(self) -> None:
        """Citing a and b of relevant {a, b, c} is 2/3 (c was never retrieved)."""
        assert pytest.approx(2 / 3) == citation_recall([1, "b"], RETRIEVED, RELEVANCE)

    def test_repeats_do_not_count_twice(self) -> None:
        """Citing a three times is still one relevant id of three."""
        assert pytest.approx(1 / 3) == citation_recall([1, 1, "a"], RETRIEVED, RELEVANCE)

    def test_no_citations(self) -> None:
        """No citation covers no relevant id."""
        assert citation_recall([], RETRIEVED, RELEVANCE) == 0.0

    def test_no_relevant(self) -> None:
        """With no relevant id the recall is 0 (score_case reports None instead)."""
        assert citation_recall([1], RETRIEVED, {}) == 0.0

    def test_grade_zero_not_counted(self) -> None:
        """Ids graded 0 are not relevant and not in the denominator."""
        assert citation_recall([1], RETRIEVED, {"a": 1, "x": 0}) == 1.0

    def test_bool_ignored(self) -> None:
        """True cites nothing, so it cannot stand for position 1."""
        assert citation_recall([_bad(True)], RETRIEVED, RELEVANCE) == 0.0


class TestCitationsValid:
    """Every citation must resolve inside retrieved."""

    def test_all_resolve(self) -> None:
        """Positions and retrieved ids are valid."""
        assert citations_valid([1, 4, "x"], RETRIEVED)

    def test_none_is_valid(self) -> None:
        """No citations is vacuously valid."""
        assert citations_valid([], RETRIEVED)

    @pytest.mark.parametrize("bad", [0, 5, -1, "c", "1"])
    def test_one_bad(self, bad: Citation) -> None:
        """A single citation outside retrieved makes the set invalid."""
        assert not citations_valid([1, bad], RETRIEVED)

    @pytest.mark.parametrize("value", [True, False])
    def test_bool_invalid(self, value: bool) -> None:
        """Bools are never valid citations."""
        assert not citations_valid([_bad(value)], RETRIEVED)
