"""Fact highlighting: matches found on normalised text, marked on the text as written."""

from __future__ import annotations

from evaluator.pages.highlight import Segment, fact_spans, segments


def test_a_fact_is_marked_where_it_is_written() -> None:
    """A fact is one marked segment exactly where the text writes it."""
    text = "退回到银行卡通常需要3-5个工作日到账。"
    assert [
        Segment("退回到银行卡通常需要"),
        Segment("3-5个工作日", 0),
        Segment("到账。"),
    ] == segments(text, [["3-5个工作日"]])


def test_normalisation_bridges_spaces_case_and_width() -> None:
    """'3 - 5 个工作日' and 'Seven Days' and full-width '７天' match as scoring matches them."""
    text = "Refunds take 3 - 5 个工作日, or Seven Days, or ７天."
    spans = fact_spans(text, [["3-5个工作日"], ["seven days"], ["7天"]])

    assert ["3 - 5 个工作日", "Seven Days", "７天"] == [text[a:b] for a, b, _ in spans]
    assert [0, 1, 2] == [f for _, _, f in spans]


def test_every_occurrence_and_every_alternative() -> None:
    """Every occurrence of every alternative of a fact is marked."""
    text = "七天无理由退款，7天内申请，超过7天不可。"
    assert ["七天", "7天", "7天"] == [text[a:b] for a, b, _ in fact_spans(text, [["七天", "7天"]])]


def test_an_earlier_fact_wins_an_overlap() -> None:
    """Of two overlapping facts, the earlier one is marked."""
    text = "3-5个工作日"
    assert [(0, 7, 0)] == fact_spans(text, [["3-5个工作日"], ["5个工作日"]])


def test_empty_needles_and_no_match() -> None:
    """Facts that normalise to nothing, or that are not found, mark nothing."""
    assert [Segment("abc")] == segments("abc", [["..."], ["xyz"]])
    assert [Segment("")] == segments("", [["a"]])


def test_segments_concatenate_to_the_text() -> None:
    """The segments joined are the text: nothing lost, nothing added."""
    text = "a 七天 b 7天 c"
    assert text == "".join(s.text for s in segments(text, [["七天", "7天"]]))
