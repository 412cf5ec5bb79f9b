"""The JSON of changed cases, encoded by msgspec, is exactly what the json module gives."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evaluator.border import json_line
from evaluator.gate.compare import CaseChange
from evaluator.gate.render import _change_dict, _encode, _encode_changes


def _change(i: int, severity: float, text: str) -> CaseChange:
    return CaseChange(
        f"c{i}{text}",
        f"q {text}?",
        severity,
        (f"recall 1.00 → 0.50 {text}",),
        ("d1",),
        (),
        ("d", text),
    )


ODD = '\x00\x1f\x7f\b\f\n\r\t"\\/ é 中 \u2028 \U0001f600 , : {"a": [1, 2]}'


@pytest.mark.parametrize(
    "severities",
    [
        [0.5, 3.0, 10.0, 13.25, 1 / 3],
        [1e-4, 0.00012345, 9999999999999998.0],
        [5e-05, 1.0],  # repr 5e-05: json's text, not msgspec's 0.00005
        [1e16, 2.0],
    ],
)
def test_changes_encode_as_json_does(severities: list[float]) -> None:
    changes = tuple(_change(i, s, ODD[: i * 7]) for i, s in enumerate(severities))
    text = _encode_changes(changes)
    assert text == _encode([_change_dict(c) for c in changes])
    # with what json leaves raw and a terminal breaks lines at escaped (border.json_line)
    assert text == json_line(json.dumps([_change_dict(c) for c in changes], ensure_ascii=False))


def test_a_change_encodes_with_the_fields_of_the_json() -> None:
    (only,) = json.loads(_encode_changes((_change(1, 1.0, "x"),)))
    assert list(only) == list(_change_dict(_change(1, 1.0, "x")))
    assert [f.name for f in dataclasses.fields(CaseChange)][-2:] == list(only)[-2:]


def test_a_string_msgspec_refuses_takes_json() -> None:
    changes = (_change(1, 1.0, "\ud800"),)  # a lone surrogate: not UTF-8
    assert _encode_changes(changes) == _encode([_change_dict(c) for c in changes])
