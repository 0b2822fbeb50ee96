"""Requests that take turns: at most so many answered at once, the others waiting first come, first
served.

Why: 50 clients asking at once put 50 questions into the service and Neo4j together. On a machine
of few cores they then share the CPU, and each answer takes about its own work times the number
running: a question that costs three times another comes back three times later, however long both
waited. Let only a few be answered at once and queue the rest in order, and every answer waits about
as long as any other, plus its own work. The CPU is also spent on fewer requests' worth of threads
and caches at a time, so more of them finish each second (docs/benchmarks.md, "Requests that take
turns").

A turn is handed from the request that finishes straight to the one that waited longest, so that no
newcomer overtakes a waiting request. The state sits behind a thread lock, and a waiter is woken on
its own event loop, so one :class:`Turns` serves any number of loops (a test client runs each
request on a loop of its own). anyio's CapacityLimiter, which does the same within one loop, is
bound to the first loop that uses it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class TurnCounts:
    """What :class:`Turns` is doing now: its size, the requests being answered, those waiting."""

    size: int
    running: int
    waiting: int


class Turns:
    """At most ``size`` holders at once; the others wait in the order they came."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"Turns need a size of at least 1, not {size}")
        self.size = size
        self._lock = threading.Lock()
        self._running = 0
        self._queue: deque[asyncio.Future[None]] = deque()

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold a turn for the body; wait for one first when all are held."""
        ticket: asyncio.Future[None] | None = None
        with self._lock:
            if self._running < self.size and not self._queue:
                self._running += 1
            else:
                ticket = asyncio.get_running_loop().create_future()
                self._queue.append(ticket)
        if ticket is not None:
            try:
                await ticket  # resolved by the holder that hands its turn over; _running counts it
            except asyncio.CancelledError:  # the client went away while it waited
                with self._lock:
                    if ticket in self._queue:
                        self._queue.remove(ticket)
                        raise
                self._release()  # handed a turn as it was cancelled: pass it on
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        with self._lock:
            while self._queue:
                ticket = self._queue.popleft()
                loop = ticket.get_loop()
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_grant, ticket)
                    return
            self._running -= 1

    def counts(self) -> TurnCounts:
        with self._lock:
            return TurnCounts(self.size, self._running, len(self._queue))


def _grant(ticket: asyncio.Future[None]) -> None:
    # On the waiter's loop. A ticket cancelled meanwhile is not granted: its waiter, woken by the
    # cancellation, no longer finds it in the queue and passes the turn on itself.
    if not ticket.done():
        ticket.set_result(None)
