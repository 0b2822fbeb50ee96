"""The service's answer cache: its count and byte bounds, and values that may be a little old."""

from __future__ import annotations

import time

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
