"""Answers remembered per snapshot load, for the service."""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar, cast

from heapdb.errors import StillComputing

T = TypeVar("T")


class AnswerCache:
    """A small thread-safe LRU of answers, keyed by snapshot load (sid) and question.

    A load never changes once it is ``ready`` (``--replace`` makes a new sid), so answers keyed by sid
    never go stale. A service gets the same questions again and again (a why-alive permalink pasted
    in a bug report, the top of the snapshot everyone opens first), so top, types and why-alive
    answers are kept. Concurrent requests for an answer not yet known wait for one computation
    instead of each starting the same one.
    """

    def __init__(self, size: int = 4096, max_bytes: int = 512 * 2**20, wait: float | None = None) -> None:
        self.size = size
        self.max_bytes = max_bytes  # what weighed answers (find's type listings) may hold together
        # How long a request waits for an answer being worked out before StillComputing (None: as
        # long as it takes). With a bound, the work runs in a thread of its own and goes on.
        self.wait = wait
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._weights: dict[tuple[Any, ...], int] = {}
        self._bytes = 0
        self._recent: dict[tuple[Any, ...], tuple[float, Any]] = {}
        self._pending: dict[tuple[Any, ...], Future[Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], compute: Callable[[], T], weigh: Callable[[T], int] | None = None) -> T:
        """The answer for ``key``, computed once; ``weigh`` gives its size in bytes for the byte budget
        (unweighed answers are small and count only against ``size``). Requests for an answer being
        worked out wait for that one computation, up to :attr:`wait` seconds."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return cast(T, self._items[key])
            flight = self._pending.get(key)
            starts = flight is None
            if flight is None:
                flight = self._pending[key] = Future()
        if starts and self.wait is None:
            self._settle(key, flight, compute, weigh)
        elif starts:
            # A thread of its own, in this request's context: a request that stops waiting leaves
            # the work to finish and be kept, so that the request asking again gets it.
            work = contextvars.copy_context()
            threading.Thread(target=work.run, args=(self._settle, key, flight, compute, weigh), daemon=True).start()
        try:
            return cast(T, flight.result(timeout=self.wait))
        except FutureTimeout:
            raise StillComputing(
                f"this answer is still being worked out ({self.wait:g} s so far, it reads much of the snapshots "
                "it compares); ask again in a few seconds, it is kept once done",
                retry_after=max(1, math.ceil(self.wait or 0)),
            ) from None

    def _settle(
        self, key: tuple[Any, ...], flight: Future[Any], compute: Callable[[], T], weigh: Callable[[T], int] | None
    ) -> None:
        """Work the answer out and keep it; whoever waits for it gets it, or its exception."""
        try:
            value = compute()
        except BaseException as error:
            with self._lock:
                self._pending.pop(key, None)
            flight.set_exception(error)
            return
        with self._lock:
            self._pending.pop(key, None)
            self._items[key] = value
            if weigh is not None:
                self._weights[key] = weigh(value)
                self._bytes += self._weights[key]
            while len(self._items) > self.size or (self._bytes > self.max_bytes and len(self._items) > 1):
                old, _ = self._items.popitem(last=False)
                self._bytes -= self._weights.pop(old, 0)
        flight.set_result(value)

    def recent(self, key: tuple[Any, ...], max_age: float, compute: Callable[[], T]) -> T:
        """A value computed at most ``max_age`` seconds ago, for facts that may change but rarely do
        (which load a tag names). Failures are not remembered."""
        now = time.monotonic()
        with self._lock:
            hit = self._recent.get(key)
            if hit is not None and now - hit[0] <= max_age:
                return hit[1]
        value = compute()
        with self._lock:
            if len(self._recent) >= self.size:
                self._recent.clear()
            self._recent[key] = (now, value)
        return value
