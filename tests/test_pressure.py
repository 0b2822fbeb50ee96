"""A service's loads make way for its questions: the service says when more requests are in flight
than the machine has cores (heapdb.service.pressure), and a load reads it after each write
transaction and waits (heapdb.loader.store.pace)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from heapdb import settings
from heapdb.loader.store import pace
from heapdb.service.pressure import WINDOW_SECONDS, InFlight, Pressure


def eventually(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``condition`` holds within ``seconds`` (polled; a bound, not a timing claim)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_busy_while_more_requests_than_cores_and_only_while_a_load_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flight = InFlight()
    pressure = Pressure(tmp_path / "1.busy", flight, cores=2)
    monkeypatch.setenv(settings.BUSY_FILE.name, str(pressure.file))
    assert pressure.file.read_bytes() == b"0" and not pace.busy()
    with pressure.running():
        flight.count = 3
        assert eventually(pace.busy)
        flight.count = 2  # as many as cores: not busy
        assert eventually(lambda: not pace.busy())
        flight.count = 50
        assert eventually(pace.busy)
    assert eventually(lambda: not pace.busy())  # the load ended: it says so
    time.sleep(3 * WINDOW_SECONDS)  # and with no load running it does not look at all
    assert not pace.busy()
    pressure.close()
    assert eventually(lambda: not pressure.file.exists())
    assert not pace.busy()  # a file that is gone: a load never waits for a service that is gone


def test_a_load_waits_while_the_service_is_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(pace.time, "sleep", slept.append)
    busy = tmp_path / "busy"
    pace.after_write(2.0)  # no service runs this load
    monkeypatch.setenv(settings.BUSY_FILE.name, str(busy))
    busy.write_bytes(b"0")
    pace.after_write(2.0)
    assert slept == []
    busy.write_bytes(b"1")
    pace.after_write(2.0)  # 50 percent by default: as long again
    monkeypatch.setenv(settings.LOAD_SHARE.name, "80")
    pace.after_write(2.0)  # 2 s of 2.5
    monkeypatch.setenv(settings.LOAD_SHARE.name, "100")
    pace.after_write(2.0)
    assert slept == [pytest.approx(2.0), pytest.approx(0.5)]
