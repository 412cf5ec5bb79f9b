"""The table :func:`normalise` drops characters with: it holds every character the rule
drops (so a character it has not learned is kept, as the rule says), and what it learns of
the answers it sees never changes what a text normalises to."""

from __future__ import annotations

import unicodedata

from evaluator.scoring import answer
from evaluator.scoring.answer import normalise

#: every code point but the surrogates (no text holds them alone)
_CODES = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def _by_rule(text: str) -> str:
    """``text`` with the characters the rule drops removed, one by one."""
    return "".join(ch for ch in text if answer._kept(ch))


def test_every_dropped_character_lies_in_the_planes_the_table_reads() -> None:
    """Separators, punctuation, control and format characters of this Python's Unicode
    database all lie in the planes the table is built from."""
    planes = {c >> 16 for c in _CODES if not answer._kept(chr(c))}
    assert planes <= set(answer._PLANES_WITH_DROPPED)


def test_the_table_maps_each_dropped_character_to_none() -> None:
    """Every dropped code point is in the table, mapped to None; every other entry is a
    kept character mapped to itself."""
    table = answer._table()
    dropped = {c for c in _CODES if not answer._kept(chr(c))}
    assert dropped == {c for c, v in table.items() if v is None}
    assert all(v == c and answer._kept(chr(c)) for c, v in table.items() if v is not None)


def test_dropping_follows_the_rule_before_and_after_learning() -> None:
    """All of Unicode, in slices, loses exactly the characters the rule drops, whatever the
    table has learned from the answers normalised before (a learning call every
    ``_LEARN_EVERY``)."""
    text = "".join(map(chr, _CODES))
    slices = [text[i : i + 4096] for i in range(0, len(text), 4096)]
    for _ in range(2):
        assert [_by_rule(s) for s in slices] == [answer._drop(s) for s in slices]
        for _ in range(answer._LEARN_EVERY):
            normalise("Ünïcødé 退款 ٪ — answers, learned: ½ ﬁ \u200b ｆｕｌｌ")


def test_learning_is_bounded() -> None:
    """The table never grows far past its limit, however many distinct characters come."""
    for start in range(0x4E00, 0x9FFF, 512):
        for _ in range(answer._LEARN_EVERY):
            answer._drop("".join(map(chr, range(start, start + 512))))
    assert len(answer._table()) < answer._TABLE_LIMIT + 1024


def test_normalise_is_the_rule_over_the_folded_text() -> None:
    """A text of every script's punctuation and spaces normalises as NFKC, case folding
    and the rule say."""
    text = "Ａ　b\u3000c、d。e—f\u00a0g\u2028h\U000e0041i\U0001d173j%k٪"
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    assert unicodedata.normalize("NFKC", _by_rule(folded)) == normalise(text)
