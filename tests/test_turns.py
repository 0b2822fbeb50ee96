"""Turns (heapdb.service.turns): never more holders than the size, the waiting served in the order
they came, a waiter that goes away taken out of the queue, every turn given back, across loops too;
and which requests take them."""

from __future__ import annotations

import asyncio
import threading

import pytest

from heapdb.service import links
from heapdb.service.app import takes_turns
from heapdb.service.turns import TurnCounts, Turns

WAIT = 10.0  # seconds any step may take before the test calls it stuck


async def _until(condition, what: str) -> None:
    async with asyncio.timeout(WAIT):
        while not condition():
            await asyncio.sleep(0.001)
    assert condition(), what


def test_never_more_holders_than_the_size_and_every_turn_comes_back() -> None:
    turns = Turns(3)
    now = most = 0

    async def ask() -> None:
        nonlocal now, most
        for _ in range(10):
            async with turns.turn():
                now += 1
                most = max(most, now)
                await asyncio.sleep(0.001)
                now -= 1

    async def main() -> None:
        async with asyncio.timeout(WAIT):
            await asyncio.gather(*(ask() for _ in range(12)))

    asyncio.run(main())
    assert most == 3  # twelve requests wanted turns at once; three had them
    assert turns.counts() == TurnCounts(size=3, running=0, waiting=0)


def test_the_waiting_are_served_first_come_first_served() -> None:
    turns = Turns(1)
    served: list[int] = []

    async def ask(i: int) -> None:
        async with turns.turn():
            served.append(i)
            await asyncio.sleep(0)  # a newcomer arriving now must still queue behind the others

    async def main() -> None:
        tasks = []
        async with turns.turn():
            for i in range(8):
                tasks.append(asyncio.create_task(ask(i)))
                await _until(lambda i=i: turns.counts().waiting == i + 1, f"request {i} to queue")
            assert turns.counts() == TurnCounts(size=1, running=1, waiting=8)
        tasks.append(asyncio.create_task(ask(8)))  # came after the turn was handed over
        async with asyncio.timeout(WAIT):
            await asyncio.gather(*tasks)

    asyncio.run(main())
    assert served == list(range(9))
    assert turns.counts() == TurnCounts(size=1, running=0, waiting=0)


@pytest.mark.parametrize("when", ["while it waits", "as it is handed the turn"])
def test_a_request_cancelled_leaves_the_queue_and_the_next_one_is_served(when: str) -> None:
    """Cancelled while it waits, a request leaves the queue; cancelled once the holder has handed
    it the turn but before it runs again, it passes the turn on. Either way the next one is served."""
    turns = Turns(1)
    served: list[str] = []

    async def ask(name: str) -> None:
        async with turns.turn():
            served.append(name)

    async def main() -> None:
        holder = turns.turn()
        await holder.__aenter__()
        gone = asyncio.create_task(ask("gone"))
        await _until(lambda: turns.counts().waiting == 1, "the first to queue")
        kept = asyncio.create_task(ask("kept"))
        await _until(lambda: turns.counts().waiting == 2, "the second to queue")
        if when == "as it is handed the turn":
            await holder.__aexit__(None, None, None)  # "gone" is granted the turn, not yet woken
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        if when == "while it waits":
            assert turns.counts().waiting == 1
            await holder.__aexit__(None, None, None)
        async with asyncio.timeout(WAIT):
            await kept

    asyncio.run(main())
    assert served == ["kept"]
    assert turns.counts() == TurnCounts(size=1, running=0, waiting=0)


def test_a_turn_comes_back_when_the_answer_fails() -> None:
    turns = Turns(1)

    async def main() -> None:
        with pytest.raises(RuntimeError):
            async with turns.turn():
                raise RuntimeError("the query failed")
        assert turns.counts().running == 0
        async with turns.turn():  # and the next request gets it
            assert turns.counts().running == 1

    asyncio.run(main())


def test_a_turn_is_handed_to_a_request_on_another_event_loop() -> None:
    turns = Turns(1)
    holding, release, served = threading.Event(), threading.Event(), threading.Event()

    async def hold() -> None:
        async with turns.turn():
            holding.set()
            while not release.is_set():
                await asyncio.sleep(0.001)

    async def wait() -> None:
        async with turns.turn():
            served.set()

    first = threading.Thread(target=lambda: asyncio.run(hold()))
    first.start()
    assert holding.wait(WAIT)
    second = threading.Thread(target=lambda: asyncio.run(wait()))
    second.start()
    while turns.counts().waiting != 1:
        assert second.is_alive()
        threading.Event().wait(0.001)
    assert not served.is_set()
    release.set()
    assert served.wait(WAIT), "the request on the other loop never got the turn"
    first.join(WAIT)
    second.join(WAIT)
    assert turns.counts() == TurnCounts(size=1, running=0, waiting=0)


def test_a_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Turns(0)


def test_questions_and_pages_take_turns_and_the_health_check_static_files_and_writes_do_not() -> None:
    assert takes_turns("GET", "/api/snapshots/a/objects/1/why") and takes_turns("GET", "/")
    assert takes_turns("HEAD", "/api/snapshots")
    assert not takes_turns("GET", links.HEALTH)
    assert not takes_turns("GET", links.STATIC + "/heapdb.css")
    assert not takes_turns("POST", "/api/snapshots") and not takes_turns("DELETE", "/api/snapshots/a")
