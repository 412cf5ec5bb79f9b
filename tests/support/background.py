"""A server on its own event loop in a background thread, for tests.

Synchronous test code, in-process clients (on their own loops) and subprocesses such as
``evaluator serve`` all reach such a server over real loopback sockets. A subclass calls
:meth:`BackgroundServer._init_thread` when built and implements ``_start`` (bind, and set
``port``) and ``_stop``; ``with`` starts and stops it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Self

__all__ = ["BackgroundServer"]


class BackgroundServer:
    port: int

    def _init_thread(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _start(self) -> None:
        raise NotImplementedError

    async def _stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
