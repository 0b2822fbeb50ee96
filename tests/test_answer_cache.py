"""The service's answer cache: its count and byte bounds, values that may be a little old, and how
long a request waits for an answer being worked out."""

from __future__ import annotations

import threading
import time

import pytest

from heapdb.errors import StillComputing
from heapdb.queries.cache import AnswerCache


def test_weighed_answers_are_evicted_oldest_first_past_the_byte_budget() -> None:
    cache = AnswerCache(size=100, max_bytes=250)
    computed: list[str] = []

    def answer(key: str) -> str:
        computed.append(key)
        return key * 100

    for key in "abc":
        cache.get((key,), lambda key=key: answer(key), weigh=len)  # type: ignore[misc]
    # 300 bytes were asked for 250: "a" went, "b" and "c" stay.
    cache.get(("b",), lambda: answer("b"), weigh=len)
    cache.get(("c",), lambda: answer("c"), weigh=len)
    assert computed == ["a", "b", "c"]
    cache.get(("a",), lambda: answer("a"), weigh=len)
    assert computed == ["a", "b", "c", "a"]
    # Unweighed answers count against the number of entries only.
    small = AnswerCache(size=2)
    for key in "xyz":
        small.get((key,), lambda key=key: answer(key))  # type: ignore[misc]
    small.get(("x",), lambda: answer("x"))
    assert computed[-1] == "x" and computed.count("x") == 2


def test_recent_values_are_recomputed_once_older_than_asked() -> None:
    cache = AnswerCache()
    calls = []

    def look_up() -> int:
        calls.append(1)
        return len(calls)

    assert cache.recent(("tag",), 60.0, look_up) == 1
    assert cache.recent(("tag",), 60.0, look_up) == 1  # young enough: remembered
    time.sleep(0.02)
    assert cache.recent(("tag",), 0.01, look_up) == 2  # too old for this caller: looked up again
    assert len(calls) == 2


def test_a_failed_computation_is_not_remembered() -> None:
    cache = AnswerCache()

    def failing() -> int:
        raise LookupError("no such tag")

    for _ in range(2):
        try:
            cache.recent(("tag",), 60.0, failing)
        except LookupError:
            pass
        else:
            raise AssertionError("the failure was remembered")
    assert cache.recent(("tag",), 60.0, lambda: 7) == 7


def test_a_request_waits_at_most_the_bound_and_the_work_goes_on_to_be_kept() -> None:
    cache = AnswerCache(wait=0.05)
    release = threading.Event()
    calls: list[int] = []

    def slow() -> str:
        calls.append(1)
        release.wait(10)
        return "answer"

    for _ in range(2):  # the first request starts the work, the second finds it under way
        with pytest.raises(StillComputing) as refused:
            cache.get(("diff",), slow)
        assert refused.value.http_status == 503 and refused.value.retry_after == 1
        assert "still being worked out" in str(refused.value)
    release.set()
    deadline = time.monotonic() + 10
    while True:  # as a client would: ask again until the answer is there
        try:
            assert cache.get(("diff",), slow) == "answer"
            break
        except StillComputing:
            assert time.monotonic() < deadline
    assert calls == [1]  # one computation for every request


def test_every_waiting_request_gets_the_failure_and_the_next_one_tries_again() -> None:
    cache = AnswerCache(wait=5.0)
    started, release = threading.Event(), threading.Event()

    def failing() -> str:
        started.set()
        release.wait(10)
        raise LookupError("the snapshot was dropped")

    failures: list[str] = []

    def ask() -> None:
        try:
            cache.get(("diff",), failing)
        except LookupError as e:
            failures.append(str(e))

    first = threading.Thread(target=ask)
    first.start()
    started.wait(10)
    second = threading.Thread(target=ask)
    second.start()
    time.sleep(0.05)
    release.set()
    first.join(10)
    second.join(10)
    assert failures == ["the snapshot was dropped"] * 2
    assert cache.get(("diff",), lambda: "again") == "again"


def test_a_page_still_being_worked_out_says_so_and_asks_again_by_itself() -> None:
    from starlette.requests import Request

    import heapdb.service.app  # noqa: F401 (its page modules set the templates' globals)
    from heapdb.service import pages

    def request(path: str) -> Request:
        return Request({"type": "http", "method": "GET", "path": path, "headers": [], "query_string": b""})

    page = pages.error_page(request("/snapshots/a/diff/b"), 503, "this answer is still being worked out", 5)
    assert page is not None and page.headers["Retry-After"] == "5"
    html = bytes(page.body).decode()
    assert '<meta http-equiv="refresh" content="5">' in html and "asks again in 5 s" in html
    plain = pages.error_page(request("/snapshots/a/diff/b"), 404, "no snapshot 'a'")
    assert plain is not None and "refresh" not in bytes(plain.body).decode() and "Retry-After" not in plain.headers
    assert (
        pages.error_page(request("/api/snapshots/a"), 503, "still being worked out", 5) is None
    )  # the API answers JSON
