"""Failure modes: switchable faults, each one a row of the gate's decision table (docs/gate.md).

- ``retrieval_degraded``: the parser keeps only the first sentence of each chunk and the
  tokeniser loses CJK bigrams, stopwords and stemming. Row "recall down, MRR down".
- ``rerank_degraded``: the final top K comes back shuffled, as from a reranker emitting
  noise. Row "recall flat, MRR down".
- ``answer_degraded``: the answerer picks the right chunk and cites it but quotes the
  sentence after the best one. Row "retrieval flat, accuracy down".
- ``citations_degraded``: citations are 0-based instead of 1-based. Row "accuracy flat,
  citation precision down".
- ``slow_model``: the model stage sleeps (1.5 s by default). P95 up.
- ``server_errors``: a fixed share of questions (30 % by default, chosen by a hash of the
  question) is answered with HTTP 500. Error rate up.
- ``history_ignored``: a conversation's follow-up is read without the earlier turns it was
  sent (or that the service keeps for it), as a chat front end that drops the history
  would. First turns unchanged; follow-ups and conversation success down.

Several may be on at once. :class:`FailureModes` is the switchboard; it is safe to flip from
any thread while requests are served.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Mapping

__all__ = [
    "ENV_VAR",
    "KNOWN_MODES",
    "FailureModes",
    "UnknownFailureModeError",
    "modes_from_env",
    "parse_modes",
    "question_fails",
]

KNOWN_MODES: tuple[str, ...] = (
    "retrieval_degraded",
    "rerank_degraded",
    "answer_degraded",
    "citations_degraded",
    "slow_model",
    "server_errors",
    "history_ignored",
)

#: comma-separated failure modes to switch on at start, read by ``python -m evaluator.reference``
ENV_VAR = "RAG_REFERENCE_FAILURE_MODES"


class UnknownFailureModeError(ValueError):
    """A failure mode name is not one of :data:`KNOWN_MODES`; ``unknown`` lists the culprits."""

    def __init__(self, unknown: Iterable[str]) -> None:
        self.unknown = tuple(unknown)
        super().__init__(
            f"unknown failure mode(s): {', '.join(self.unknown)}; known: {', '.join(KNOWN_MODES)}"
        )


def parse_modes(names: Iterable[str]) -> frozenset[str]:
    """Validate mode names; items may themselves be comma-separated lists.

    Raises:
        UnknownFailureModeError: naming every unknown mode.
    """
    modes = {part.strip() for name in names for part in name.split(",") if part.strip()}
    unknown = sorted(modes.difference(KNOWN_MODES))
    if unknown:
        raise UnknownFailureModeError(unknown)
    return frozenset(modes)


def modes_from_env(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The modes named in :data:`ENV_VAR` (none when unset)."""
    return parse_modes([environ.get(ENV_VAR, "")])


def question_fails(question: str, share: float) -> bool:
    """Whether ``server_errors`` fails this question: a stable hash, so reruns agree."""
    digest = hashlib.sha256(question.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


class FailureModes:
    """The set of active failure modes, safe to read and flip concurrently."""

    def __init__(self, modes: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._active = parse_modes(modes)

    @property
    def active(self) -> frozenset[str]:
        with self._lock:
            return self._active

    def __contains__(self, mode: object) -> bool:
        return mode in self.active

    def set(self, modes: Iterable[str]) -> frozenset[str]:
        """Replace the active set (validated first: on error nothing changes)."""
        parsed = parse_modes(modes)
        with self._lock:
            self._active = parsed
            return parsed

    def enable(self, mode: str) -> frozenset[str]:
        """Switch one mode on (or a comma-separated few); returns the new active set."""
        parsed = parse_modes([mode])
        with self._lock:
            self._active = self._active | parsed
            return self._active

    def disable(self, mode: str) -> frozenset[str]:
        """Switch one mode off (or a comma-separated few); returns the new active set."""
        parsed = parse_modes([mode])
        with self._lock:
            self._active = self._active - parsed
            return self._active
