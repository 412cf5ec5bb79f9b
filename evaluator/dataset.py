"""Golden-set loading and validation: JSONL bytes in, a typed ``Dataset`` or every problem out.

Each non-blank line holds one case::

    {"id": "refund-deadline", "question": "退款申请有期限吗？", "relevant_ids": ["refund-policy"],
     "expected_facts": ["七天"], "unanswerable": false, "tags": ["refund"]}

The whole file is checked before anything is reported: :class:`~evaluator.errors.DatasetError`
carries one :class:`~evaluator.errors.DatasetProblem` per problem, each at its physical line.

Two paths build a case. The fast one decodes a line against a typed schema (msgspec, in C)
and only accepts a line it can prove valid; every other line (a problem, a blank line, a key
that may be given twice, a byte-order mark, an unusual layout) goes to the exact one, which
decodes with Python's json module and builds every message. A valid line gives the same
:class:`~evaluator.models.Case` on either path (tests/test_dataset_fast.py).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import io
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from evaluator import border
from evaluator.errors import DatasetError, DatasetProblem
from evaluator.models import Case, Dataset

# one normal form for "this fact would match every answer" and for scoring itself
from evaluator.scoring.answer import normalise

__all__ = ["KNOWN_FIELDS", "check_files", "load_dataset", "parse_dataset"]

#: Every field a case may have; anything else is reported (a typo must not be ignored).
KNOWN_FIELDS: tuple[str, ...] = (
    "id",
    "question",
    "relevant_ids",
    "expected_facts",
    "unanswerable",
    "tags",
)

_KNOWN = frozenset(KNOWN_FIELDS)
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
    """Read a golden-set file and parse it with :func:`parse_dataset`.

    Args:
        path: the JSONL file.

    Returns:
        The validated dataset.

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


def _check(data: bytes, path: str) -> tuple[list[Case], list[DatasetProblem]]:
    """Every valid case and every problem of one file."""
    cases: list[Case] = []
    problems: list[DatasetProblem] = []
    first_line_of: dict[str, int] = {}
    saw_content = False
    # a key's closing quote, then optionally JSON whitespace, then its colon: almost every
    # file has no whitespace there, and bytes.count is far cheaper than a regex per line
    count_keys = _count_spaced_keys if _may_space_keys(data) else _count_keys
    # one line at a time, in C (a list of every line of a 100,000-case file would leave
    # its memory scattered between the cases built from it); each line keeps its b"\n",
    # which is JSON whitespace to the fast path (a last line without one is read too)
    for number, line in enumerate(io.BytesIO(data), start=1):
        fast = _fast_case(line, number, count_keys)
        if fast is not None and first_line_of.setdefault(fast.id, number) == number:
            saw_content = True
            cases.append(fast)
            continue
        raw = line.removesuffix(b"\n")
        parsed = _read_line(raw, first=number == 1)
        if parsed is None:
            continue
        saw_content = True
        if isinstance(parsed, str):
            problems.append(DatasetProblem(path, number, parsed))
            continue
        case, case_id, messages = _build_case(parsed, number)
        messages.extend(_duplicate_id(case_id, number, first_line_of))
        problems.extend(DatasetProblem(path, number, message) for message in messages)
        if case is not None and not messages:
            cases.append(case)
    if not saw_content:
        message = "empty golden set: no case (the file is empty or has only blank lines)"
        problems.append(DatasetProblem(path, 0, message))
    return cases, problems


def _duplicate_id(case_id: str | None, number: int, first_line_of: dict[str, int]) -> list[str]:
    """A problem when this case's id was used on an earlier line; records the id otherwise."""
    if case_id is None:
        return []
    first = first_line_of.setdefault(case_id, number)
    if first == number:
        return []
    return [f"duplicate id {_quote(case_id)} (first used on line {first})"]


# --- one line, fast: bytes -> Case, or None for the exact path ----------------------------------


class _FastLine(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """The schema of a valid line; a field left UNSET was absent. Lists decode as tuples:
    hashable, so a list seen on an earlier case is validated by one lookup."""

    id: str
    question: str
    relevant_ids: tuple[str, ...] | dict[str, int] | UnsetType = UNSET
    expected_facts: tuple[str | tuple[str, ...], ...] | UnsetType = UNSET
    unanswerable: bool | UnsetType = UNSET
    tags: tuple[str, ...] | UnsetType = UNSET


#: msgspec refuses invalid UTF-8 and unpaired surrogates (raw or escaped), NaN, Infinity,
#: trailing data, a byte-order mark, bools or floats as integers, unknown fields: each of
#: those lines goes to the exact path, which names the problem
_FAST_DECODER = msgspec.json.Decoder(_FastLine)
_SPACED_KEY = re.compile(rb'"[ \t\r]+:')
_KEY_END = re.compile(rb'"[ \t\r]*:')


def _may_space_keys(data: bytes) -> bool:
    """Whether a key may be spaced from its colon anywhere in ``data`` (a quote followed
    by JSON whitespace is rare in a file without spaced keys: then the regex decides)."""
    # a tab or a carriage return is one memchr away from ruled out (most files have
    # neither), a two-byte search for each is a slower scan of the whole file
    spaced = (
        b'" ' in data or (b"\t" in data and b'"\t' in data) or (b"\r" in data and b'"\r' in data)
    )
    return spaced and _SPACED_KEY.search(data) is not None


def _count_keys(raw: bytes) -> int:
    return raw.count(b'":')


def _count_spaced_keys(raw: bytes) -> int:
    return len(_KEY_END.findall(raw))


def _fast_case(raw: bytes, number: int, count_keys: Callable[[bytes], int]) -> Case | None:
    """The case on this line if it is certainly valid, else None (the exact path decides).

    msgspec keeps the last of a key given twice without saying so. Every key of a line,
    repeated or not, ends in a quote followed by its colon (``count_keys`` counts those,
    and also any ``":`` inside a string, escaped as ``\\":``): so when that count equals
    the number of distinct keys decoded, no key was given twice. When it is larger (a
    repeat, or such a string), the line goes to the exact path.
    """
    try:
        line = _FAST_DECODER.decode(raw)
    except msgspec.DecodeError:  # a ValidationError is one too
        return None
    case_id, question = line.id, line.question
    if not case_id.strip() or not question.strip():
        return None
    # the common case inline (a table lookup per list); the helpers validate a new list
    keys = 2
    unanswerable = line.unanswerable
    if unanswerable is UNSET:
        unanswerable = False
    else:
        keys = 3
    relevance: dict[str, int] | None = {}
    graded = False
    given = line.relevant_ids
    if type(given) is tuple:
        keys += 1
        ids = _VALID_IDS.get(given) or _fast_ids(given)
        relevance = None if ids is None else dict.fromkeys(ids, 1)
    elif type(given) is dict:
        keys += 1 + len(given)
        graded = True
        relevance = _fast_grades(given)
    # absent relevant_ids leave {}: also refused here unless the case is unanswerable
    if relevance is None or unanswerable == bool(relevance):
        return None
    facts: tuple[tuple[str, ...], ...] | None = ()
    given_facts = line.expected_facts
    if given_facts is not UNSET:
        keys += 1
        if given_facts:
            if unanswerable:
                return None
            facts = _VALID_FACTS.get(given_facts) or _fast_facts(given_facts)
    tags: tuple[str, ...] | None = ()
    given_tags = line.tags
    if given_tags is not UNSET:
        keys += 1
        if given_tags:
            tags = _VALID_TAGS.get(given_tags) or _fast_tags(given_tags)
    if facts is None or tags is None:
        return None
    if count_keys(raw) != keys:
        return None
    return Case(
        id=case_id,
        question=question,
        relevance=relevance,
        expected_facts=facts,
        unanswerable=unanswerable,
        tags=tags,
        line=number,
        graded=graded,
    )


# Lists already validated, each mapped to its shared form (interned strings): a golden set
# repeats a few tag lists, id lists and facts on every case. Capped like _TUPLES.
_VALID_TAGS: dict[tuple[str, ...], tuple[str, ...]] = {}
_VALID_IDS: dict[tuple[str, ...], tuple[str, ...]] = {}
_VALID_GRADES: dict[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]] = {}
_VALID_FACTS: dict[tuple[str | tuple[str, ...], ...], tuple[tuple[str, ...], ...]] = {}
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(table: dict[_K, _V], key: _K, value: _V) -> _V:
    if len(table) < _MAX_SHARED_TUPLES:
        table[key] = value
    return value


def _fast_tags(tags: tuple[str, ...]) -> tuple[str, ...] | None:
    """``tags`` as :func:`_tags` builds them, or None if one is unusable."""
    known = _VALID_TAGS.get(tags)
    if known is not None:
        return known
    for tag in tags:
        if not tag.strip():
            return None
    return _remember(_VALID_TAGS, tags, _shared_tuple(tuple(map(sys.intern, tags))))


def _fast_ids(ids: tuple[str, ...]) -> tuple[str, ...] | None:
    """A list of ``relevant_ids`` (its ids, interned) as :func:`_relevance_list` accepts
    it, or None."""
    known = _VALID_IDS.get(ids)
    if known is None:
        for doc_id in ids:
            if not doc_id.strip():
                return None
        if len(set(ids)) != len(ids):
            return None
        known = _remember(_VALID_IDS, ids, tuple(map(sys.intern, ids)))
    return known


def _fast_grades(grades: dict[str, int]) -> dict[str, int] | None:
    """Graded ``relevant_ids`` as :func:`_relevance_grades` builds them, or None."""
    items = tuple(grades.items())
    known = _VALID_GRADES.get(items)
    if known is None:
        for doc_id, grade in items:
            # a grade too large for Python's json module to read is the exact path's to name
            if not 1 <= grade <= MAX_GRADE or not doc_id.strip():
                return None
        shared = tuple((sys.intern(doc_id), grade) for doc_id, grade in items)
        known = _remember(_VALID_GRADES, items, shared)
    return dict(known)


def _fast_facts(items: tuple[str | tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...] | None:
    """``expected_facts`` as :func:`_expected_facts` builds them, or None."""
    known = _VALID_FACTS.get(items)
    if known is not None:
        return known
    facts: list[tuple[str, ...]] = []
    for item in items:
        alternatives = (item,) if type(item) is str else item
        if not alternatives:
            return None
        for fact in alternatives:
            if not fact.strip() or _matches_everything(fact):
                return None
        facts.append(_shared_tuple(tuple(map(sys.intern, alternatives))))
    return _remember(_VALID_FACTS, items, _shared_tuple(tuple(facts)))


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


@dataclass
class _Fields:
    """The typed values of one case's fields; None where a field is absent or invalid."""

    messages: list[str] = field(default_factory=list)
    id: str | None = None
    question: str | None = None
    relevance: dict[str, int] | None = None
    graded: bool = False
    expected_facts: tuple[tuple[str, ...], ...] | None = None
    unanswerable: bool | None = None
    tags: tuple[str, ...] | None = None


def _build_case(obj: _JsonObject, number: int) -> tuple[Case | None, str | None, list[str]]:
    """The case on line ``number`` (or None), its id (None when unusable), and every problem
    found in it."""
    found = _Fields()
    if obj.repeated_keys:
        found.messages.extend(
            f"field {_quote(key)} is given more than once" for key in obj.repeated_keys
        )
    if not _KNOWN.issuperset(obj):
        found.messages.extend(_unknown_field(key) for key in obj if key not in _KNOWN)
    found.id = _required_text(obj, "id", found.messages)
    found.question = _required_text(obj, "question", found.messages)
    found.unanswerable = _unanswerable(obj, found.messages)
    if "relevant_ids" in obj:
        found.relevance, found.graded = _relevance(obj["relevant_ids"], found.messages)
    if "expected_facts" in obj:
        found.expected_facts = _expected_facts(obj["expected_facts"], found.messages)
    if "tags" in obj:
        found.tags = _tags(obj["tags"], found.messages)
    found.messages.extend(_consistency(obj, found))
    if found.messages or found.id is None or found.question is None:
        return None, found.id, found.messages
    case = Case(
        id=found.id,
        question=found.question,
        relevance=found.relevance or {},
        expected_facts=found.expected_facts or (),
        unanswerable=bool(found.unanswerable),
        tags=found.tags or (),
        line=number,
        graded=found.graded,
    )
    return case, found.id, found.messages


def _unknown_field(key: str) -> str:
    """The problem for a field we do not know, suggesting the closest known one."""
    close = difflib.get_close_matches(key.lower(), KNOWN_FIELDS, n=1)
    if close:
        return f"unknown field {_quote(key)} (did you mean {_quote(close[0])}?)"
    return f"unknown field {_quote(key)} (known fields: {', '.join(KNOWN_FIELDS)})"


def _required_text(obj: _JsonObject, name: str, messages: list[str]) -> str | None:
    """A required non-blank string field, kept verbatim."""
    if name not in obj:
        messages.append(f"missing required field {_quote(name)}")
        return None
    value = obj[name]
    return value if _usable(value) else _as_text(value, f"field {_quote(name)}", messages)


def _unanswerable(obj: _JsonObject, messages: list[str]) -> bool | None:
    """The ``unanswerable`` flag: False when absent, None when mistyped."""
    value = obj.get("unanswerable", False)
    if isinstance(value, bool):
        return value
    messages.append(f'field "unanswerable" must be true or false (got {_describe(value)})')
    return None


def _relevance(value: object, messages: list[str]) -> tuple[dict[str, int] | None, bool]:
    """``relevant_ids`` as ``({id: grade}, graded)``; a list means grade 1 for each id."""
    if isinstance(value, list):
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
    ids = [
        doc_id
        for index, item in enumerate(items, start=1)
        if (
            doc_id := _shared(item)
            if _usable(item)
            else _as_text(item, f'field "relevant_ids" item {index}', messages)
        )
        is not None
    ]
    messages.extend(
        f'field "relevant_ids" lists id {_quote(doc_id)} more than once'
        for doc_id, count in Counter(ids).items()
        if count > 1
    )
    return dict.fromkeys(ids, 1) if len(messages) == before else None


def _relevance_grades(grades: _JsonObject, messages: list[str]) -> dict[str, int] | None:
    before = len(messages)
    messages.extend(
        f'field "relevant_ids" lists id {_quote(doc_id)} more than once'
        for doc_id in grades.repeated_keys
    )
    relevance: dict[str, int] = {}
    for key, grade in grades.items():
        where = 'field "relevant_ids" id'
        doc_id = _shared(key) if _usable(key) else _as_text(key, where, messages)
        if doc_id is None:
            continue
        if isinstance(grade, bool) or not isinstance(grade, int) or grade < 1:
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
    if not isinstance(value, list):
        messages.append(
            f'field "expected_facts" must be a list (got {_describe(value)}); '
            'write ["fact"] for a single fact'
        )
        return None
    before = len(messages)
    facts: list[tuple[str, ...]] = []
    for index, item in enumerate(value, start=1):
        where = f'field "expected_facts" item {index}'
        if isinstance(item, list):
            facts.append(_shared_tuple(tuple(_alternatives(item, where, messages))))
        else:
            fact = _fact(item, where, messages)
            facts.append(() if fact is None else _shared_tuple((fact,)))
    return _shared_tuple(tuple(facts)) if len(messages) == before else None


def _alternatives(items: list[object], where: str, messages: list[str]) -> list[str]:
    if not items:
        messages.append(f"{where} is an empty list of alternatives")
    return [
        fact
        for index, item in enumerate(items, start=1)
        if (fact := _fact(item, f"{where} alternative {index}", messages)) is not None
    ]


def _fact(value: object, where: str, messages: list[str]) -> str | None:
    """One usable fact string, or None after appending why it is not usable."""
    fact = _shared(value) if _usable(value) else _as_text(value, where, messages)
    if fact is not None and _matches_everything(fact):
        messages.append(
            f"{where} {_quote(fact)} is only punctuation or whitespace: it would match every answer"
        )
        return None
    return fact


@functools.lru_cache(maxsize=4096)
def _matches_everything(fact: str) -> bool:
    """Nothing is left of ``fact`` once normalised (cached: golden sets repeat facts)."""
    return not normalise(fact)


def _tags(value: object, messages: list[str]) -> tuple[str, ...] | None:
    """``tags``: a list of non-blank strings for slicing results."""
    if not isinstance(value, list):
        messages.append(f'field "tags" must be a list of strings (got {_describe(value)})')
        return None
    before = len(messages)
    tags = tuple(
        tag
        for index, item in enumerate(value, start=1)
        if (
            tag := _shared(item)
            if _usable(item)
            else _as_text(item, f'field "tags" item {index}', messages)
        )
        is not None
    )
    return _shared_tuple(tags) if len(messages) == before else None


def _consistency(obj: _JsonObject, found: _Fields) -> list[str]:
    """Rules across fields; skipped when ``unanswerable`` itself is invalid."""
    if found.unanswerable is None:
        return []
    if found.unanswerable:
        problems = []
        if found.relevance:
            problems.append(
                'unanswerable case has relevant ids: remove "relevant_ids" '
                '(or set "unanswerable": false)'
            )
        if found.expected_facts:
            problems.append(
                'unanswerable case has expected facts: remove "expected_facts" '
                '(or set "unanswerable": false)'
            )
        return problems
    if "relevant_ids" not in obj:
        return ['missing required field "relevant_ids" (required unless "unanswerable" is true)']
    if found.relevance == {}:
        return [
            'answerable case has no relevant ids: "relevant_ids" is empty '
            '(set "unanswerable": true if the knowledge base holds no evidence)'
        ]
    return []


# --- small helpers ------------------------------------------------------------------------------


def _usable(value: object) -> TypeGuard[str]:
    """What :func:`_as_text` accepts, without building the message it would need."""
    # an ASCII string cannot hold a surrogate: most ids and tags are not encoded to check
    return (
        isinstance(value, str)
        and bool(value.strip())
        and (value.isascii() or not _has_lone_surrogate(value))
    )


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


def _shared(text: str) -> str:
    """One string object for each distinct tag, id and fact of a golden set: the same few
    tags and document ids on 100,000 cases are one string each, not 100,000."""
    return sys.intern(text)


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
        return f"number {_shorten(repr(value))}"
    if isinstance(value, str):
        return f"string {_quote(value)}"
    if isinstance(value, list):
        return "array"
    return "object"


def _quote(text: str) -> str:
    """``text`` quoted on one printable line, shortened if long; invisible characters escaped."""
    quoted = json.dumps(_shorten(text), ensure_ascii=False)
    return "".join(char if char.isprintable() else _escape(char) for char in quoted)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"
