"""Waiting for the background purger (loader/store/purge.py) in tests, and what its log says."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from heapdb.db import Database
from heapdb.loader.store import lifecycle, purge

PURGER_MODULE = purge.__name__.encode()  # as start_purge runs it: python -m heapdb.loader.store.purge


def purge_log_tail() -> str:
    path = lifecycle.purge_log()
    return "\n".join(path.read_text().splitlines()[-20:]) if path.exists() else "(no purge.log)"


def wait_until(condition: Callable[[], bool], timeout: float = 180) -> None:
    """Poll ``condition`` until it holds; past ``timeout`` seconds fail with the purge log's tail."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s; purge.log:\n{purge_log_tail()}"
        time.sleep(0.5)


def purgers_running() -> list[int]:
    """The pids of this session's background purgers (``python -m heapdb.loader.store.purge``):
    started by earlier tests' commands, they may still be starting when the next test runs.

    Only those of this session's Neo4j, told apart by the heapdb home they inherited: under
    pytest-xdist the other workers' purgers work on their own Neo4j, never finish all at once, and
    waiting for them too made a test wait out its timeout."""
    ours = f"XDG_DATA_HOME={os.environ.get('XDG_DATA_HOME', '')}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                arguments = (entry / "cmdline").read_bytes().split(b"\0")
                if PURGER_MODULE in arguments and ours in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:  # it ended meanwhile
                continue
    return found


def no_purger_at_work(database: Database) -> None:
    """Wait for background purgers started by earlier tests to finish."""
    wait_until(lambda: database.read("MATCH (p:Purger) RETURN count(p) AS n")[0]["n"] == 0)


@contextmanager
def purging_held_off(database: Database) -> Iterator[None]:
    """Hold the purge claim so that no background purger frees hidden snapshots while a test does."""
    claim = purge.Claim(database)
    wait_until(lambda: claim.take() is None)
    with claim:
        yield


def kill_the_purger(database: Database) -> None:
    """Wait for a purger to claim its work, then kill -9 it mid-way."""
    claims: list[dict[str, Any]] = []

    def claimed() -> bool:
        claims[:] = database.read("MATCH (p:Purger) RETURN p.pid AS pid")
        return bool(claims)

    wait_until(claimed, timeout=60)
    os.kill(int(claims[0]["pid"]), 9)
