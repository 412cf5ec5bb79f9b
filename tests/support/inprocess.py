"""In-process daemons for tests: start one on a fresh event loop, poll its metrics."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from evaluator.config import Settings
from evaluator.daemon import Daemon

__all__ = ["run_bounded", "running", "until"]


def run_bounded(body: Callable[[], Coroutine[Any, Any, None]], timeout: float = 10.0) -> None:
    """Run an async test body on a fresh event loop, bounded in time."""

    async def bounded() -> None:
        await asyncio.wait_for(body(), timeout)

    asyncio.run(bounded())


@contextlib.asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[Daemon]:
    """A started daemon, stopped (grace period and all) when the block ends."""
    daemon = Daemon(settings)
    await daemon.start()
    try:
        yield daemon
    finally:
        await daemon.stop()


async def until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Poll ``condition`` until it holds; TimeoutError after ``seconds``."""
    async with asyncio.timeout(seconds):
        while True:  # metrics have no event to wait on: poll them
            if condition():
                return
            await asyncio.sleep(0.02)
