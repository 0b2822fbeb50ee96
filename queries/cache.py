"""Answers remembered per snapshot load, for the service."""

from __future__ import annotations

import threading
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

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._pending: dict[tuple[Any, ...], threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
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
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return value
