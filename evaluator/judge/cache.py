"""The verdict cache's key and interface: an unchanged answer costs no judge call.

A verdict is reused only for the same judge (url and model), prompt version, check, question,
facts, answer and evidence, and the same sample of a repeated verdict (each judge of a panel is
keyed by its own model); anything else is a new call. A pass puts its new verdicts as they come
and flushes once at its end (whether it completes or not): one write per run. The store
lives in the history database (:class:`evaluator.judge.store.VerdictStore`); tests and
``--no-judge-cache`` pass none.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

__all__ = ["VerdictCache", "cache_key"]


def cache_key(
    judge: tuple[str, str],
    prompt_version: str,
    check: str,
    data: dict[str, Any],
    sample: int | None = None,
) -> str:
    """The key of one check's verdict on ``data`` (the exact data the judge is sent) from
    the ``judge`` (its url and model: two endpoints serving a model of one name are two
    judges); ``sample``: which sample of a repeated verdict (None: a verdict asked once)."""
    url, model = judge
    parts: list[Any] = [url, model, prompt_version, check, data]
    if sample is not None:
        parts.append(sample)
    material = json.dumps(parts, ensure_ascii=False, sort_keys=True).encode()
    return hashlib.sha256(material).hexdigest()


class VerdictCache(Protocol):
    """Where verdict objects are kept between runs."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        """Keep ``verdict`` under ``key``: for this pass at once, in the store by
        :meth:`flush` at the latest."""
        ...

    def flush(self) -> None:
        """Make the verdicts put so far durable (one write for the pass: it ends here)."""
        ...
