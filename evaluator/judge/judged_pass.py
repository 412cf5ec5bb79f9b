"""One judged pass over a finished report: every applicable check of every case (asked
of every judge of the panel, ``samples`` times each), the canaries, the budget, the cache;
the result is a :class:`~evaluator.judge.record.JudgedRun`.

The judge runs after the target's run, from the report's kept answers and evidence texts:
judge traffic then cannot slow the target's cases or count in their latency, errors or
cost. A case the target failed has nothing to judge.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from evaluator.judge.cache import VerdictCache, cache_key
from evaluator.judge.canary import canary_subjects, wrong_answer_subjects
from evaluator.judge.canary_verdicts import CanaryClass, compromised, lenient
from evaluator.judge.checks import CheckValues, JudgedCheck, Subject, judged_checks
from evaluator.judge.checks.base import CanaryWords
from evaluator.judge.client import Answered, JudgeClient
from evaluator.judge.derived import canary_fooled, metric_means
from evaluator.judge.errors import JudgeError
from evaluator.judge.panel import JudgePanel, Member
from evaluator.judge.parse import Completion
from evaluator.judge.prompts import PROMPT_VERSION
from evaluator.judge.record import (
    CanaryResult,
    CaseJudgement,
    CheckOutcome,
    JudgedRun,
    JudgeUsage,
    Vote,
    answer_hash,
)
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.votes import decide
from evaluator.models import CaseRecord
from evaluator.redaction import redactor
from evaluator.report import RunReport
from evaluator.scoring.conversation import turns_before

__all__ = ["Asking", "CallEvent", "JudgedPass", "judge_report", "subjects_of"]

log = structlog.get_logger("evaluator.judge")


@dataclass(frozen=True, slots=True)
class Asking:
    """Which judge call: the check, the case it judges, the judge (its name in the votes and
    its model), the sample, and whether it judges a canary made from the case."""

    check: str
    case_id: str
    judge: str
    model: str
    sample: int | None
    canary: bool


@dataclass(frozen=True, slots=True)
class CallEvent:
    """One judge call as it ended (for the daemon's judge metrics and the judge's spans):
    which call, its latency, error kind and tokens, and when it began and ended (ns since
    the epoch: a span's times)."""

    call: Asking
    latency_seconds: float
    error_kind: str | None
    input_tokens: int | None
    output_tokens: int | None
    started_ns: int
    ended_ns: int

    @property
    def check(self) -> str:
        """The check the call asked."""
        return self.call.check


#: a call under way: which, and when it began (ns since the epoch)
_Started = tuple[Asking, int]


def subjects_of(records: tuple[CaseRecord, ...]) -> list[Subject]:
    """What each scored case gives the judge (failed cases have no answer to judge), as the
    report keeps it: the target's text redacted of every registered secret (a target that
    echoes its token into its answer or evidence sends it to no judge, and the daemon's
    in-memory report judges, hashes and caches the answer its report file holds); a
    conversation's turn comes with the turns before it (their answers redacted too)."""
    redact = redactor()
    before = turns_before(records)
    out = []
    for record in records:
        if record.scores is None:
            continue
        evidence = tuple(
            (redact(doc_id), redact(record.texts[doc_id]))
            for doc_id in record.ranked_ids
            if doc_id in record.texts
        )
        earlier = tuple(
            msgspec.structs.replace(turn, answer=redact(turn.answer))
            if turn.answer is not None
            else turn
            for turn in before.get(record.id, ())
        )
        answer = None if record.answer is None else redact(record.answer)
        out.append(Subject.of(record.case, answer, evidence, earlier))
    return out


@dataclass
class _Budget:
    max_calls: int | None
    max_cost: float | None
    usage: JudgeUsage = field(default_factory=JudgeUsage)

    def take(self) -> bool:
        """Reserve one call; False once the run's calls or cost are spent."""
        if self.max_calls is not None and self.usage.calls >= self.max_calls:
            return False
        if self.max_cost is not None and self.usage.cost >= self.max_cost:
            return False
        self.usage.calls += 1
        return True


class JudgedPass:
    """One pass's judge calls: each check of a case asked of every judge of the panel,
    ``samples`` times each (or read from the cache, vote by vote), within the run's
    concurrency and budget, its usage counted; the votes decide the outcome
    (:func:`evaluator.judge.votes.decide`)."""

    def __init__(
        self,
        panel: JudgePanel,
        cache: VerdictCache | None,
        on_call: Callable[[CallEvent], None] | None,
    ) -> None:
        self.panel = panel
        self.config = panel.config
        self.cache = cache
        self.on_call = on_call
        self.budget = _Budget(self.config.max_calls, self.config.max_cost)
        # the budget is taken inside the slot: reserved before the slot, every case's call
        # would be counted before the first cost came back (cost overshoots by at most the
        # calls in flight)
        self._slots = asyncio.Semaphore(self.config.concurrency)

    @property
    def usage(self) -> JudgeUsage:
        return self.budget.usage

    @property
    def checks(self) -> tuple[JudgedCheck, ...]:
        """The registered checks this pass runs (the judge's ``checks``, default all)."""
        chosen = self.config.checks
        return tuple(c for c in judged_checks() if chosen is None or c.name in chosen)

    def _count(self, config: JudgeConfig, completion: Completion, seconds: float) -> None:
        """One answered call's latency, tokens and cost (a verdict read or not: the judge
        was paid for it)."""
        usage = self.usage
        usage.latency_seconds += seconds
        usage.input_tokens += completion.input_tokens or 0
        usage.output_tokens += completion.output_tokens or 0
        # each judge at its own prices (a panel member's are the [judge] section's)
        usage.cost += config.cost(completion.input_tokens, completion.output_tokens)

    def _event(
        self,
        call: _Started,
        completion: Completion | None,
        seconds: float,
        error: JudgeError | None,
    ) -> None:
        """Tell ``on_call`` of one ended call (``call``: which, and when it began)."""
        if self.on_call is None:
            return
        self.on_call(
            CallEvent(
                call[0],
                seconds,
                error.kind if error is not None else None,
                completion.input_tokens if completion is not None else None,
                completion.output_tokens if completion is not None else None,
                call[1],
                time.time_ns(),
            )
        )

    def _failed(
        self,
        config: JudgeConfig,
        call: _Started,
        answered: Answered | None,
        exc: JudgeError,
    ) -> None:
        """A call that gave no verdict: counted by kind, and, when the judge did answer (a
        verdict of the wrong shape, content with no JSON object), its tokens and cost too:
        the judge billed them."""
        completion, seconds = exc.completion, exc.latency_seconds
        if answered is not None:
            completion, seconds = answered.completion, answered.latency_seconds
        if completion is not None:
            self._count(config, completion, seconds)
        self.usage.errors[exc.kind] = self.usage.errors.get(exc.kind, 0) + 1
        self._event(call, completion, seconds, exc)

    async def verdict(
        self,
        check: JudgedCheck,
        subject: Subject,
        use_cache: bool = True,
        *,
        canary: bool = False,
    ) -> CheckOutcome:
        """The check's outcome on one case (``canary``: on a canary made from it): the votes
        of every judge and sample, each from the cache when it holds a verdict of the
        check's shape, else asked of its judge (and then kept in the cache), decided by
        majority."""
        data = subject.payload(check.data(subject))
        samples = self.config.samples
        cache = self.cache if use_cache else None
        votes = await asyncio.gather(
            *(
                self._vote(
                    member, sample if samples > 1 else None, check, subject, data, cache, canary
                )
                for member in self.panel.members
                for sample in range(samples)
            )
        )
        return decide(check.name, votes)

    async def _vote(
        self,
        member: Member,
        sample: int | None,
        check: JudgedCheck,
        subject: Subject,
        data: dict[str, Any],
        cache: VerdictCache | None,
        canary: bool,
    ) -> Vote:
        """One judge's vote on one sample (``sample`` None: the verdict is asked once)."""
        judge = (member.client.config.url, member.client.config.model)
        key = cache_key(judge, PROMPT_VERSION, check.name, data, sample)
        outcome = None if cache is None else self._cached(check, subject, cache.get(key))
        if outcome is None:
            model = member.client.config.model
            call = Asking(check.name, subject.case_id, member.name, model, sample, canary)
            outcome, verdict = await self._asked(member.client, call, check, subject, data)
            if cache is not None and verdict is not None:
                cache.put(key, verdict)
        return Vote(member.name, sample or 0, outcome)

    def _cached(
        self, check: JudgedCheck, subject: Subject, stored: dict[str, Any] | None
    ) -> CheckOutcome | None:
        """A stored verdict read as the check's (None: none, or one of another shape)."""
        if stored is None:
            return None
        try:
            values = check.read(subject, stored)
        except JudgeError:
            return None  # a stored verdict of another shape: ask again
        self.usage.cache_hits += 1
        return _judged(check.name, values, cached=True)

    async def _asked(
        self,
        client: JudgeClient,
        call: Asking,
        check: JudgedCheck,
        subject: Subject,
        data: dict[str, Any],
    ) -> tuple[CheckOutcome, dict[str, Any] | None]:
        """The judge asked within the pass's slots and budget: the outcome, and the verdict
        object to keep (None: skipped or failed, nothing to keep)."""
        answered: Answered | None = None
        try:
            async with self._slots:
                if not self.budget.take():
                    self.usage.skipped += 1
                    return CheckOutcome(check.name, "skipped"), None
                # the call begins here, past the slot's wait: its span's start
                started = time.time_ns()
                answered = await client.ask(check.name, data, call.sample)
            values = check.read(subject, answered.verdict)
        except JudgeError as exc:
            self._failed(client.config, (call, started), answered, exc)
            error = CheckOutcome(check.name, "error", error_kind=exc.kind, error=exc.message[:300])
            return error, None
        self._count(client.config, answered.completion, answered.latency_seconds)
        self._event((call, started), answered.completion, answered.latency_seconds, None)
        return _judged(check.name, values), answered.verdict


def _judged(check: str, values: CheckValues, cached: bool = False) -> CheckOutcome:
    return CheckOutcome(
        check, "judged", dict(values.values), values.reason, values.unsupported, cached=cached
    )


async def _judge_canaries(
    judged: JudgedPass, subjects: list[Subject], config: JudgeConfig
) -> tuple[CanaryResult, ...]:
    """Each canary of each class judged, the injection ones in words drawn for this pass
    from a fresh nonce, never from the cache (a cached verdict would hide a judge that
    changed), and read by its own check's rule for a fooled verdict; its verdict kept, for
    readers to derive ``fooled`` again."""
    words = CanaryWords.drawn(secrets.token_hex(16))
    dealt: list[tuple[JudgedCheck, Subject, CanaryClass]] = [
        (check, subject, "injection")
        for check, subject in canary_subjects(subjects, config.canaries, words, judged.checks)
    ]
    dealt += wrong_answer_subjects(subjects, config.wrong_answer_canaries, judged.checks)

    async def one(check: JudgedCheck, subject: Subject, kind: CanaryClass) -> CanaryResult:
        outcome = await judged.verdict(check, subject, use_cache=False, canary=True)
        fooled = canary_fooled(check, outcome)
        return CanaryResult(check.name, subject.case_id, fooled, outcome.reason, outcome, kind)

    return tuple(await asyncio.gather(*(one(*canary) for canary in dealt)))


async def _judge_cases(
    judged: JudgedPass, subjects: list[Subject], cache: VerdictCache | None
) -> tuple[CaseJudgement, ...]:
    """Every applicable check of every case, at once (the client bounds the calls)."""

    async def one(subject: Subject) -> CaseJudgement:
        checks = [c for c in judged.checks if c.applies(subject)]
        outcomes = await asyncio.gather(*(judged.verdict(c, subject) for c in checks))
        return CaseJudgement(subject.case_id, answer_hash(subject.answer), tuple(outcomes))

    try:
        return tuple(await asyncio.gather(*(one(s) for s in subjects)))
    finally:
        # the run's new verdicts in one write, kept even when the pass was interrupted
        if cache is not None:
            cache.flush()


def _warn(judged: JudgedRun, run_id: str) -> None:
    """Log a compromised or a lenient judge, naming the canaries it accepted."""
    fooled = [c for c in judged.canaries if c.fooled]
    if judged.compromised:
        log.warning(
            "judge_compromised",
            model=judged.model,
            prompt_version=PROMPT_VERSION,
            run_id=run_id,
            canaries=[c.case_id for c in fooled if c.kind == "injection"],
            message="a canary answer was judged supported: judged metrics are untrusted",
        )
    if judged.lenient:
        log.warning(
            "judge_lenient",
            model=judged.model,
            prompt_version=PROMPT_VERSION,
            run_id=run_id,
            canaries=[f"{c.kind}:{c.case_id}" for c in fooled if c.kind != "injection"],
            message=f"the judge accepted more than {judged.lenient_above:g} of the wrong-answer "
            "canaries: it passes answers that sound right",
        )


async def judge_report(
    report: RunReport,
    panel: JudgePanel,
    *,
    cache: VerdictCache | None = None,
    on_call: Callable[[CallEvent], None] | None = None,
) -> JudgedRun:
    """Judge every scored case of ``report`` (read back with its evidence texts).

    Canaries go first, and count against the budget like any call.
    """
    judged = JudgedPass(panel, cache, on_call)
    config = panel.config
    subjects = subjects_of(report.cases)
    canaries = await _judge_canaries(judged, subjects, config)
    cases = await _judge_cases(judged, subjects, cache)
    run = JudgedRun(
        model=config.model,
        prompt_version=PROMPT_VERSION,
        metrics=metric_means(cases),
        usage=judged.usage,
        canaries=canaries,
        cases=cases,
        compromised=compromised(canaries),
        samples=config.samples,
        panel=config.panel_names,
        lenient=lenient(canaries, config.lenient_above),
        lenient_above=config.lenient_above,
    )
    _warn(run, report.run_id)
    return run
