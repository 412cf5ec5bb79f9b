"""Whole-call deadlines of one target: :func:`asyncio.timeout`'s semantics, one timer for all.

Each HTTP call runs under a deadline (``timeout_seconds``) that covers connecting, sending,
every byte of the body and its decoding. ``asyncio.timeout`` gives each call a timer handle
of its own in the event loop's heap (and cancels it a few milliseconds later): with fifty
calls in flight the heap holds hundreds of cancelled handles, ordered by Python-level
comparisons, and the timer was the largest single cost of a call in the client after the
request itself.

Every call of a target has the same duration, so the calls' deadlines come in the order
the calls started: the oldest call still running always has the earliest deadline.
:class:`Deadlines` keeps the calls in a queue in start order and one timer for the oldest
running call; when it fires, the overdue calls are cancelled and the timer moves on to the
next running one (with none left, it is not armed again). A timer that has lost its call
stays armed: it fires no later than any later call's deadline and finds nothing due. A
call that ends only marks its entry (finished entries at the head are dropped at once, the
rest when the queue has grown past a multiple of the calls in flight), so the queue stays
bounded by the calls in flight even behind one stuck call.

Cancellation works as ``asyncio.timeout``'s: the task is cancelled at its deadline, and the
:exc:`asyncio.CancelledError` becomes :exc:`TimeoutError` when the block exits unless the task
was also cancelled from outside (Ctrl-C, a shutdown): that cancellation propagates.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from types import TracebackType

__all__ = ["Deadline", "Deadlines"]

#: states of a :class:`Deadline` (plain ints: compared once or twice per call)
_CREATED, _ENTERED, _EXPIRING, _EXPIRED, _EXITED = range(5)

#: a timer may run this early (the event loop runs a handle due within the clock's resolution)
_RESOLUTION = time.get_clock_info("monotonic").resolution
#: the queue is compacted when it holds more than this many entries per running call
_SLACK = 4
#: ... and at least this many entries (a few finished ones are not worth a pass)
_MIN_COMPACT = 64


class Deadline:
    """One call's deadline: ``with deadlines.new(): ...`` inside a task (see
    :class:`Deadlines`). A plain context manager, as entering and leaving wait for nothing:
    ``async with`` made two coroutines a call."""

    __slots__ = ("_cancelling", "_owner", "_state", "_task", "when")

    def __init__(self, owner: Deadlines) -> None:
        self._owner = owner
        self._state = _CREATED
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        #: the loop time at which the call is cancelled (set on entry)
        self.when = 0.0

    def expired(self) -> bool:
        """Whether the deadline passed while the block ran (as ``Timeout.expired``)."""
        return self._state == _EXPIRING or self._state == _EXPIRED

    def __enter__(self) -> Deadline:
        if self._state != _CREATED:
            raise RuntimeError("a Deadline is entered once")
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("a Deadline is used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._state = _ENTERED
        self._owner._enter(self, loop)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        state = self._state
        if state == _ENTERED:
            self._state = _EXITED
            self._owner._exit()
            return
        if state == _EXPIRING:
            self._state = _EXPIRED
            self._owner._exit()
            task = self._task
            assert task is not None
            # only our own cancellation becomes a timeout: one from outside stays one
            if task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc
        return

    def _expire(self) -> None:
        self._state = _EXPIRING
        task = self._task
        assert task is not None
        task.cancel()


class Deadlines:
    """The deadlines of one target's calls, each ``seconds`` after the call began.

    Example::

        deadlines = Deadlines(30.0)
        deadline = deadlines.new()
        try:
            with deadline:
                await call()
        except TimeoutError:
            if not deadline.expired():
                raise  # a TimeoutError of the call's own

    Args:
        seconds: every call's duration limit (> 0).
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._queue: deque[Deadline] = deque()
        self._running = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def new(self) -> Deadline:
        """A deadline for one call, starting when it is entered."""
        return Deadline(self)

    def _enter(self, deadline: Deadline, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:
            # a new event loop (one asyncio.run per CLI command): the old one's timer and
            # calls are gone with it
            self._loop, self._timer = loop, None
            self._queue.clear()
            self._running = 0
        deadline.when = loop.time() + self.seconds
        self._queue.append(deadline)
        self._running += 1
        if self._timer is None:
            self._arm(deadline.when)

    def _exit(self) -> None:
        self._running -= 1
        queue = self._queue
        while queue and queue[0]._state != _ENTERED:
            queue.popleft()
        if len(queue) > _MIN_COMPACT and len(queue) > _SLACK * self._running:
            # finished calls behind a slow one: keep only the running ones (in order)
            self._queue = deque(d for d in queue if d._state == _ENTERED)
        # an armed timer stays armed when the queue empties: it fires at a time no later
        # than any later call's deadline and finds nothing due (one call after another would
        # otherwise schedule and cancel a timer each)

    def _arm(self, when: float) -> None:
        assert self._loop is not None
        self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        assert self._loop is not None
        self._timer = None
        now = self._loop.time() + _RESOLUTION
        queue = self._queue
        while queue:
            head = queue[0]
            if head._state != _ENTERED:
                queue.popleft()
            elif head.when <= now:
                queue.popleft()
                head._expire()
            else:
                self._arm(head.when)
                return
