"""How a run is made, as values the configuration produces and the runner consumes.

Their own module (below both) so that loading a configuration imports neither the runner
nor tenacity, which :mod:`evaluator.retry` applies the policy with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluator.bounds import RecordLimits, StageNames
from evaluator.scoring import ScoringSettings

__all__ = ["RetryPolicy", "RunOptions"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a transient failure is retried.

    ``retries`` counts extra attempts after the first (docs/targets.md: by default twice).
    Waits grow exponentially from ``backoff_initial`` up to ``backoff_max`` seconds, with
    full jitter; a 429's ``Retry-After`` is honoured up to ``retry_after_max`` (default
    ``backoff_max``).
    """

    retries: int = 2
    backoff_initial: float = 0.2
    backoff_max: float = 5.0
    #: the longest ``Retry-After`` honoured (None: ``backoff_max``); a longer one is waited
    #: for this long
    retry_after_max: float | None = None


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How a run is made: K, concurrency, scoring settings, the retry policy, and the bounds
    on what a case keeps from a response (sizes, and the job's stage names)."""

    k: int = 5
    concurrency: int = 4
    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    limits: RecordLimits = field(default_factory=RecordLimits)
    #: stateful: the stage names this job has kept so far
    stages: StageNames = field(default_factory=StageNames)
