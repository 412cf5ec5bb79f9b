"""Golden-set loading and validation: JSONL bytes in, a typed ``Dataset`` or every problem out.

Each non-blank line holds one case, a question::

    {"id": "refund-deadline", "question": "退款申请有期限吗？", "relevant_ids": ["refund-policy"],
     "expected_facts": ["七天"], "unanswerable": false, "tags": ["refund"]}

or a scripted conversation, whose turns each hold a question's fields (and optionally the
scripted ``assistant`` answer that later turns may be sent instead of the target's)::

    {"id": "refund-arrival", "tags": ["refund"], "turns": [
      {"question": "退款退到银行卡要多久？", "relevant_ids": ["refund-policy-zh-2"],
       "expected_facts": ["3-5个工作日"], "assistant": "通常需要3-5个工作日到账。"},
      {"question": "那退到支付宝呢？", "relevant_ids": ["refund-policy-zh-2"],
       "expected_facts": ["24小时"]}]}

The whole file is checked before anything is reported: :class:`~evaluator.errors.DatasetError`
carries one :class:`~evaluator.errors.DatasetProblem` per problem, each at its physical line.

One path builds a case: each line is decoded with Python's json module (which keeps a key
given twice, so it can be named) and checked field by field, building every message.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard, TypeVar, cast

from msgspec.structs import replace

from evaluator import border
from evaluator.bounds import MAX_HISTORY_BYTES, MAX_TURNS, clip
from evaluator.errors import DatasetError, DatasetProblem
from evaluator.models import (
    TURN_SEPARATOR,
    Case,
    Conversation,
    Dataset,
    GoldenCase,
    Turn,
    turn_id,
)

# one normal form for "this fact would match every answer" and for scoring itself
from evaluator.scoring.answer import normalise

__all__ = [
    "CONVERSATION_FIELDS",
    "KNOWN_FIELDS",
    "TURN_FIELDS",
    "check_files",
    "load_dataset",
    "parse_dataset",
]

#: Every field a case may have; anything else is reported (a typo must not be ignored).
KNOWN_FIELDS: tuple[str, ...] = (
    "id",
    "question",
    "relevant_ids",
    "expected_facts",
    "unanswerable",
    "tags",
    "turns",
)
#: The fields of a conversation (a case with ``turns``) ...
CONVERSATION_FIELDS: tuple[str, ...] = ("id", "turns", "tags")
#: ... and of each of its turns.
TURN_FIELDS: tuple[str, ...] = (
    "question",
    "relevant_ids",
    "expected_facts",
    "unanswerable",
    "assistant",
)

_KNOWN = frozenset(KNOWN_FIELDS)
_CONVERSATION = frozenset(CONVERSATION_FIELDS)
_TURN = frozenset(TURN_FIELDS)
_BOM = "\ufeff"
_MAX_SHOWN = 60  # characters of a user value quoted in a message
#: highest relevance grade: nDCG divides grades as floats, and a 400-digit grade overflowed
MAX_GRADE = 10**15


def parse_dataset(data: bytes, path: str) -> Dataset:
    """Parse and validate a golden set held in memory.

    Args:
        data: the file's raw bytes (UTF-8, optionally with a byte-order mark).
        path: where the bytes came from; names the problems and the dataset.

    Returns:
        The dataset: its cases in file order, ``name`` the file stem, ``content_hash`` the
        sha256 of ``data``.

    Raises:
        DatasetError: with every problem found, each at its physical line (0 for the file).
    """
    cases, problems = _check(data, path)
    if problems:
        raise DatasetError(problems)
    return Dataset(
        path=path,
        name=Path(path).stem,
        cases=tuple(cases),
        content_hash=hashlib.sha256(data).hexdigest(),
    )


def load_dataset(path: str | os.PathLike[str]) -> Dataset:
    """Read a golden-set file (JSONL) and parse it with :func:`parse_dataset`.

    Raises:
        DatasetError: the file cannot be read (one problem at line 0 naming the OS reason),
            or it is invalid (every problem).
    """
    name = os.fspath(path)
    try:
        data = border.read_file(name)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        message = f"cannot read the golden set: {reason}"
        raise DatasetError([DatasetProblem(name, 0, message)]) from exc
    return parse_dataset(data, name)


def check_files(paths: Iterable[str | os.PathLike[str]]) -> list[DatasetProblem]:
    """Validate several golden-set files, as ``evaluator validate FILE...`` does.

    Args:
        paths: the files, checked in order.

    Returns:
        Every problem of every file, in file then line order; empty when all are valid.
    """
    problems: list[DatasetProblem] = []
    for path in paths:
        try:
            load_dataset(path)
        except DatasetError as exc:
            problems.extend(exc.problems)
    return problems


# --- whole file -------------------------------------------------------------------------------


def _check(data: bytes, path: str) -> tuple[list[GoldenCase], list[DatasetProblem]]:
    """Every valid case and every problem of one file."""
    cases: list[GoldenCase] = []
    problems: list[DatasetProblem] = []
    first_line_of: dict[str, int] = {}
    saw_content = False
    # one line at a time, in C (a list of every line of a 100,000-case file would leave
    # its memory scattered between the cases built from it)
    for number, line in enumerate(io.BytesIO(data), start=1):
        parsed = _read_line(line.removesuffix(b"\n"), first=number == 1)
        if parsed is None:
            continue
        saw_content = True
        if isinstance(parsed, str):
            problems.append(DatasetProblem(path, number, parsed))
            continue
        case, ids, messages = _build_case(parsed, number)
        # the first line of each id is recorded; a later one is a problem
        for case_id in ids:
            if (first := first_line_of.setdefault(case_id, number)) != number:
                messages.append(f"duplicate id {_quote(case_id)} (first used on line {first})")
        problems.extend(DatasetProblem(path, number, message) for message in messages)
        if case is not None and not messages:
            cases.append(case)
    if not saw_content:
        message = "empty golden set: no case (the file is empty or has only blank lines)"
        problems.append(DatasetProblem(path, 0, message))
    return cases, problems


# --- one line: bytes -> JSON object -------------------------------------------------------------


class _JsonObject(dict[str, object]):
    """A decoded JSON object that remembers the keys given more than once."""

    __slots__ = ("repeated_keys",)

    def __init__(self, pairs: list[tuple[str, object]]) -> None:
        super().__init__(pairs)
        if len(self) == len(pairs):  # no key twice: the common case, without counting
            self.repeated_keys: tuple[str, ...] = ()
            return
        counts = Counter(key for key, _ in pairs)
        self.repeated_keys = tuple(key for key, count in counts.items() if count > 1)


class _NonStandardJSON(ValueError):
    """NaN or Infinity: accepted by Python's json module, but not JSON."""


def _reject_constant(name: str) -> object:
    raise _NonStandardJSON(f"{name} is not valid JSON")


#: one decoder for every line (``json.loads`` with hooks builds a new one per call)
_DECODER = json.JSONDecoder(object_pairs_hook=_JsonObject, parse_constant=_reject_constant)


def _read_line(raw: bytes, *, first: bool) -> _JsonObject | str | None:
    """Decode one physical line: the object, a problem message, or None for a blank line."""
    raw = raw.removesuffix(b"\r")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start]
        return f"not valid UTF-8: byte 0x{bad:02x} at byte {exc.start + 1} of the line"
    if first:
        text = text.removeprefix(_BOM)
    if not text.strip():
        return None
    if text.startswith(_BOM):
        return "byte-order mark (U+FEFF) on a later line: it is only accepted at the file's start"
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return f"malformed JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return "malformed JSON: nested too deeply"
    except _NonStandardJSON as exc:
        return f"malformed JSON: {exc}"
    except ValueError:  # Python refuses to convert integers of more than 4300 digits
        return "malformed JSON: a number has too many digits"
    if not isinstance(value, _JsonObject):
        return f"not a JSON object (got {_describe(value)}): each line must hold one case"
    return value


# --- one JSON object -> Case ------------------------------------------------------------------


def _build_case(obj: _JsonObject, number: int) -> tuple[GoldenCase | None, list[str], list[str]]:
    """The case on line ``number`` (or None), the ids it takes (none when unusable: a
    conversation takes its own and each turn's), and every problem found in it (in field
    order, then the rules across fields)."""
    messages = [f"field {_quote(key)} is given more than once" for key in obj.repeated_keys]
    if "turns" in obj:
        return _build_conversation(obj, number, messages)
    case_id, asked, tags = _question_fields(obj, messages)
    ids = [] if case_id is None else [case_id]
    if messages or case_id is None or asked is None or asked.question is None:
        return None, ids, messages
    case = Case(
        id=case_id,
        question=asked.question,
        relevance=asked.relevance or {},
        expected_facts=asked.facts or (),
        unanswerable=asked.unanswerable,
        tags=tags,
        line=number,
        graded=asked.graded,
    )
    return case, ids, messages


def _question_fields(
    obj: _JsonObject, messages: list[str]
) -> tuple[str | None, _Asked | None, tuple[str, ...]]:
    """A case's own fields (its id, its question's, its tags), each None where missing or
    invalid; problems appended in field order, then the rules across fields."""
    if not _KNOWN.issuperset(obj):
        messages.extend(_unknown_field(key) for key in obj if key not in _KNOWN)
    case_id = _required_text(obj, "id", messages)
    asked = _asked(obj, messages)
    tags = _optional_tags(obj, messages)
    if asked is not None:  # the rules across fields need a valid flag
        messages.extend(_consistency(obj, asked))
    return case_id, asked, tags


@dataclass(frozen=True, slots=True)
class _Asked:
    """The fields of one question (a case of its own, or a turn), each None where missing
    or invalid; ``unanswerable`` is valid (a mistyped flag makes no ``_Asked``)."""

    question: str | None
    unanswerable: bool
    relevance: dict[str, int] | None
    graded: bool
    facts: tuple[tuple[str, ...], ...] | None


def _asked(obj: _JsonObject, messages: list[str]) -> _Asked | None:
    """The question's fields; None when its ``unanswerable`` flag is mistyped (the rules
    across fields cannot be checked then). Problems are appended in field order."""
    question = _required_text(obj, "question", messages)
    unanswerable = obj.get("unanswerable", False)
    if not isinstance(unanswerable, bool):
        messages.append(
            f'field "unanswerable" must be true or false (got {_describe(unanswerable)})'
        )
    relevance: dict[str, int] | None = None
    graded = False
    facts: tuple[tuple[str, ...], ...] | None = None
    if "relevant_ids" in obj:
        relevance, graded = _relevance(obj["relevant_ids"], messages)
    if "expected_facts" in obj:
        facts = _expected_facts(obj["expected_facts"], messages)
    if not isinstance(unanswerable, bool):
        return None
    return _Asked(question, unanswerable, relevance, graded, facts)


def _consistency(obj: _JsonObject, asked: _Asked) -> list[str]:
    """Rules across a question's fields (``relevance`` and ``facts`` None where absent or
    invalid)."""
    relevance, facts = asked.relevance, asked.facts
    if asked.unanswerable:
        problems = []
        if relevance:
            problems.append(
                'unanswerable case has relevant ids: remove "relevant_ids" '
                '(or set "unanswerable": false)'
            )
        if facts:
            problems.append(
                'unanswerable case has expected facts: remove "expected_facts" '
                '(or set "unanswerable": false)'
            )
        return problems
    if "relevant_ids" not in obj:
        return ['missing required field "relevant_ids" (required unless "unanswerable" is true)']
    if relevance == {}:
        return [
            'answerable case has no relevant ids: "relevant_ids" is empty '
            '(set "unanswerable": true if the knowledge base holds no evidence)'
        ]
    return []


# --- one JSON object with "turns" -> Conversation ----------------------------------------------


def _build_conversation(
    obj: _JsonObject, number: int, messages: list[str]
) -> tuple[Conversation | None, list[str], list[str]]:
    """The conversation on line ``number`` (or None), the ids it takes (its own and each
    turn's), and every problem: the conversation's own first, then each turn's, prefixed
    ``turn N:``, then its bounds."""
    messages.extend(_misplaced(key) for key in obj if key not in _CONVERSATION)
    conversation_id = _conversation_id(obj, messages)
    tags = _optional_tags(obj, messages)
    turns = _turns(obj["turns"], conversation_id, tags, number, messages)
    ids = _conversation_ids(conversation_id, turns)
    if messages or conversation_id is None or turns is None:
        return None, ids, messages
    conversation = Conversation(id=conversation_id, turns=turns, tags=tags, line=number)
    return conversation, ids, messages


def _optional_tags(obj: _JsonObject, messages: list[str]) -> tuple[str, ...]:
    """The ``tags`` field, none where absent or invalid (its problem appended)."""
    return (_tags(obj["tags"], messages) or ()) if "tags" in obj else ()


def _conversation_ids(conversation_id: str | None, turns: tuple[Case, ...] | None) -> list[str]:
    """The ids a conversation takes: its own and, with valid turns, each turn's."""
    if conversation_id is None:
        return []
    return [conversation_id, *(turn.id for turn in turns or ())]


def _conversation_id(obj: _JsonObject, messages: list[str]) -> str | None:
    """A conversation's id, None where missing or invalid: it may not hold the separator
    of its turns' ids."""
    conversation_id = _required_text(obj, "id", messages)
    if conversation_id is not None and TURN_SEPARATOR in conversation_id:
        messages.append(
            f'field "id" of a conversation must not hold {_quote(TURN_SEPARATOR)}: its turns '
            f"are known as {turn_id('<id>', 1)}, {turn_id('<id>', 2)}..."
        )
        return None
    return conversation_id


def _misplaced(key: str) -> str:
    """The problem for a field a conversation does not take."""
    if key in _TURN:
        return f'field {_quote(key)} belongs in each turn when "turns" is given'
    close = difflib.get_close_matches(key.lower(), CONVERSATION_FIELDS, n=1)
    if close:
        return f"unknown field {_quote(key)} (did you mean {_quote(close[0])}?)"
    return (
        f"unknown field {_quote(key)} (a conversation's fields: {', '.join(CONVERSATION_FIELDS)})"
    )


def _turns(
    value: object,
    conversation_id: str | None,
    tags: tuple[str, ...],
    number: int,
    messages: list[str],
) -> tuple[Case, ...] | None:
    """The conversation's turns as cases (None when any is invalid), within the bounds."""
    if type(value) is not list:
        messages.append(f'field "turns" must be a list of turns (got {_describe(value)})')
        return None
    if not value:
        messages.append('field "turns" is empty: a conversation has at least one turn')
        return None
    if len(value) > MAX_TURNS:
        # not read further: each turn would send every earlier one again
        messages.append(
            f'field "turns" holds {len(value)} turns: a conversation holds at most {MAX_TURNS}'
        )
        return None
    before = len(messages)
    turns = []
    for position, item in enumerate(value, start=1):
        found: list[str] = []
        turn = _turn(item, conversation_id or "", position, position == len(value), found)
        messages.extend(f"turn {position}: {message}" for message in found)
        if turn is not None:
            turns.append(replace(turn, tags=tags, line=number))
    if len(messages) > before:
        return None
    scripted = _scripted_bytes(turns)
    if scripted > MAX_HISTORY_BYTES:
        messages.append(
            f"the conversation's questions and scripted answers are {scripted} bytes: "
            f"at most {MAX_HISTORY_BYTES} (it is sent again as history in every later turn)"
        )
        return None
    return tuple(turns)


def _scripted_bytes(turns: list[Case]) -> int:
    """UTF-8 bytes of the turns' questions and scripted answers."""
    total = 0
    for turn in turns:
        total += len(turn.question.encode())
        if turn.turn is not None and turn.turn.assistant is not None:
            total += len(turn.turn.assistant.encode())
    return total


def _turn(
    obj: object, conversation_id: str, position: int, last: bool, messages: list[str]
) -> Case | None:
    """Turn ``position`` of a conversation as its case (tags and line set by the caller)."""
    if not isinstance(obj, _JsonObject):
        messages.append(f"not a JSON object (got {_describe(obj)}): each turn is an object")
        return None
    messages.extend(_turn_field_problems(obj))
    asked = _asked(obj, messages)
    assistant = _assistant(obj, last, messages) if "assistant" in obj else None
    if asked is not None:
        messages.extend(_consistency(obj, asked))
    if messages or asked is None or asked.question is None:
        return None
    return Case(
        id=turn_id(conversation_id, position),
        question=asked.question,
        relevance=asked.relevance or {},
        expected_facts=asked.facts or (),
        unanswerable=asked.unanswerable,
        graded=asked.graded,
        turn=Turn(conversation=conversation_id, position=position, assistant=assistant),
    )


def _turn_field_problems(obj: _JsonObject) -> list[str]:
    """A turn's repeated and unknown fields."""
    repeated = [f"field {_quote(key)} is given more than once" for key in obj.repeated_keys]
    return repeated + [_unknown_turn_field(key) for key in obj if key not in _TURN]


def _assistant(obj: _JsonObject, last: bool, messages: list[str]) -> str | None:
    """A turn's scripted answer (None where invalid); on the last turn it is never sent,
    which is a problem too."""
    assistant = _as_text(obj["assistant"], 'field "assistant"', messages)
    if last:
        messages.append(
            'field "assistant" on the last turn is never sent: a scripted answer stands '
            "in for the target's in later turns only"
        )
    return assistant


def _unknown_turn_field(key: str) -> str:
    """The problem for a field a turn does not take, suggesting the closest turn field."""
    if key in _CONVERSATION:
        return f"field {_quote(key)} belongs to the conversation, not to a turn"
    close = difflib.get_close_matches(key.lower(), TURN_FIELDS, n=1)
    if close:
        return f"unknown field {_quote(key)} (did you mean {_quote(close[0])}?)"
    return f"unknown field {_quote(key)} (a turn's fields: {', '.join(TURN_FIELDS)})"


def _unknown_field(key: str) -> str:
    """The problem for a field we do not know, suggesting the closest known one."""
    close = difflib.get_close_matches(key.lower(), KNOWN_FIELDS, n=1)
    if close:
        return f"unknown field {_quote(key)} (did you mean {_quote(close[0])}?)"
    return f"unknown field {_quote(key)} (known fields: {', '.join(KNOWN_FIELDS)})"


def _required_text(obj: _JsonObject, name: str, messages: list[str]) -> str | None:
    """A required non-blank string field, kept verbatim (not shared: ids and questions are
    one per case)."""
    if name not in obj:
        messages.append(f"missing required field {_quote(name)}")
        return None
    value = obj[name]
    return value if _usable(value) else _as_text(value, f"field {_quote(name)}", messages)


def _relevance(value: object, messages: list[str]) -> tuple[dict[str, int] | None, bool]:
    """``relevant_ids`` as ``({id: grade}, graded)``; a list means grade 1 for each id."""
    if type(value) is list:
        return _relevance_list(value, messages), False
    if isinstance(value, _JsonObject):
        return _relevance_grades(value, messages), True
    messages.append(
        'field "relevant_ids" must be a list of ids or an object {id: grade} '
        f"(got {_describe(value)})"
    )
    return None, False


def _relevance_list(items: list[object], messages: list[str]) -> dict[str, int] | None:
    before = len(messages)
    # the message is built only for an item that is not a usable string (`or`)
    ids = [
        doc_id
        for index, item in enumerate(items, start=1)
        if (doc_id := _text(item) or _as_text(item, f'field "relevant_ids" item {index}', messages))
        is not None
    ]
    relevance = dict.fromkeys(ids, 1)
    if len(relevance) != len(ids):
        messages.extend(
            f'field "relevant_ids" lists id {_quote(doc_id)} more than once'
            for doc_id, count in Counter(ids).items()
            if count > 1
        )
    return relevance if len(messages) == before else None


def _relevance_grades(grades: _JsonObject, messages: list[str]) -> dict[str, int] | None:
    before = len(messages)
    messages.extend(
        f'field "relevant_ids" lists id {_quote(doc_id)} more than once'
        for doc_id in grades.repeated_keys
    )
    relevance: dict[str, int] = {}
    for key, grade in grades.items():
        doc_id = _text(key) or _as_text(key, 'field "relevant_ids" id', messages)
        if doc_id is None:
            continue
        if type(grade) is not int or grade < 1:  # a bool is an int, but not of type int
            messages.append(
                f'field "relevant_ids" grade of {_quote(doc_id)} must be an integer >= 1 '
                f"(got {_describe(grade)})"
            )
        elif grade > MAX_GRADE:
            messages.append(
                f'field "relevant_ids" grade of {_quote(doc_id)} must be at most 10**15 '
                f"(got {_describe(grade)})"
            )
        else:
            relevance[doc_id] = grade
    return relevance if len(messages) == before else None


def _expected_facts(value: object, messages: list[str]) -> tuple[tuple[str, ...], ...] | None:
    """``expected_facts``: each item a fact, or a list of alternatives any one of which counts."""
    if type(value) is not list:
        messages.append(
            f'field "expected_facts" must be a list (got {_describe(value)}); '
            'write ["fact"] for a single fact'
        )
        return None
    before = len(messages)
    facts: list[tuple[str, ...]] = []
    # each place is named (an f-string built) only for an item that is not a fact
    for index, item in enumerate(value, start=1):
        if type(item) is not list:
            fact = _fact(item)
            if fact is None:
                _not_a_fact(item, f'field "expected_facts" item {index}', messages)
            else:
                facts.append((fact,))
            continue
        if not item:
            messages.append(f'field "expected_facts" item {index} is an empty list of alternatives')
        alternatives = []
        for n, alternative in enumerate(item, start=1):
            fact = _fact(alternative)
            if fact is None:
                where = f'field "expected_facts" item {index} alternative {n}'
                _not_a_fact(alternative, where, messages)
            else:
                alternatives.append(fact)
        facts.append(tuple(alternatives))
    # one tuple for each distinct list of facts (a golden set repeats them), its facts with it
    return _shared_tuple(tuple(facts)) if len(messages) == before else None


def _fact(value: object) -> str | None:
    """``value``, shared, when it is a usable fact: a usable string that does not match
    every answer."""
    fact = _text(value)
    return None if fact is None or _matches_everything(fact) else fact


def _not_a_fact(value: object, where: str, messages: list[str]) -> None:
    """Append why ``value`` is not a usable fact."""
    if _as_text(value, where, messages) is not None:
        messages.append(
            f"{where} {_quote(str(value))} is only punctuation or whitespace: "
            "it would match every answer"
        )


@functools.lru_cache(maxsize=4096)
def _matches_everything(fact: str) -> bool:
    """Nothing is left of ``fact`` once normalised (cached: golden sets repeat facts)."""
    return not normalise(fact)


def _tags(value: object, messages: list[str]) -> tuple[str, ...] | None:
    """``tags``: a list of non-blank strings for slicing results."""
    if type(value) is not list:
        messages.append(f'field "tags" must be a list of strings (got {_describe(value)})')
        return None
    before = len(messages)
    tags = tuple(
        tag
        for index, item in enumerate(value, start=1)
        if (tag := _text(item) or _as_text(item, f'field "tags" item {index}', messages))
        is not None
    )
    return _shared_tuple(tags) if len(messages) == before else None


# --- small helpers ------------------------------------------------------------------------------


def _usable(value: object) -> TypeGuard[str]:
    """What :func:`_as_text` accepts, without building the message it would need."""
    # an ASCII string cannot hold a surrogate: most ids and tags are not encoded to check
    return (
        type(value) is str
        and bool(value.strip())
        and (value.isascii() or not _has_lone_surrogate(value))
    )


def _text(value: object) -> str | None:
    """``value`` when :func:`_usable`, as one string object for each distinct tag, id and
    fact of a golden set (the same few on 100,000 cases are one string each, not 100,000);
    else None."""
    if type(value) is str:
        # a tag or fact already found usable is not checked again (half a million checks
        # over a 100,000-case file, for a few distinct strings)
        known = _USABLE.get(value)
        if known is not None:
            return known
    if not _usable(value):
        return None
    text = sys.intern(value)
    if len(_USABLE) < _MAX_USABLE:
        _USABLE[text] = text
    return text


#: usable strings seen in golden sets, shared; bounded: ids are mostly one per case
_USABLE: dict[str, str] = {}
_MAX_USABLE = 10_000


_TUPLES: dict[tuple[object, ...], tuple[object, ...]] = {}
#: distinct tag lists and fact lists shared: a golden set has few; more are left unshared
_MAX_SHARED_TUPLES = 10_000
_T = TypeVar("_T", bound=tuple[object, ...])


def _shared_tuple(items: _T) -> _T:
    """One tuple object for each distinct tag list or fact (immutable, so safely shared by
    every case, and every golden set, that has it)."""
    if len(_TUPLES) >= _MAX_SHARED_TUPLES:
        return cast(_T, _TUPLES.get(items, items))
    return cast(_T, _TUPLES.setdefault(items, items))


def _as_text(value: object, where: str, messages: list[str]) -> str | None:
    """``value`` when it is a usable non-blank string; else None after appending why not."""
    if not isinstance(value, str) or not value.strip():
        messages.append(f"{where} must be a non-empty string (got {_describe(value)})")
        return None
    if _has_lone_surrogate(value):
        messages.append(f"{where} is not valid Unicode (an unpaired surrogate in {_quote(value)})")
        return None
    return value


def _has_lone_surrogate(text: str) -> bool:
    """JSON allows ``"\\ud800"``, but such a string cannot be written back as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _describe(value: object) -> str:
    """A short JSON-flavoured description of a value for messages: its type, and its value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"number {clip(repr(value), _MAX_SHOWN)}"
    if isinstance(value, str):
        return f"string {_quote(value)}"
    if isinstance(value, list):
        return "array"
    return "object"


def _quote(text: str) -> str:
    """``text`` quoted on one printable line, shortened if long; invisible characters escaped."""
    quoted = json.dumps(clip(text, _MAX_SHOWN), ensure_ascii=False)
    return "".join(char if char.isprintable() else _escape(char) for char in quoted)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
