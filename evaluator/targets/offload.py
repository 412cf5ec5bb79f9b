"""Large response bodies decoded in a child process, not in a thread of this one.

A 3 to 4 MB body (1.3 M U+FDFA, ligatures, plain words) costs one ``msgspec`` decode and one
UTF-8 decode of its strings, each a single C call that holds the GIL from start to end (about
20 ms). In a worker thread that is off the event loop but not off its lock: with ten such
bodies at once the daemon's loop waited for the GIL at each of its syscalls and ``/healthz``
answered in 330 to 650 ms. In a child process the decode holds another interpreter's lock;
what crosses back is the decoded value, whose unpickling costs about half the decode.

One worker, created on first use, started by ``forkserver`` (a fork of a daemon running
threads could inherit a held lock): bodies are decoded one at a time, as the thread path did,
so memory stays bounded by the bodies already held. A child that dies (killed for memory,
say) fails the case that was in it with :class:`~evaluator.errors.ResponseMemoryError` and
the next body gets a fresh pool: the daemon never dies with it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import threading
from concurrent.futures.process import BrokenProcessPool

from evaluator import border
from evaluator.errors import ResponseMemoryError

__all__ = ["decode_off_process", "shutdown"]

_lock = threading.Lock()
_pool: concurrent.futures.ProcessPoolExecutor | None = None


def _decode(content: bytes) -> tuple[object, int]:
    """In the child: the body through :func:`evaluator.border.loads`, and how many lone
    surrogates it replaced (the child's own counter, which the parent adds to its own)."""
    before = border.surrogates_replaced()
    body = border.loads(content)
    return body, border.surrogates_replaced() - before


def _executor() -> concurrent.futures.ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("forkserver")
            )
        return _pool


def _discard(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Forget a broken pool, so the next body starts a fresh one."""
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


async def decode_off_process(content: bytes) -> object:
    """:func:`evaluator.border.loads` of ``content`` in the child process.

    Raises:
        ValueError: not JSON, or nested too deep (as :func:`~evaluator.border.loads`).
        ResponseMemoryError: the child process ended while decoding it.
    """
    pool = _executor()
    try:
        body, replaced = await asyncio.wrap_future(pool.submit(_decode, content))
    except BrokenProcessPool:
        _discard(pool)
        raise ResponseMemoryError(
            f"the process decoding the {len(content)}-byte response ended "
            "(killed, or out of memory); the next response gets a new one"
        ) from None
    if replaced:
        border.count_replaced(replaced)
    return body


def shutdown() -> None:
    """End the child process (on the daemon's stop and at a CLI run's end): a body still
    being decoded is abandoned, its case already cancelled by then."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
