"""The judges a judged pass asks: the ``[judge]`` endpoint, and each member of its panel
(``[[judge.panel]]``), one :class:`~evaluator.judge.client.JudgeClient` each (its own
connection pool, headers and limit). Use as an async context manager; a judge without a
panel is a panel of one.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.judge.client import JudgeClient
from evaluator.judge.settings import JudgeConfig

__all__ = ["JudgePanel", "Member"]


@dataclass(frozen=True, slots=True)
class Member:
    """One voting judge: its name in the votes, and its client."""

    name: str
    client: JudgeClient


class JudgePanel:
    """Every judge of one ``[judge]`` section, in order: the section's own endpoint first."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.members = tuple(Member(name, JudgeClient(c)) for name, c in config.members())

    async def __aenter__(self) -> JudgePanel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for member in self.members:
            await member.client.aclose()
