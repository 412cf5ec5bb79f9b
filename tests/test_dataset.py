"""Tests for golden-set loading and validation (evaluator.dataset)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator import border
from evaluator.dataset import KNOWN_FIELDS, TURN_FIELDS, check_files, load_dataset, parse_dataset
from evaluator.errors import DatasetError, DatasetProblem
from evaluator.models import Case

DATA = Path(__file__).parent / "data"
VALID = DATA / "valid.jsonl"
INVALID = DATA / "invalid.jsonl"
EXAMPLE = Path(__file__).parent.parent / "evals" / "example.jsonl"

ANSWERABLE_NO_IDS = (
    'answerable case has no relevant ids: "relevant_ids" is empty '
    '(set "unanswerable": true if the knowledge base holds no evidence)'
)
MISSING_RELEVANT_IDS = (
    'missing required field "relevant_ids" (required unless "unanswerable" is true)'
)
ONLY_PUNCTUATION = "is only punctuation or whitespace: it would match every answer"
NON_EMPTY = "must be a non-empty string"
EMPTY_FILE = "empty golden set: no case (the file is empty or has only blank lines)"
NO_SUCH_FILE = "cannot read the golden set: No such file or directory"
LATE_BOM = "byte-order mark (U+FEFF) on a later line: it is only accepted at the file's start"

#: Every problem of tests/data/invalid.jsonl, as (line, message), in report order.
INVALID_PROBLEMS = [
    (3, "malformed JSON: Expecting ',' delimiter (column 45)"),
    (4, "not a JSON object (got array): each line must hold one case"),
    (5, 'missing required field "id"'),
    (6, 'missing required field "question"'),
    (7, MISSING_RELEVANT_IDS),
    (8, 'field "id" must be a non-empty string (got string "   ")'),
    (8, 'field "question" must be a non-empty string (got string "")'),
    (9, 'field "id" must be a non-empty string (got number 7)'),
    (
        10,
        'field "relevant_ids" must be a list of ids or an object {id: grade} '
        '(got string "refund-policy")',
    ),
    (11, 'field "relevant_ids" item 1 must be a non-empty string (got string "")'),
    (11, 'field "relevant_ids" item 2 must be a non-empty string (got number 3)'),
    (12, 'field "relevant_ids" grade of "a" must be an integer >= 1 (got number 0)'),
    (12, 'field "relevant_ids" grade of "b" must be an integer >= 1 (got boolean true)'),
    (12, 'field "relevant_ids" grade of "c" must be an integer >= 1 (got number 1.5)'),
    (12, 'field "relevant_ids" grade of "d" must be an integer >= 1 (got number -1)'),
    (
        13,
        'field "expected_facts" must be a list (got string "七天"); '
        'write ["fact"] for a single fact',
    ),
    (14, 'field "expected_facts" item 1 is an empty list of alternatives'),
    (
        14,
        'field "expected_facts" item 2 alternative 2 must be a non-empty string (got string "")',
    ),
    (14, 'field "expected_facts" item 3 must be a non-empty string (got number 5)'),
    (15, f'field "expected_facts" item 1 "！？" {ONLY_PUNCTUATION}'),
    (15, f'field "expected_facts" item 2 alternative 1 " ... " {ONLY_PUNCTUATION}'),
    (16, 'field "unanswerable" must be true or false (got string "yes")'),
    (17, 'field "tags" item 2 must be a non-empty string (got number 1)'),
    (18, 'unknown field "relevent_ids" (did you mean "relevant_ids"?)'),
    (
        18,
        'unknown field "colour" '
        "(known fields: id, question, relevant_ids, expected_facts, unanswerable, tags, turns)",
    ),
    (18, MISSING_RELEVANT_IDS),
    (19, 'duplicate id "ok-first" (first used on line 1)'),
    (20, 'field "relevant_ids" lists id "a" more than once'),
    (21, 'field "relevant_ids" lists id "a" more than once'),
    (22, ANSWERABLE_NO_IDS),
    (23, ANSWERABLE_NO_IDS),
    (
        24,
        'unanswerable case has relevant ids: remove "relevant_ids" (or set "unanswerable": false)',
    ),
    (
        25,
        'unanswerable case has expected facts: remove "expected_facts" '
        '(or set "unanswerable": false)',
    ),
    (26, "not valid UTF-8: byte 0xe9 at byte 34 of the line"),
    (27, 'field "id" is given more than once'),
    (28, "malformed JSON: NaN is not valid JSON"),
    (29, 'field "tags" must be a list of strings (got string "refund")'),
]


def problems_of(data: bytes, path: str = "g.jsonl") -> list[tuple[int, str]]:
    """The (line, message) pairs parse_dataset reports for ``data``; [] when it is valid."""
    try:
        parse_dataset(data, path)
    except DatasetError as exc:
        return [(p.line, p.message) for p in exc.problems]
    return []


def line(**fields: object) -> bytes:
    """One JSONL line holding ``fields``."""
    return json.dumps(fields, ensure_ascii=False).encode("utf-8")


class TestValidFile:
    """A valid golden set loads into exactly the expected cases."""

    def test_bom_crlf_and_blank_lines_load_into_exact_cases(self) -> None:
        """BOM, CRLF and blank lines are accepted, and each case keeps its physical line."""
        expected = (
            Case(
                id="refund-deadline",
                question="退款申请有期限吗？",
                relevance={"refund-policy": 1},
                expected_facts=(("七天",),),
                tags=("refund", "zh"),
                line=1,
            ),
            Case(
                id="refund-arrival",
                question="How long until a refund arrives?",
                relevance={"refund-process": 2, "refund-policy": 1},
                expected_facts=(
                    ("3-5 business days", "three to five business days"),
                    ("original payment method",),
                ),
                tags=("refund", "en"),
                line=3,
                graded=True,
            ),
            Case(
                id="shipping-carriers",
                question="用哪家快递发货？",
                relevance={"shipping-policy": 1},
                line=5,
            ),
            Case(
                id="pay-bitcoin",
                question="Can I pay with bitcoin?",
                relevance={},
                unanswerable=True,
                tags=("payment",),
                line=7,
            ),
            Case(
                id="store-cash",
                question="门店能退现金吗？",
                relevance={},
                unanswerable=True,
                line=8,
            ),
        )
        raw = VALID.read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf")
        assert b"\r\n\r\n" in raw

        dataset = load_dataset(VALID)

        assert dataset.cases == expected

    def test_dataset_identity(self) -> None:
        """The name is the file stem and the hash is the sha256 of the raw bytes, BOM included."""
        raw = VALID.read_bytes()

        dataset = parse_dataset(raw, "somewhere/valid.jsonl")

        assert (dataset.path, dataset.name) == ("somewhere/valid.jsonl", "valid")
        assert dataset.content_hash == hashlib.sha256(raw).hexdigest()

    def test_graded_relevance(self) -> None:
        """An object of integer grades is kept as graded relevance."""
        data = line(id="a", question="q", relevant_ids={"doc-1": 3, "doc-2": 1})

        (case,) = parse_dataset(data, "g.jsonl").questions

        assert (dict(case.relevance), case.graded) == ({"doc-1": 3, "doc-2": 1}, True)

    def test_list_relevance_is_binary(self) -> None:
        """A list of ids gives each grade 1 and is not graded."""
        data = line(id="a", question="q", relevant_ids=["doc-1", "doc-2"])

        (case,) = parse_dataset(data, "g.jsonl").questions

        assert (dict(case.relevance), case.graded) == ({"doc-1": 1, "doc-2": 1}, False)

    def test_alternative_facts(self) -> None:
        """A string is a one-alternative fact; a list holds alternatives for one fact."""
        data = line(
            id="a", question="q", relevant_ids=["d"], expected_facts=["七天", ["7 days", "一周"]]
        )

        (case,) = parse_dataset(data, "g.jsonl").questions

        assert case.expected_facts == (("七天",), ("7 days", "一周"))

    def test_retrieval_only_case_is_valid(self) -> None:
        """An answerable case without expected facts is valid and has no answer check."""
        (case,) = parse_dataset(line(id="a", question="q", relevant_ids=["d"]), "g").questions

        assert (case.expected_facts, case.unanswerable) == ((), False)

    def test_symbols_are_valid_facts(self) -> None:
        """Facts made of symbols such as % and $ survive normalisation, so they are valid."""
        data = line(id="a", question="q", relevant_ids=["d"], expected_facts=["%", "$", "5%"])

        (case,) = parse_dataset(data, "g.jsonl").questions

        assert case.expected_facts == (("%",), ("$",), ("5%",))

    def test_unanswerable_with_empty_evidence_is_valid(self) -> None:
        """Empty relevant ids and facts on an unanswerable case are not evidence."""
        data = line(id="a", question="q", relevant_ids={}, expected_facts=[], unanswerable=True)

        (case,) = parse_dataset(data, "g.jsonl").questions

        assert (case.unanswerable, dict(case.relevance), case.expected_facts) == (True, {}, ())

    def test_values_are_kept_verbatim(self) -> None:
        """Ids and questions are checked after strip but stored as written."""
        (case,) = parse_dataset(line(id=" a ", question=" q ", relevant_ids=[" d"]), "g").questions

        assert (case.id, case.question, dict(case.relevance)) == (" a ", " q ", {" d": 1})


class TestProblems:
    """Every problem of a file is reported at its physical line, not just the first."""

    def test_grade_beyond_float_range(self) -> None:
        """A 400-digit grade (an int json reads, a float nDCG cannot divide) is a problem of
        its line, not an OverflowError when the case is scored."""
        data = b'{"id": "a", "question": "q", "relevant_ids": {"d": 1' + b"0" * 400 + b"}}"
        [(number, message)] = problems_of(data)
        assert number == 1
        assert message.startswith('field "relevant_ids" grade of "d" must be at most 10**15')

    def test_every_listed_problem_at_its_line(self) -> None:
        """The fixture holding one of each problem reports exactly these, in line order."""
        with pytest.raises(DatasetError) as caught:
            load_dataset(INVALID)

        actual = [(p.line, p.message) for p in caught.value.problems]
        assert actual == INVALID_PROBLEMS
        assert {p.path for p in caught.value.problems} == {str(INVALID)}

    def test_error_message_is_first_problem_and_count(self) -> None:
        """The exception's own message is the first problem plus how many more there are."""
        with pytest.raises(DatasetError) as caught:
            load_dataset(INVALID)

        more = len(INVALID_PROBLEMS) - 1
        assert str(caught.value) == (
            f"{INVALID}:3: malformed JSON: Expecting ',' delimiter (column 45) "
            f"(and {more} more problem(s))"
        )

    @pytest.mark.parametrize(
        "data",
        [b"", b"\n", b"  \r\n\t\n\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\r\n"],
        ids=["empty", "newline", "whitespace", "bom", "bom-crlf"],
    )
    def test_empty_file(self, data: bytes) -> None:
        """A file without any case is one whole-file problem (line 0)."""
        assert problems_of(data) == [(0, EMPTY_FILE)]

    def test_empty_file_is_printed_without_line(self) -> None:
        """A line-0 problem prints as path: message."""
        with pytest.raises(DatasetError) as caught:
            parse_dataset(b"", "evals/empty.jsonl")

        assert str(caught.value) == f"evals/empty.jsonl: {EMPTY_FILE}"

    def test_invalid_utf8_does_not_stop_the_check(self) -> None:
        """Lines after undecodable bytes are still checked, with their own line numbers."""
        data = b"\xff\xfe\n" + line(id="a", question="q") + b"\r\n\n" + b'{"id": "b"\x80}'

        assert problems_of(data) == [
            (1, "not valid UTF-8: byte 0xff at byte 1 of the line"),
            (2, MISSING_RELEVANT_IDS),
            (4, "not valid UTF-8: byte 0x80 at byte 11 of the line"),
        ]

    def test_bom_is_accepted_only_at_the_start(self) -> None:
        """A byte-order mark on a later line is reported."""
        valid = line(id="a", question="q", relevant_ids=["d"])
        data = b"\xef\xbb\xbf" + valid + b"\n\xef\xbb\xbf" + valid

        assert problems_of(data) == [(2, LATE_BOM)]

    def test_case_insensitive_suggestion(self) -> None:
        """A differently cased field name is suggested back."""
        data = line(ID="a", question="q", relevant_ids=["d"])

        assert problems_of(data) == [
            (1, 'unknown field "ID" (did you mean "id"?)'),
            (1, 'missing required field "id"'),
        ]

    def test_duplicate_id_names_first_line_each_time(self) -> None:
        """Every repeat of an id points back at its first occurrence."""
        case = line(id="a", question="q", relevant_ids=["d"])
        data = b"\n".join([case, b"", case, case])

        assert problems_of(data) == [
            (3, 'duplicate id "a" (first used on line 1)'),
            (4, 'duplicate id "a" (first used on line 1)'),
        ]

    def test_duplicate_id_is_found_in_otherwise_invalid_cases(self) -> None:
        """An id repeated on a case with other problems is still reported as a duplicate."""
        data = line(id="a", question="q", relevant_ids=["d"]) + b"\n" + line(id="a", question=1)

        assert problems_of(data) == [
            (2, 'field "question" must be a non-empty string (got number 1)'),
            (2, MISSING_RELEVANT_IDS),
            (2, 'duplicate id "a" (first used on line 1)'),
        ]

    @pytest.mark.parametrize(
        ("fact", "message"),
        [
            ("。", f'field "expected_facts" item 1 "。" {ONLY_PUNCTUATION}'),
            ("-- !", f'field "expected_facts" item 1 "-- !" {ONLY_PUNCTUATION}'),
            (
                "\u3000",
                f'field "expected_facts" item 1 {NON_EMPTY} (got string "\\u3000")',
            ),
        ],
        ids=["chinese-full-stop", "ascii-punctuation", "ideographic-space"],
    )
    def test_fact_matching_everything(self, fact: str, message: str) -> None:
        """A fact that normalises to nothing would match every answer, so it is invalid."""
        data = line(id="a", question="q", relevant_ids=["d"], expected_facts=[fact])

        assert problems_of(data) == [(1, message)]

    def test_unpaired_surrogate_is_reported(self) -> None:
        """JSON's \\ud800 escape yields text that cannot be written back, so it is rejected."""
        data = b'{"id": "a\\ud800", "question": "q", "relevant_ids": ["d"]}'

        assert problems_of(data) == [
            (1, 'field "id" is not valid Unicode (an unpaired surrogate in "a\\ud800")')
        ]

    def test_too_long_number(self) -> None:
        """An integer Python refuses to convert is malformed JSON, not a crash."""
        data = b'{"id": "a", "question": "q", "relevant_ids": {"d": ' + b"9" * 5000 + b"}}"

        assert problems_of(data) == [(1, "malformed JSON: a number has too many digits")]

    def test_too_deep_nesting(self) -> None:
        """Deeply nested JSON is malformed JSON, not a crash."""
        data = b'{"id": "a", "tags": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

        assert problems_of(data) == [(1, "malformed JSON: nested too deeply")]


class TestLoadDataset:
    """Reading a file turns OS failures into a whole-file problem naming the reason."""

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file is one line-0 problem naming the OS reason."""
        path = tmp_path / "missing.jsonl"

        with pytest.raises(DatasetError) as caught:
            load_dataset(path)

        assert list(caught.value.problems) == [DatasetProblem(str(path), 0, NO_SUCH_FILE)]

    def test_directory(self, tmp_path: Path) -> None:
        """A directory is one line-0 problem naming the OS reason."""
        with pytest.raises(DatasetError) as caught:
            load_dataset(tmp_path)

        expected = [DatasetProblem(str(tmp_path), 0, "cannot read the golden set: Is a directory")]
        assert list(caught.value.problems) == expected

    def test_permission_denied(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """An unreadable file is one line-0 problem naming the OS reason."""
        path = tmp_path / "secret.jsonl"
        path.write_bytes(line(id="a", question="q", relevant_ids=["d"]))

        def deny(name: str, *_: object) -> bytes:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)

        monkeypatch.setattr(border, "read_file", deny)  # chmod does not stop root

        with pytest.raises(DatasetError) as caught:
            load_dataset(str(path))

        assert str(caught.value) == f"{path}: cannot read the golden set: Permission denied"
        assert [p.line for p in caught.value.problems] == [0]

    def test_str_and_pathlike_load_the_same(self) -> None:
        """A str path and a Path give the same dataset."""
        assert load_dataset(str(VALID)) == load_dataset(VALID)


class TestCheckFiles:
    """Validating several files collects every problem of every file."""

    def test_valid_files_have_no_problem(self) -> None:
        """Valid golden sets give an empty list."""
        assert check_files([VALID, EXAMPLE]) == []

    def test_problems_of_all_files_in_order(self, tmp_path: Path) -> None:
        """Problems come file by file, each file checked completely."""
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b"")
        missing = tmp_path / "missing.jsonl"

        problems = check_files([INVALID, VALID, empty, missing])

        expected = [(str(INVALID), n, m) for n, m in INVALID_PROBLEMS]
        expected += [(str(empty), 0, EMPTY_FILE), (str(missing), 0, NO_SUCH_FILE)]
        assert [(p.path, p.line, p.message) for p in problems] == expected


class TestExampleGoldenSet:
    """The bundled example golden set is valid and covers every kind of case."""

    def test_example_is_valid_and_varied(self) -> None:
        """Eight tagged cases: two unanswerable, graded, alternative facts, retrieval-only."""
        cases = load_dataset(EXAMPLE).questions

        assert len(cases) == 8
        assert sum(c.unanswerable for c in cases) == 2
        assert any(c.graded for c in cases)
        assert any(len(fact) > 1 for c in cases for fact in c.expected_facts)
        assert any(c.answerable and not c.expected_facts for c in cases)
        assert all(c.tags for c in cases)


# --- property tests -------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["", " ", "。", "\ud800", "\ufeff", "refund-policy"])
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
BASE_CASES = [
    {"id": "a", "question": "退款申请有期限吗？", "relevant_ids": ["refund-policy"]},
    {
        "id": "b",
        "question": "How long?",
        "relevant_ids": {"refund-policy": 2, "refund-process": 1},
        "expected_facts": ["七天", ["7 days", "seven days"]],
        "tags": ["refund"],
    },
    {"id": "c", "question": "比特币？", "unanswerable": True},
    {
        "id": "d",
        "tags": ["refund"],
        "turns": [
            {"question": "退款多久到账？", "relevant_ids": ["r"], "assistant": "3-5个工作日。"},
            {"question": "那支付宝呢？", "relevant_ids": ["r"], "expected_facts": ["24小时"]},
        ],
    },
]
FIELD_NAMES = st.sampled_from([*KNOWN_FIELDS, *TURN_FIELDS, "relevent_ids", "ID", ""]) | st.text(
    max_size=6
)


@st.composite
def near_valid_line(draw: st.DrawFn) -> bytes:
    """A valid case with a few random field drops, replacements and additions, as bytes."""
    case: dict[str, object] = dict(draw(st.sampled_from(BASE_CASES)))
    case["id"] = f"{case['id']}-{draw(st.integers(0, 10**6))}"  # mostly unique across lines
    for _ in range(draw(st.integers(0, 3))):
        name = draw(FIELD_NAMES)
        if draw(st.booleans()):
            case.pop(name, None)
        else:
            case[name] = draw(JSON_VALUES)
    text = json.dumps(case, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:  # sometimes cut the line short
        text = text[: draw(st.integers(0, len(text)))]
    return text.encode("utf-8", "surrogatepass")


@st.composite
def near_valid_file(draw: st.DrawFn) -> bytes:
    """Near-valid lines with random line ends, blank lines, a BOM and stray bytes."""
    lines = draw(st.lists(near_valid_line() | st.sampled_from([b"", b"  ", b"\r"]), max_size=6))
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = newline.join(lines)
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if data and draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=3)) + data[at:]
    return data


def check_outcome(data: bytes) -> None:
    """parse_dataset either succeeds or raises DatasetError with well-formed problems."""
    physical_lines = data.count(b"\n") + 1
    try:
        dataset = parse_dataset(data, "prop.jsonl")
    except DatasetError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.path == "prop.jsonl"
            assert 0 <= problem.line <= physical_lines
            assert problem.message
            assert problem.message.isprintable()  # one line, no invisible characters
            str(problem).encode("utf-8")  # writable to a UTF-8 terminal or log
        return
    assert dataset.cases
    lines = [case.line for case in dataset.cases]
    assert all(turn.line in lines for turn in dataset.questions)
    assert sorted(set(lines)) == lines
    assert all(1 <= n <= physical_lines for n in lines)


class TestRobustness:
    """No input makes parse_dataset raise anything but DatasetError."""

    @given(st.binary(max_size=300))
    def test_arbitrary_bytes(self, data: bytes) -> None:
        """Arbitrary bytes are parsed or rejected with located problems."""
        check_outcome(data)

    @settings(max_examples=300)
    @given(near_valid_file())
    def test_near_valid_files(self, data: bytes) -> None:
        """Near-valid JSONL with random mutations is parsed or rejected with located problems."""
        check_outcome(data)
