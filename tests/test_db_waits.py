"""What a command does while Neo4j does not answer (heapdb.db.Database.answering): it waits for a
database that may come back, saying so once, and stops at once when the managed Neo4j's process is
gone. The real kill of a managed Neo4j during a load is in tests/test_neo4j_managed.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from heapdb import config
from heapdb.db import Database
from heapdb.errors import DatabaseUnavailable


class Flaky:
    """A call that fails ``failures`` times as an unreachable Neo4j does, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise DatabaseUnavailable("cannot reach Neo4j at bolt://127.0.0.1:1: connection refused")
        return "answer"


def database(managed: bool, wait_seconds: float, said: list[str]) -> Database:
    connection = config.Connection(uri="bolt://127.0.0.1:1", user="neo4j", password="x", managed=managed)
    driver: Any = None  # never reached: the calls below stand for the driver's
    return Database(driver, connection, wait_seconds=wait_seconds, say=said.append)


def test_a_database_that_comes_back_is_waited_for_and_said_once() -> None:
    said: list[str] = []
    call = Flaky(2)
    assert database(False, 10, said).answering(call) == "answer"
    assert call.calls == 3
    assert said == [
        "Neo4j at bolt://127.0.0.1:1 (database neo4j, user neo4j) stopped answering: waiting up to 10 s for it to come back"
    ]


def test_the_wait_is_bounded() -> None:
    said: list[str] = []
    with pytest.raises(DatabaseUnavailable, match="connection refused"):
        database(False, 1.5, said).answering(Flaky(1000))
    assert len(said) == 1


def test_a_managed_neo4j_whose_process_is_gone_is_an_error_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))  # no managed instance runs here
    said: list[str] = []
    call = Flaky(1000)
    with pytest.raises(DatabaseUnavailable, match="is gone: its process ended") as e:
        database(True, 60, said).answering(call)
    assert call.calls == 1 and said == []
    assert "heapdb neo4j start" in str(e.value)
