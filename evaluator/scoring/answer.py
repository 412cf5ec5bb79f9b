"""Answer checks: normalised substring matching of expected facts and refusal phrases.

Both sides are normalised the same way (:func:`normalise`), so "7 天" matches "7天" and
"Seven Days" matches "seven days". A fact or phrase that normalises to the empty string
never matches: otherwise it would be found in every answer.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence

__all__ = [
    "DEFAULT_REFUSAL_PHRASES",
    "MAX_NORMALISED_CHARS",
    "answer_correct",
    "contains_any",
    "contains_fact",
    "count_facts",
    "fact_recall",
    "is_refusal",
    "needles",
    "normalise",
]

#: Phrases whose presence marks an answer as a refusal. The first seven are the contract's
#: defaults; the rest are close variants of them that models often write. Open-ended
#: phrases such as "无法确定" or "不知道" are left out: they also occur inside genuine
#: answers ("目前无法确定到账时间，一般 3 天") and would count them as refusals.
DEFAULT_REFUSAL_PHRASES: tuple[str, ...] = (
    "没有足够证据",
    "无法回答",
    "证据不足",
    "not enough evidence",
    "insufficient evidence",
    "cannot answer",
    "I don't know",
    "没有足够的证据",
    "can't answer",
    "unable to answer",
    "I do not know",
)

# Z* (separators) and P* (punctuation) per the contract; Cc and Cf cover the remaining
# invisible characters (control characters, zero-width space, soft hyphen, BOM).
_DROPPED_CATEGORIES = ("Z", "P", "Cc", "Cf")
# Unicode files the percent signs under punctuation (Po), yet "50%" must not match "50".
_KEPT_PUNCTUATION = frozenset("%٪‰‱")


def normalise(text: str) -> str:
    """Canonical form for matching: NFKC, case-folded, without spaces or punctuation.

    Steps: Unicode NFKC, ``str.casefold``, NFKC again (case folding can denormalise), then
    every character whose category starts with Z or P, is Cc or Cf, or is whitespace is
    removed. Symbols (``$``, ``+``) and percent signs (``%``, ``‰``; Unicode calls them
    punctuation) are kept. A last NFKC composes a combining mark with the letter a dropped
    space used to separate it from (NFKC turns "´" into a space and a combining acute), so
    that ``normalise`` is idempotent.

    Text that grows under NFKC is normalised only as far as it is kept: the result is at most
    :data:`MAX_NORMALISED_CHARS` characters, the start of what the whole text normalises to.

    Args:
        text: any text.

    Returns:
        The normalised text, possibly empty.
    """
    text = stream_safe(text)
    if len(text) <= _PIECE_CHARS:
        folded = _fold(text)
    else:
        parts, made = [], 0
        for piece in _pieces(text):
            part = _fold(piece)
            parts.append(part)
            made += len(part)
            if made >= MAX_NORMALISED_CHARS:
                break
        folded = "".join(parts)
    # folding drops separators, which can join runs of non-starters: bounded again
    return unicodedata.normalize("NFKC", stream_safe(folded))[:MAX_NORMALISED_CHARS]


def _fold(text: str) -> str:
    """:func:`normalise` but its last NFKC: NFKC, case-folded, NFKC, characters dropped."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return _drop(folded)


#: characters of normalised text made at most. NFKC grows text (one U+FDFA becomes 18
#: characters and costs about 6 µs): 65,536 U+FDFA normalised whole made 1.2 M characters and
#: held the scoring thread for 0.35 s, while the event loop took turns with it for the GIL.
#: Normalising stops once this much is made (about 3,700 U+FDFA, 20 ms); a fact found only
#: past it is not found.
MAX_NORMALISED_CHARS = 1 << 16

#: characters normalised per call of the C normaliser. One call holds the GIL for all its
#: work (U+FDFA costs about 6 µs, 18 characters after NFKC), so a long text is folded piece by
#: piece: another thread (the daemon's event loop, when the runner scores a long answer in a
#: worker thread) waits for one piece at most, about 7 ms, never for the whole text.
_PIECE_CHARS = 1024


def _pieces(text: str) -> Iterator[str]:
    """``text`` cut into pieces of about :data:`_PIECE_CHARS` where :func:`_fold` of the
    whole is the pieces' folds joined: each cut is just before a character that starts a
    new composition (:func:`_starts_fresh`). Without such a character a piece grows on.
    Cut as they are taken, so a caller that stops early cuts no further."""
    start = 0
    end = len(text)
    while end - start > _PIECE_CHARS:
        at = start + _PIECE_CHARS
        while at < end and not _starts_fresh(text[at]):
            at += 1
        yield text[start:at]
        start = at
    if start < end:
        yield text[start:]


#: consecutive non-starters (characters of a non-zero combining class) kept together, as
#: Unicode's Stream-Safe Text Format (UAX #15) bounds them: NFKC reorders a run of them by
#: insertion, so a run of n costs n² (65,536 alternating U+0301 and U+0316, a legal answer,
#: took 2.3 s to normalise, 11 s to score). No text of a language needs more than a few.
MAX_NON_STARTERS = 30
#: U+034F COMBINING GRAPHEME JOINER: a starter that composes with nothing, inserted after
#: each :data:`MAX_NON_STARTERS` (what UAX #15 prescribes)
_JOINER = "\u034f"


def stream_safe(text: str) -> str:
    """``text`` in Unicode's Stream-Safe Text Format: a :data:`_JOINER` after every
    :data:`MAX_NON_STARTERS` consecutive non-starters (text of any language is unchanged).
    One regular-expression pass (about 25 ns a character), where NFKC of an unbounded run
    was quadratic; the joiners are also where :func:`_pieces` may cut."""
    if _too_few_for_a_run(text):
        return text
    bmp, anywhere = _runs()
    runs = anywhere if _ASTRAL.search(text) is not None else bmp
    return text if runs.search(text) is None else runs.sub(_JOINED, text)


def _too_few_for_a_run(text: str) -> bool:
    """Whether ``text`` holds too few characters outside ASCII for a run of more than
    :data:`MAX_NON_STARTERS` non-starters: each of them (U+0300 and above) takes at least two
    bytes of UTF-8, so the bytes beyond one a character bound their number. One pass in C
    (the run searches scan every character twice); most answers, ASCII or not, stop here."""
    return len(text.encode("utf-8", "surrogatepass")) - len(text) <= MAX_NON_STARTERS


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
#: the replacement of a run :func:`_runs` found: the run, then the joiner
_JOINED = "\\g<0>" + _JOINER
#: the planes holding non-starters in this Python's Unicode database (the Basic and the
#: Supplementary Multilingual Plane; tests/scoring/test_answer.py checks none lies beyond)
_NON_STARTER_PLANES = 0x20000


@functools.cache
def _runs() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """:data:`MAX_NON_STARTERS` non-starters followed by one more: in text of the Basic
    Multilingual Plane alone (its class is a bitmap to the engine, about 25 ns a
    character), and in any text (the astral class tried only on an astral character: one
    class of every range was a scan of 190 ranges per character, 0.4 µs). Built on first
    use (about 70 ms: every code point of two planes looked up)."""
    bmp = _char_class(range(0x80, 0x10000))
    astral = _char_class(range(0x10000, _NON_STARTER_PLANES))
    one = f"(?:{bmp}|(?=[\\U00010000-\\U0010ffff]){astral})"
    run = f"{{{MAX_NON_STARTERS}}}"
    return re.compile(f"{bmp}{run}(?={bmp})"), re.compile(f"{one}{run}(?={one})")


def _char_class(codes: range) -> str:
    """A character class of the non-starters among ``codes``, as ranges."""
    spans: list[list[int]] = []
    for code in codes:
        if 0xD800 <= code <= 0xDFFF or not _non_starter(chr(code)):
            continue
        if spans and spans[-1][1] == code - 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    parts = (re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in spans)
    return "[" + "".join(parts) + "]"


def _non_starter(ch: str) -> bool:
    """Whether ``ch`` is a non-starter as UAX #15 counts them: its decomposition begins with a
    character of a non-zero combining class."""
    return unicodedata.combining(unicodedata.normalize("NFKD", ch)[0]) != 0


#: code point ranges whose characters never compose with a character before them (the
#: characters that do, such as U+0B3E or the Hangul vowel and final jamo, all lie outside;
#: tests/scoring/test_answer.py checks it against this Python's Unicode database): Latin,
#: Greek, Cyrillic, Armenian, Hebrew, Arabic; CJK symbols, kana and ideographs; Hangul
#: syllables
_FRESH_RANGES = ((0x0000, 0x0900), (0x3000, 0xA000), (0xAC00, 0xD7A4))


@functools.lru_cache(maxsize=4096)
def _starts_fresh(ch: str) -> bool:
    """Whether NFKC (and case folding) of a text cut just before ``ch`` is NFKC of each side
    joined: ``ch`` decomposes to a character of combining class 0 that composes with nothing
    before it (so nothing reorders or composes across the cut)."""
    first = unicodedata.normalize("NFKD", ch)[0]
    code = ord(first)
    return unicodedata.combining(first) == 0 and any(lo <= code < hi for lo, hi in _FRESH_RANGES)


def _kept(ch: str) -> bool:
    return ch in _KEPT_PUNCTUATION or not (
        ch.isspace() or unicodedata.category(ch).startswith(_DROPPED_CATEGORIES)
    )


#: the planes holding every character :func:`_kept` drops (the Basic and the Supplementary
#: Multilingual Plane, and the tags of plane 14; tests/scoring/test_answer.py checks none
#: lies elsewhere in this Python's Unicode database)
_PLANES_WITH_DROPPED = (0, 1, 14)
#: entries of the table at most: the dropped characters and the kept ones learned so far
_TABLE_LIMIT = 1 << 16
#: normalised texts between two whose kept characters are learned into the table
_LEARN_EVERY = 64
_calls = itertools.count()


@functools.cache
def _table() -> dict[int, int | None]:
    """``str.translate`` table of :func:`normalise`: every character :func:`_kept` drops ->
    None, and the kept characters learned so far -> themselves. A character missing from it
    is kept unchanged (``str.translate`` keeps what its table lacks), so the table is right
    whatever it has learned; what it has learned is read faster. A plain dict: a dict
    subclass filling itself on a miss (what it was) cost 39,000 instructions for a
    75-character answer, this 25,000. Built on first use (about 50 ms: three planes looked
    up)."""
    return {
        code: None
        for plane in _PLANES_WITH_DROPPED
        for code in range(plane << 16, (plane + 1) << 16)
        if not _kept(chr(code))
    }


def _drop(text: str) -> str:
    """``text`` without the characters :func:`_kept` drops; now and then its kept
    characters are learned into the table (every :data:`_LEARN_EVERY` calls: the frequent
    characters of a service's answers are learned within its first runs)."""
    table = _table()
    kept = text.translate(table)
    if next(_calls) % _LEARN_EVERY == 0 and len(table) < _TABLE_LIMIT:
        # every character left is a kept one: the table holds every dropped one
        codes = list(map(ord, kept))
        table.update(zip(codes, codes, strict=True))
    return kept


@functools.lru_cache(maxsize=8192)
def _normalised_needle(text: str) -> str:
    """:func:`normalise` of a fact or refusal phrase: the same few strings, every case."""
    return normalise(text)


def needles(alternatives: Sequence[str]) -> tuple[str, ...]:
    """The alternatives normalised, the empty ones (which match nothing) left out."""
    return tuple(n for n in map(_normalised_needle, alternatives) if n)


def contains_any(normalised_text: str, normalised_needles: Iterable[str]) -> bool:
    """Whether any needle occurs in the text, both already normalised (:func:`normalise`,
    :func:`needles`): the one substring test behind facts and refusals.

    ``found = any(needle in normalised_text for needle in normalised_needles)``; an empty
    needle would match every text, which is why :func:`needles` leaves them out.
    """
    # a loop, not any() over a generator: 0.27 against 0.46 µs, and this runs for every
    # fact and the refusal phrases of every scored case
    for needle in normalised_needles:  # noqa: SIM110
        if needle in normalised_text:
            return True
    return False


def contains_fact(normalised_answer: str, alternatives: Sequence[str]) -> bool:
    """Whether any alternative of one fact occurs in an already normalised answer.

    ``found = any(normalise(alt) != "" and normalise(alt) in normalised_answer)``.

    Args:
        normalised_answer: the output of :func:`normalise` for the answer.
        alternatives: the forms of one fact, any of which counts; a bare string is one
            alternative.

    Returns:
        True when a non-empty normalised alternative is a substring of the answer.
    """
    if type(alternatives) is not tuple:  # a golden set's facts are tuples already
        alternatives = (alternatives,) if isinstance(alternatives, str) else tuple(alternatives)
    return contains_any(normalised_answer, _needles_of(alternatives))


@functools.lru_cache(maxsize=8192)
def _needles_of(alternatives: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`needles` of one fact's alternatives: the same few facts, every case."""
    return needles(alternatives)


def count_facts(normalised_answer: str, expected_facts: Sequence[Sequence[str]]) -> int:
    """How many expected facts an already normalised answer contains: :func:`contains_fact`
    of each (one alternative of a fact is enough).

    Raises:
        ValueError: ``expected_facts`` is empty.
        TypeError: ``expected_facts`` is a bare string.
    """
    if isinstance(expected_facts, str):
        raise TypeError("expected_facts must be a sequence of facts, not one string")
    if not expected_facts:
        raise ValueError("expected_facts is empty: the answer has nothing to be checked against")
    found = 0
    for fact in expected_facts:
        if contains_fact(normalised_answer, fact):
            found += 1
    return found


def _facts_found(answer: str, expected_facts: Sequence[Sequence[str]]) -> int:
    return count_facts(normalise(answer), expected_facts)


def answer_correct(answer: str, expected_facts: Sequence[Sequence[str]]) -> bool:
    """Whether the answer contains every expected fact (one alternative of each).

    ``correct = all(contains_fact(normalise(answer), fact) for fact in expected_facts)``.

    Args:
        answer: the target's answer.
        expected_facts: one entry per fact, each a sequence of alternatives.

    Returns:
        True when every fact is found.

    Raises:
        ValueError: ``expected_facts`` is empty (a retrieval-only case is not scored).
        TypeError: ``expected_facts`` is a bare string.
    """
    return _facts_found(answer, expected_facts) == len(expected_facts)


def fact_recall(answer: str, expected_facts: Sequence[Sequence[str]]) -> float:
    """Partial credit: the share of expected facts the answer contains.

    ``fact_recall = |{facts found}| / |expected_facts|``.

    Args:
        answer: the target's answer.
        expected_facts: one entry per fact, each a sequence of alternatives.

    Returns:
        A value in [0, 1].

    Raises:
        ValueError: ``expected_facts`` is empty (a retrieval-only case is not scored).
        TypeError: ``expected_facts`` is a bare string.
    """
    return _facts_found(answer, expected_facts) / len(expected_facts)


def is_refusal(answer: str, phrases: Sequence[str] = DEFAULT_REFUSAL_PHRASES) -> bool:
    """Whether the answer contains a refusal phrase, both sides normalised.

    ``refused = any(normalise(p) != "" and normalise(p) in normalise(answer))``.

    Args:
        answer: the target's answer.
        phrases: refusal phrases; a bare string is one phrase.

    Returns:
        True when a non-empty normalised phrase occurs in the normalised answer.
    """
    return contains_fact(normalise(answer), phrases)
