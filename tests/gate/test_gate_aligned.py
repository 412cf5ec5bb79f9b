"""Shortcuts the gate takes for the usual pair must give exactly what the general path gives:
the paired sums of two reports of the same cases in the same order (no matching by id),
and the JSON of changed cases encoded by msgspec."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from evaluator.gate.compare import CaseChange
from evaluator.gate.render import _change_dict, _encode, _encode_changes
from evaluator.gate.stats import _AlignedSums, _pools, _same_cases
from evaluator.metrics import METRICS, match, paired_sum
from evaluator.models import CaseRecord
from evaluator.report.columns import CaseTable
from tests.gate.factories import record


def _cases(seed: int, n: int, *, unanswerable: float, errors: float) -> list[CaseRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < errors:
            out.append(record(f"c{i}", error="timeout"))
            continue
        ans = rng.random() < unanswerable
        out.append(
            record(
                f"c{i}",
                recall=rng.choice([0.0, 0.5, 1.0]),
                rr=rng.choice([0.0, 1 / 3, 0.5, 1.0]),
                precision=rng.random(),
                correct=None if ans else rng.random() < 0.8,
                unanswerable=ans,
            )
        )
    return out


PAIRS = {
    "errors on both sides": ((1, 0.2, 0.1), (2, 0.2, 0.1)),
    "no errors": ((3, 0.1, 0.0), (4, 0.1, 0.0)),
    "all unanswerable": ((5, 1.0, 0.1), (6, 1.0, 0.1)),
    "one side all unanswerable": ((7, 0.0, 0.1), (8, 1.0, 0.1)),
    "all failed on one side": ((9, 0.2, 0.0), (10, 0.2, 1.0)),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_aligned_sums_are_the_matched_sums(name: str) -> None:
    (s1, u1, e1), (s2, u2, e2) = PAIRS[name]
    base = CaseTable.of_records(_cases(s1, 200, unanswerable=u1, errors=e1))
    cand = CaseTable.of_records(_cases(s2, 200, unanswerable=u2, errors=e2))
    assert _same_cases(base, cand)
    aligned = _AlignedSums(base, cand)
    matching = match(_pools(base), _pools(cand))
    for spec in METRICS:
        if spec.quality:
            # the very same floats, not close ones
            assert aligned.sum(spec) == paired_sum(spec, matching), spec.name


def test_reordered_or_repeated_ids_are_not_the_same_cases() -> None:
    cases = _cases(1, 10, unanswerable=0.2, errors=0.1)
    table = CaseTable.of_records(cases)
    assert not _same_cases(table, CaseTable.of_records(cases[::-1]))
    twice = CaseTable.of_records([*cases, cases[0]])
    assert not _same_cases(twice, twice)


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
    assert text == json.dumps([_change_dict(c) for c in changes], ensure_ascii=False)


def test_a_change_encodes_with_the_fields_of_the_json() -> None:
    (only,) = json.loads(_encode_changes((_change(1, 1.0, "x"),)))
    assert list(only) == list(_change_dict(_change(1, 1.0, "x")))
    assert [f.name for f in dataclasses.fields(CaseChange)][-2:] == list(only)[-2:]


def test_a_string_msgspec_refuses_takes_json() -> None:
    changes = (_change(1, 1.0, "\ud800"),)  # a lone surrogate: not UTF-8
    assert _encode_changes(changes) == _encode([_change_dict(c) for c in changes])
