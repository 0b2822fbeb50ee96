"""Answers remembered per snapshot load, for the service."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class AnswerCache:
    """A small thread-safe LRU of answers, keyed by snapshot load (sid) and question.

    A load never changes once it is ``ready`` (``--replace`` makes a new sid), so answers keyed by sid
    never go stale. A service gets the same questions again and again (a why-alive permalink pasted
    in a bug report, the top of the snapshot everyone opens first), so top, types and why-alive
    answers are kept. Concurrent requests for an answer not yet known wait for one computation
    instead of each starting the same one.
    """

    def __init__(self, size: int = 4096, max_bytes: int = 512 * 2**20) -> None:
        self.size = size
        self.max_bytes = max_bytes  # what weighed answers (find's type listings) may hold together
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._weights: dict[tuple[Any, ...], int] = {}
        self._bytes = 0
        self._recent: dict[tuple[Any, ...], tuple[float, Any]] = {}
        self._pending: dict[tuple[Any, ...], threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], compute: Callable[[], T], weigh: Callable[[T], int] | None = None) -> T:
        """The answer for ``key``, computed once; ``weigh`` gives its size in bytes for the byte budget
        (unweighed answers are small and count only against ``size``)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            flight = self._pending.setdefault(key, threading.Lock())
        # Outside the cache's lock: a slow scan holds up only the requests waiting for the same answer.
        with flight:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            try:
                value = compute()
            finally:
                with self._lock:
                    self._pending.pop(key, None)
            with self._lock:
                self._items[key] = value
                if weigh is not None:
                    self._weights[key] = weigh(value)
                    self._bytes += self._weights[key]
                while len(self._items) > self.size or (self._bytes > self.max_bytes and len(self._items) > 1):
                    old, _ = self._items.popitem(last=False)
                    self._bytes -= self._weights.pop(old, 0)
        return value

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
