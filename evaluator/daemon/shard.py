"""Sharding a golden set across replicas by a stable hash of the case id."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from evaluator.models import GoldenCase

__all__ = ["shard_cases", "shard_of"]


def shard_of(case_id: str, shard_count: int) -> int:
    """The shard (0-based) a case belongs to: stable across processes, versions and machines.

    Python's ``hash()`` is salted per process, so a content hash is used instead.
    """
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shard_count


_C = TypeVar("_C", bound=GoldenCase)


def shard_cases(cases: Sequence[_C], shard_index: int, shard_count: int) -> tuple[_C, ...]:
    """The cases of shard ``shard_index`` out of ``shard_count``, in golden-set order (a
    conversation is one case: its turns stay together, on the shard of its id)."""
    if shard_count < 1 or not 0 <= shard_index < shard_count:
        raise ValueError(f"shard {shard_index} of {shard_count} is out of range")
    if shard_count == 1:
        return tuple(cases)
    return tuple(c for c in cases if shard_of(c.id, shard_count) == shard_index)
