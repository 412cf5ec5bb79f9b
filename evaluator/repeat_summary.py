"""Repeats: each case run N times in one run (``evaluator run --repeat N``), summarised.

A case's *verdict* in one run is its answer check when it has one, else whether a relevant
id reached the top K (retrieval-only and unanswerable-free cases); a failed call has no
verdict (an error is not a score). Over N runs a case has a pass count and a pass rate.

``pass^k`` (pass-hat-k) is the chance that k runs of a case *all* pass, averaged over the
cases: for a case with c passes in n runs it is C(c, k) / C(n, k), the unbiased estimate
from n trials. pass^1 is the mean pass rate; pass^k falls quickly for flaky cases, which is
the point: a case that passes 80% of the time passes five times in a row a third of the time.

Each case also keeps its *means*: every quality score's mean over the runs that scored it
(a flag counts 1.0 or 0.0). The gate's hard rules judge a summary of those means, not of
the first round alone, so a flaky case does not decide a rule by which way round 1 fell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import Any

from evaluator.metrics import METRICS
from evaluator.models import CaseRecord, CaseScores

__all__ = [
    "VERDICT_PASSED",
    "VERDICT_WORDS",
    "CaseRepeats",
    "Repeats",
    "repeats_from_dict",
    "summarise_repeats",
    "verdict_word",
    "verdicts",
]


def verdicts(record: CaseRecord) -> tuple[bool | None, bool | None]:
    """``(answer, hit)`` of one record: None when not checked or when the call failed."""
    scores = record.scores
    if scores is None:
        return None, None
    recall = scores.recall_at_k
    hit = None if record.case.unanswerable or recall is None else recall > 0
    return scores.answer_correct, hit


#: A case's verdict in words, worst first: the one vocabulary of the case view, the daemon's
#: case table and the HTML report's. It names what decided, as :func:`verdicts` takes it: the
#: answer check ("correct", "incorrect"), else retrieval ("relevant retrieved", "relevant
#: missed": a retrieval-only case), else nothing ("not checked"); a failed call is "error".
VERDICT_WORDS: tuple[str, ...] = (
    "error",
    "incorrect",
    "relevant missed",
    "not checked",
    "relevant retrieved",
    "correct",
)
#: what each verdict word says of the case: passed (True), failed (False) or neither (None:
#: an error is neither a pass nor a fail, docs/history.md)
VERDICT_PASSED: Mapping[str, bool | None] = {
    "error": None,
    "incorrect": False,
    "relevant missed": False,
    "not checked": None,
    "relevant retrieved": True,
    "correct": True,
}


def verdict_word(record: CaseRecord) -> str:
    """``record``'s verdict, one of :data:`VERDICT_WORDS`."""
    if record.scores is None:
        return "error"
    answer, hit = verdicts(record)
    if answer is not None:
        return "correct" if answer else "incorrect"
    if hit is not None:
        return "relevant retrieved" if hit else "relevant missed"
    return "not checked"


@dataclass(frozen=True, slots=True)
class CaseRepeats:
    """One case over the repeats of a run."""

    id: str
    runs: int
    errors: int
    passes: int
    judged: int
    answer_passes: int
    answer_runs: int
    hit_passes: int
    hit_runs: int
    #: each quality score's mean over the runs that scored it (none: an older report)
    means: Mapping[str, float] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.judged if self.judged else None

    @property
    def flaky(self) -> bool:
        """Passed some runs and failed others."""
        return 0 < self.passes < self.judged

    def pass_hat(self, k: int) -> float | None:
        if self.judged < k:
            return None
        return comb(self.passes, k) / comb(self.judged, k)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "runs": self.runs,
            "errors": self.errors,
            "passes": self.passes,
            "judged": self.judged,
            "pass_rate": self.pass_rate,
            "answer_passes": self.answer_passes,
            "answer_runs": self.answer_runs,
            "hit_passes": self.hit_passes,
            "hit_runs": self.hit_runs,
            "means": dict(self.means),
        }


@dataclass(frozen=True, slots=True)
class Repeats:
    """Every case of a run made ``n`` times."""

    n: int
    cases: tuple[CaseRepeats, ...]

    def by_id(self) -> dict[str, CaseRepeats]:
        return {c.id: c for c in self.cases}

    def pass_hat_k(self, k: int) -> float | None:
        """pass^k over the cases judged at least k times; None when there is none."""
        values = [v for c in self.cases if (v := c.pass_hat(k)) is not None]
        return sum(values) / len(values) if values else None

    @property
    def flaky_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases if c.flaky)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "pass_hat_k": {str(k): self.pass_hat_k(k) for k in range(1, self.n + 1)},
            "flaky": list(self.flaky_ids),
            "cases": [c.to_dict() for c in self.cases],
        }


#: the CaseScores fields the quality metrics average, each once, in registry order
MEANED: tuple[str, ...] = tuple(dict.fromkeys(s.score for s in METRICS if s.score is not None))


def summarise_repeats(rounds: Sequence[Sequence[CaseRecord]]) -> Repeats:
    """Per-case counts and means over ``rounds`` (each a run of the same cases, any order)."""
    tallies: dict[str, list[int]] = {}
    scored: dict[str, list[CaseScores]] = {}
    for records in rounds:
        for record in records:
            if isinstance(record.outcome, CaseScores):
                scored.setdefault(record.id, []).append(record.outcome)
            t = tallies.setdefault(record.id, [0] * 8)
            answer, hit = verdicts(record)
            verdict = answer if answer is not None else hit
            t[0] += 1
            t[1] += record.error is not None
            if verdict is not None:
                t[2] += verdict
                t[3] += 1
            if answer is not None:
                t[4] += answer
                t[5] += 1
            if hit is not None:
                t[6] += hit
                t[7] += 1
    cases = tuple(_case_repeats(cid, t, _means(scored.get(cid, []))) for cid, t in tallies.items())
    return Repeats(len(rounds), cases)


#: the counts of a :class:`CaseRepeats`, in field order
_COUNTS = (
    "runs",
    "errors",
    "passes",
    "judged",
    "answer_passes",
    "answer_runs",
    "hit_passes",
    "hit_runs",
)


def _case_repeats(cid: str, counts: Sequence[int], means: Mapping[str, float]) -> CaseRepeats:
    runs, errors, passes, judged, answer_passes, answer_runs, hit_passes, hit_runs = counts
    return CaseRepeats(
        id=cid,
        runs=runs,
        errors=errors,
        passes=passes,
        judged=judged,
        answer_passes=answer_passes,
        answer_runs=answer_runs,
        hit_passes=hit_passes,
        hit_runs=hit_runs,
        means=means,
    )


def _means(runs: Sequence[CaseScores]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in MEANED:
        values = [float(v) for run in runs if (v := getattr(run, name)) is not None]
        if values:
            out[name] = math.fsum(values) / len(values)
    return out


def _read_means(raw: Mapping[str, Any], source: str) -> dict[str, float]:
    means = raw.get("means", {})
    if not isinstance(means, Mapping):
        raise ValueError(f"{source}: repeats field 'means' is not an object")
    out: dict[str, float] = {}
    for name, value in means.items():
        if name not in MEANED:
            continue  # a score this version does not average
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not 0.0 <= value <= 1.0:
            raise ValueError(
                f"{source}: repeats mean {name!r} of case {raw['id']!r} is not in 0..1"
            )
        out[name] = float(value)
    return out


def _int(data: Mapping[str, Any], key: str, source: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{source}: repeats field {key!r} is not a count")
    return value


def repeats_from_dict(data: object, source: str) -> Repeats:
    """Read back :meth:`Repeats.to_dict` (the derived fields are recomputed, not trusted).

    Raises:
        ValueError: naming the bad field.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: 'repeats' is not an object")
    raw_cases = data.get("cases")
    if not isinstance(raw_cases, list):
        raise ValueError(f"{source}: 'repeats.cases' is not a list")
    cases = []
    for raw in raw_cases:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
            raise ValueError(f"{source}: a 'repeats.cases' entry has no id")
        c = _case_repeats(
            raw["id"], [_int(raw, k, source) for k in _COUNTS], _read_means(raw, source)
        )
        if c.passes > c.judged or c.judged > c.runs:
            raise ValueError(f"{source}: repeats of case {c.id!r} count more passes than runs")
        cases.append(c)
    return Repeats(_int(data, "n", source), tuple(cases))
