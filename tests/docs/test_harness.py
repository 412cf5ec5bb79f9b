"""The docs harness itself: placeholders, ellipses, exit statuses and block parsing."""

from __future__ import annotations

import pytest

from tests.docs.console import parse_console
from tests.docs.expected import matches


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("p95_seconds  <ms>", "p95_seconds  3.10ms"),
        ("took <ms>", "took 1.518s"),
        ("took <ms>", "took 950µs"),
        ("recall <n> over <n> cases", "recall 0.9444 over 1,000 cases"),
        ("diff <n>", "diff -0.3892"),
        ("config <hash>", "config 2ab8e51c386ecc2e"),
        ("at <ts>", "at 2026-12-01T09:44:42.123+00:00"),
        ("listening on 127.0.0.1:<port>", "listening on 127.0.0.1:41234"),
        ("run <id> done", "run 20261201T094442-3f2a done"),
        ("a ... z", "a anything at all z"),
        ("first\n...\nlast", "first\nlast"),
        ("first\n...\nlast", "first\ntwo\nthree\nlast"),
        ("trailing   \n\n", "trailing"),
        ("p50_seconds     <ms>", "p50_seconds   118.73ms"),  # padding before a placeholder
    ],
)
def test_placeholders_match_the_variable_parts(expected: str, actual: str) -> None:
    """A placeholder in the expected output matches the variable part of the actual output."""
    assert matches(expected, actual)


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("p95 <ms>", "p95 3.10"),  # a duration has a unit
        ("recall 0.9444", "recall 0.9445"),  # literal text is literal
        ("<n> cases", "many cases"),
        ("first\nlast", "first\nmiddle\nlast"),  # only a `...` line skips lines
        ("a.b", "axb"),  # regex metacharacters are text
        ("ok", "ok\n[2]"),  # an unexpected exit status is a mismatch
    ],
)
def test_everything_else_must_match_exactly(expected: str, actual: str) -> None:
    """Outside placeholders the output must match exactly."""
    assert not matches(expected, actual)


def test_a_block_splits_into_commands_with_continuations_and_expected_output() -> None:
    """A console block splits into commands, with their continuation lines, line numbers and
    expected output."""
    source = "$ evaluator run \\\n  --k 5\nline one\n[2]\n$ echo hi\nhi\n"
    first, second = parse_console(source, 10)
    assert (first.line, first.text) == (10, "evaluator run \\\n  --k 5")
    assert first.expected == "line one\n[2]\n"
    assert (second.line, second.text, second.expected) == (14, "echo hi", "hi\n\n")


def test_output_before_any_command_is_a_mistake_in_the_page() -> None:
    """Output before the first command is refused as a mistake in the page."""
    with pytest.raises(ValueError, match="before the first"):
        parse_console("orphan\n$ true\n", 3)
