"""The service's start-up warm-up (service/warmup.py) against the session's real Neo4j: what it asks
and reads, that its answers are the service's, and that it never stops the service from starting.

A small synthetic snapshot, loaded here, is the newest one, so the warm-up starts with it; the
warm-up is told to take that one alone.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from heapdb import settings
from heapdb.db import Database
from heapdb.errors import DatabaseUnavailable
from heapdb.loader import store
from heapdb.queries import params
from heapdb.queries.cache import AnswerCache
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff
from heapdb.service import app as app_module
from heapdb.service.app import create_app
from heapdb.service.warmup import LookAhead, WarmUp
from tests.support.snapshots import load_synthetic


@pytest.fixture(scope="module")
def newest(database: Database) -> str:
    return load_synthetic(database, "warmup", 2000, 8000, seed=37).tag


def test_it_asks_the_newest_snapshot_then_reads_its_pages(database: Database, newest: str) -> None:
    said: list[str] = []
    cache = AnswerCache()
    warm_up = WarmUp(lambda: database, cache, 300, said.append, newest=1)
    warm_up.start()
    steps = [step for step, _seconds in warm_up.done]
    assert steps[:3] == [f"top {newest}", f"types {newest}", f"suspects {newest}"]
    asked = {step.split()[0] for step in steps}
    assert {"why_alive", "dominators", "retains", "object", "find"} <= asked
    assert {f"objects {newest}", f"dominator index {newest}", f"references {newest}"} <= set(steps)
    assert [s.split(":")[0] for s in said] == ["warm-up", "warm-up"]
    assert "stopped" not in " ".join(said)
    # The reports are the service's answers now: the cache has top's, keyed as Questions.top keys it.
    sid = store.get_snapshot(database, newest).sid

    def not_remembered() -> list:
        raise AssertionError("the warm-up's top is not in the service's cache")

    assert cache.get((sid, "top", params.Top()), not_remembered)


def test_switched_off_it_does_nothing(database: Database, newest: str) -> None:
    said: list[str] = []
    warm_up = WarmUp(lambda: database, AnswerCache(), 0, said.append)
    warm_up.start()
    assert warm_up.done == [] and said == []


def test_without_neo4j_it_says_so_and_the_service_starts() -> None:
    said: list[str] = []

    def away() -> Database:
        raise DatabaseUnavailable("cannot reach Neo4j at bolt://127.0.0.1:1")

    WarmUp(away, AnswerCache(), 300, said.append).start()
    assert len(said) == 1 and "stopped: DatabaseUnavailable" in said[0]


def test_a_stopping_service_stops_it(database: Database, newest: str) -> None:
    said: list[str] = []
    warm_up = WarmUp(lambda: database, AnswerCache(), 300, said.append)
    warm_up.stop()
    warm_up.start()
    assert warm_up.done == [] and "stopped with the service" in said[0]


def test_the_service_warms_up_as_it_starts_and_then_answers(
    database: Database, newest: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second: enough to begin, and the test does not wait for the other tests' snapshots.
    monkeypatch.setenv(settings.WARM_UP.name, "1")
    with TestClient(create_app(lambda: database)) as client:
        assert client.get("/api/health").status_code == 200
        assert client.get(f"/api/snapshots/{newest}/top").status_code == 200


def test_the_look_ahead_works_out_the_newest_comparisons_once(database: Database, newest: str) -> None:
    load_synthetic(database, "look-ahead", 2000, 8000, seed=38)  # a second snapshot: a pair to compare
    said: list[str] = []
    cache = AnswerCache()
    look_ahead = LookAhead(lambda: database, cache, 60, said.append, newest=2)
    assert look_ahead.look() >= 2  # diff by type and by path (and by object, small enough) of the newest pair
    assert said and said[0].startswith("look-ahead: ")
    seen = look_ahead._seen
    assert seen is not None and len(seen) == 2
    (after, *_), (before, *_) = seen

    def not_remembered() -> Diff:
        raise AssertionError("the look-ahead's diff is not in the service's cache")

    # Kept at the default limit, as Questions.diff keys it; a client asking fewer rows is served from it.
    for by in ("type", "path"):
        kept = cache.get((before, "diff", after, params.Diff(by=by)), not_remembered)
        assert kept.by == by
    # Nothing changed since: nothing is asked (unless another test's load changed the listing meanwhile).
    assert look_ahead.look() == 0 or look_ahead._seen != seen


def test_a_busy_service_lists_snapshots_from_a_listing_a_second_old(
    database: Database, newest: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(settings.WARM_UP.name, "0")
    with TestClient(create_app(lambda: database)) as client:
        monkeypatch.setattr(app_module, "busy", lambda: True)
        first = client.get("/api/snapshots")
        assert first.status_code == 200 and newest in {s["tag"] for s in first.json()}

        def unreadable(self: Questions) -> list:
            raise DatabaseUnavailable("the listing was read again")

        monkeypatch.setattr(Questions, "snapshots", unreadable)
        assert client.get("/api/snapshots").json() == first.json()  # busy: the listing read a moment ago
        monkeypatch.setattr(app_module, "busy", lambda: False)
        assert client.get("/api/snapshots").status_code == 503  # not busy: read afresh every time
