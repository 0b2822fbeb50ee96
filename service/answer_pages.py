"""Answers cut into pages of bounded size, for clients that read every character (agents).

:class:`Pages` sends an answer's first page and keeps the rest under a handle, in a bounded cache,
for later pages; :mod:`heapdb.service.mcp` sends every answer through it (see docs/mcp.md).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from heapdb.errors import NotFound, ParameterError

MAX_ANSWER_CHARS = 20_000  # characters of JSON in one answer, page envelope included
MAX_PAGE_ITEMS = 200  # list items in one answer
MAX_HANDLES = 64  # answers kept for paging; the least recently used goes first
HANDLE_SECONDS = 15 * 60  # how long a handle stays valid after its last use


def to_json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str)


class Pages:
    """Answers cut into pages of bounded size, the rest kept under a handle for :meth:`page`.

    An answer is a JSON object some of whose fields (``lists``) are lists; the pages run through
    those lists in order, each page carrying the other fields too. An item too big for a page on its
    own is replaced by a note saying so, so that the bound holds whatever the heap looks like.
    """

    def __init__(
        self,
        max_chars: int = MAX_ANSWER_CHARS,
        max_items: int = MAX_PAGE_ITEMS,
        max_handles: int = MAX_HANDLES,
        seconds: float = HANDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_chars, self.max_items, self.max_handles, self.seconds = max_chars, max_items, max_handles, seconds
        self.clock = clock
        self._kept: OrderedDict[str, tuple[float, dict[str, Any], tuple[str, ...], list[tuple[str, str]]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def first(self, data: dict[str, Any], lists: Sequence[str]) -> str:
        """The answer's first page, and a handle for the rest when there is more."""
        head = {key: value for key, value in data.items() if key not in lists}
        # A list the answer lacks is empty: a diff by type has no per-type object turnover (`types`).
        items = [(key, to_json(item)) for key in lists for item in data.get(key) or []]
        handle = secrets.token_urlsafe(12)
        text, end = self._page(head, tuple(lists), items, 0, handle)
        if end < len(items):
            with self._lock:
                self._kept[handle] = (self.clock(), head, tuple(lists), items)
                self._kept.move_to_end(handle)
                while len(self._kept) > self.max_handles:
                    self._kept.popitem(last=False)
        return text

    def page(self, handle: str, cursor: str) -> str:
        """A later page of a kept answer: ``cursor`` is the ``next`` of the page before."""
        with self._lock:
            now = self.clock()
            for stale in [h for h, (used, *_) in self._kept.items() if now - used > self.seconds]:
                del self._kept[stale]
            if handle not in self._kept:
                raise NotFound(
                    f"no answer under handle {handle!r}: it expired (handles last {self.seconds / 60:.0f} minutes "
                    f"and at most {self.max_handles} are kept) or never existed; ask the question again"
                )
            _, head, lists, items = self._kept[handle]
            self._kept[handle] = (now, head, lists, items)
            self._kept.move_to_end(handle)
        start = _decode_cursor(cursor, len(items))
        return self._page(head, lists, items, start, handle)[0]

    def _page(
        self, head: dict[str, Any], lists: tuple[str, ...], items: list[tuple[str, str]], start: int, handle: str
    ) -> tuple[str, int]:
        """The page of items from ``start``, as many as fit, and where the next page starts."""
        end = start
        while end < len(items) and end - start < self.max_items:
            # Measured with the longest envelope (a handle and a next cursor), so the page sent fits too.
            worst = _envelope(start, end + 1, len(items) + 1, handle)
            if len(self._render(head, lists, items[start : end + 1], worst)) > self.max_chars:
                break
            end += 1
        chosen = items[start:end]
        if end == start and start < len(items):  # one item too big for any page: say so in its place
            key, text = items[start]
            note = (
                f"this item is {len(text):,} characters of JSON, over the answer bound of {self.max_chars:,}: "
                "ask a narrower question (a smaller limit, depth or k)"
            )
            chosen, end = [(key, to_json({"omitted": note}))], start + 1
        return self._render(head, lists, chosen, _envelope(start, end, len(items), handle)), end

    @staticmethod
    def _render(
        head: dict[str, Any], lists: tuple[str, ...], chosen: list[tuple[str, str]], page: dict[str, Any]
    ) -> str:
        # Items are kept as JSON text, so a page is assembled without encoding them again.
        parts = [to_json(head)[1:-1]] if head else []
        for key in lists:
            parts.append(f"{to_json(key)}:[{','.join(text for k, text in chosen if k == key)}]")
        parts.append(f'"page":{to_json(page)}')
        return "{" + ",".join(part for part in parts if part) + "}"


def _envelope(start: int, end: int, total: int, handle: str) -> dict[str, Any]:
    """Where a page sits in its answer: ``handle`` and ``next`` (a cursor) are there when there is
    more, ``handle`` also on the later pages."""
    more = end < total
    return {
        "items": [start, end],
        "of": total,
        "handle": handle if more or start else None,
        "next": _encode_cursor(end) if more else None,
    }


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"at:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, total: int) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        label, _, number = text.partition(":")
        offset = int(number)
        if label != "at" or not 0 <= offset <= total:
            raise ValueError
    except ValueError:
        raise ParameterError(f"cursor {cursor!r} is not one this answer gave: pass a page's `next` unchanged") from None
    return offset
