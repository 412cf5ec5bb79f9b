"""A secret inside JSON-escaped text (a PHP or Go dump a target puts in its answer: ``\\/``,
``\\u0026``, every character ``\\u``-escaped) is caught where it leaves the process: the report
file (and ``/reports/latest``, the same bytes), the report as data, and a log line (issue
38.6). Our own egress encodes the dump once more, doubling its backslashes: the redactor
knows the forms as they read there too."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator

import msgspec
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator import process_state
from evaluator.logs import configure_logging
from evaluator.redaction import Redactor, register_secrets
from evaluator.report import encode_report, report_to_dict
from tests.support.records import record, report
from tests.support.secret_forms import leaked_forms

SECRET = "fz/T0ken+Qx7=secret9&<a>"
SECRETS = {"secret": SECRET}


def _php(secret: str) -> str:
    """PHP's json_encode: ``/`` written ``\\/``."""
    return json.dumps(secret)[1:-1].replace("/", "\\/")


def _go(secret: str) -> str:
    """Go's encoding/json: ``&``, ``<``, ``>`` written ``\\u0026``, ``\\u003c``, ``\\u003e``."""
    return (
        json.dumps(secret)[1:-1]
        .replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
    )


def _every_char(secret: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in secret)


DUMPS: dict[str, Callable[[str], str]] = {
    "php": lambda s: '{"token":"' + _php(s) + '"}',
    "go": lambda s: '{"token":"' + _go(s) + '"}',
    "every-char": lambda s: '{"token":"' + _every_char(s) + '"}',
    "php-and-go": lambda s: '{"token":"' + _go(s).replace("/", "\\/") + '"}',
}


@pytest.fixture(autouse=True)
def secret() -> Iterator[None]:
    """The secret registered with the process's redactor, which is restored afterwards."""
    held = process_state.redactor.get()
    register_secrets([SECRET])
    yield
    process_state.redactor.change(lambda _now: held)


def _answering(answer: str) -> bytes:
    one = record("c1")
    return encode_report(report([msgspec.structs.replace(one, answer=answer)]))


@pytest.mark.parametrize("dump", sorted(DUMPS))
def test_a_dump_in_an_answer_never_reaches_the_report_file(dump: str) -> None:
    """The report's bytes (a file, latest.json, /reports/latest) hold no form of it (the
    audit's reproduction: ``\\/`` and ``\\u0026`` dumps in a report)."""
    text = _answering(f"debug: {DUMPS[dump](SECRET)}").decode()
    assert [] == leaked_forms(text, SECRETS)
    assert "debug: " in text


@pytest.mark.parametrize("dump", sorted(DUMPS))
def test_a_dump_never_reaches_the_report_as_data(dump: str) -> None:
    """``report_to_dict`` (the report as data) masks it too (its quick scan of the encoded
    report used to miss it and return the value untouched)."""
    one = msgspec.structs.replace(record("c1"), answer=f"debug: {DUMPS[dump](SECRET)}")
    data = report_to_dict(report([one]))
    assert [] == leaked_forms(json.dumps(data, ensure_ascii=False), SECRETS)


@pytest.mark.parametrize("dump", sorted(DUMPS))
def test_a_dump_never_reaches_a_log_line(dump: str) -> None:
    """A log event carrying the dump (an answer logged with log_answers, an error message) is
    masked in the rendered JSON line (the variant: the log renderer's egress)."""
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    try:
        structlog.get_logger("evaluator.test").info("case", answer=DUMPS[dump](SECRET))
    finally:
        structlog.reset_defaults()
    assert "case" in out.getvalue()
    assert [] == leaked_forms(out.getvalue(), SECRETS)


def test_the_forms_escaped_again_are_masked_in_plain_text() -> None:
    """The redactor masks a dump's forms as the egress encoder writes them (backslashes
    doubled), each on its own."""
    redact = Redactor([SECRET])
    for make in DUMPS.values():
        encoded = json.dumps(make(SECRET), ensure_ascii=False)
        assert [] == leaked_forms(redact(encoded), SECRETS), encoded


_PROSE = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)


def _inside(make: Callable[[str], str]) -> Callable[[str], str]:
    """The secret's form inside a dump: the dump without ``{"token":"`` and ``"}``."""
    return lambda secret: make(secret)[len('{"token":"') : -2]


_ENCODERS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "json": lambda s: json.dumps(s)[1:-1],
    **{name: _inside(make) for name, make in DUMPS.items()},
}


@settings(max_examples=200, deadline=None)
@given(
    before=_PROSE,
    after=_PROSE,
    encoder=st.sampled_from(sorted(_ENCODERS)),
    again=st.integers(0, 1),
    ascii_only=st.booleans(),
)
def test_any_text_holding_a_dumped_secret_leaves_without_it(
    before: str, after: str, encoder: str, again: int, ascii_only: bool
) -> None:
    """Property: whatever text surrounds the secret, written raw, JSON-escaped, or as a PHP or
    Go dump (every character escaped included), and then JSON-encoded by our own egress or
    not, the redactor leaves no form of it."""
    text = f"{before}{_ENCODERS[encoder](SECRET)}{after}"
    if again:
        text = json.dumps(text, ensure_ascii=ascii_only)
    assert [] == leaked_forms(Redactor([SECRET])(text), SECRETS)
