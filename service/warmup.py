"""Warming up a service as it starts, before it answers: the common questions asked once, then the
newest snapshots read into Neo4j's page cache.

After a restart, Neo4j has planned no query, its JVM has compiled none of its code and its page cache
is empty, and the service remembers no answer. Under 50 clients the first minute then answered a
third of the warm requests a second, with a p99 of 4 to 9 s and requests timing out (docs/benchmarks.md,
"Cold start"): each request costs several times its warm CPU, and the clients queue behind each
other. Warming in a background thread while the clients came did not help (the warm-up queued with
them: 12 steps in 60 s); warming before the service answers did. So, for at most
``HEAPDB_WARM_UP`` seconds in all, before the service's port opens:

1. **The questions people ask first, once each**, over the :data:`MAX_SNAPSHOTS` newest full
   snapshots, the newest first: its top, types and suspects; why, dominators, retains and object
   about its :data:`EXERCISED` largest retainers, and find for a type; diff between consecutive
   snapshots, leaks over the newest three and growth over them all. Neo4j plans each stored query on
   its first run and compiles its code as it runs; the service remembers the reports' answers. The
   questions that match every object of two or three snapshots (diff by object, leaks by id) are
   asked only of snapshots under :data:`MATCHED_OBJECTS` objects: on larger ones one takes longer
   than the whole warm-up (15 to 40 s at 2.5 million).
2. **What the object questions read**, snapshot by snapshot: the objects, the two indexes every
   object question seeks (by id; by dominator and retained size, which ``retains`` reads), the
   first-path relationships ``why`` follows; then the references.

It stops at the time limit (each query's timeout is the time left), when the service stops, or at the
first error from Neo4j (away, say): the service then starts answering. A question refused as a
client's would be (a snapshot still loading its references) is skipped. It is an optimisation,
never a reason for the service to fail; it says what it did on the service's log.

Then, while the service runs, it **looks ahead** (:class:`LookAhead`): each time a load makes a
snapshot ready (or writes its objects, or a snapshot is dropped, replaced or pruned), it works out
the cross-snapshot answers about the newest snapshots, diff, growth and leaks, before clients ask.
Each such first answer reads two to six snapshots' stored totals or every object of two; under the
mixed-load drill's 50 clients it took 1 to 5 s, with every client asking it waiting for it
(docs/benchmarks.md, "Mixed-load drill"). Done once in the background it costs the same, but only
clients that ask within that time wait, and the answers serve every limit asked (cut from one).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import neo4j.exceptions

from heapdb import settings
from heapdb.db import Database
from heapdb.errors import DatabaseUnavailable, HeapdbError, QueryTimeout, StillComputing
from heapdb.loader.store.snapshots import Snapshot
from heapdb.queries import params
from heapdb.queries.cache import AnswerCache
from heapdb.queries.questions import Questions
from heapdb.queries.results import ObjectInfo

MAX_SNAPSHOTS = 8  # the newest full snapshots warmed: those asked about most after a restart
EXERCISED = 10  # each snapshot's largest retainers the object questions are asked about
MATCHED_OBJECTS = 500_000  # the largest snapshots diff by object and leaks by id are warmed on
TIME_LEFT_FLOOR = 0.5  # seconds: with less left, a query is not worth starting
LOOK_SECONDS = 1.0  # how often the look-ahead reads the listing: within a client's own refresh

# What the object questions read of one snapshot, in the order they need it. Counting properties
# makes Neo4j read them, not only the nodes; the index hints make the scans read the indexes' pages,
# which the questions' seeks then find in memory.
OBJECT_PAGES = (
    ("objects", "MATCH (o:Object {sid: $sid}) RETURN count(properties(o)) AS n"),
    (
        "id index",
        "MATCH (o:Object) USING INDEX o:Object(sid, id) WHERE o.sid = $sid AND o.id IS NOT NULL RETURN count(*) AS n",
    ),
    (
        "dominator index",
        "MATCH (o:Object) USING INDEX o:Object(sid, dom, retained_size) "
        "WHERE o.sid = $sid AND o.dom IS NOT NULL AND o.retained_size IS NOT NULL RETURN count(*) AS n",
    ),
    ("first paths", "MATCH (o:Object {sid: $sid})<-[:FIRST]-(holder) RETURN count(holder.id) AS n"),
)
REFERENCE_PAGES = (
    ("references", "MATCH (o:Object {sid: $sid})-[r:REF|WEAK_REF]->() RETURN count(properties(r)) AS n"),
)

Ask = Callable[[Questions], Any]


class OutOfTime(Exception):
    """The warm-up's time is up, or the service is stopping."""


class WarmUp:
    """One service's warm-up (see the module's docs): :meth:`start` asks, then reads, and returns.

    Run as the app starts, so that the service answers nothing before it ends; :meth:`stop` (from
    another thread, or before it starts) ends it at the next query."""

    def __init__(
        self,
        database: Callable[[], Database],
        cache: AnswerCache | None,
        seconds: float,
        say: Callable[[str], None],
        newest: int = MAX_SNAPSHOTS,
    ) -> None:
        self._database = database
        self._cache = cache
        self._seconds = seconds
        self._say = say
        self._newest = newest
        self._stopping = threading.Event()
        self._deadline = 0.0
        self.done: list[tuple[str, float]] = []  # each step done, in order ("top TAG"...), with its seconds

    def start(self) -> None:
        """Ask the questions, then read the snapshots' pages; nothing when switched off."""
        if self._seconds <= 0:
            return
        self._deadline = time.monotonic() + self._seconds
        # Before the port opens no request waits on the cache: each answer is let finish (within
        # the warm-up's own time), rather than left to a thread as a request's would be.
        patience = None if self._cache is None else self._cache.wait
        if self._cache is not None:
            self._cache.wait = None
        try:
            snapshots = self._attempt("questions asked", self._ask)
            if snapshots:
                self._attempt("parts of snapshots read into Neo4j's page cache", lambda: self._read(snapshots))
        finally:
            if self._cache is not None:
                self._cache.wait = patience

    def stop(self) -> None:
        self._stopping.set()

    def _attempt(self, what: str, work: Callable[[], list[Snapshot]]) -> list[Snapshot]:
        """``work()``, said on the log with how many steps it took; an ending other than its own too."""
        started, steps = time.monotonic(), len(self.done)
        result: list[Snapshot] = []
        ending = ""
        try:
            result = work()
        except OutOfTime:
            ending = ", stopped with the service" if self._stopping.is_set() else ", stopped: out of time"
        except (HeapdbError, neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as e:
            ending = f", stopped: {type(e).__name__}: {e}"
        self._say(f"warm-up: {len(self.done) - steps} {what} in {time.monotonic() - started:.1f} s{ending}")
        return result

    def _ask(self) -> list[Snapshot]:
        """Each common question once (see the module's docs); the snapshots asked about, newest first."""
        database = self._database()
        listed = Questions(database, self._left(), self._cache).snapshots()
        full = [s for s in reversed(listed) if not s.summary and s.objects_ready][: self._newest]
        for step, ask in _questions(full):
            self._question(database, step, ask)
        return full

    def _question(self, database: Database, step: str, ask: Ask) -> Any:
        started = time.monotonic()
        try:
            answer = ask(Questions(database, self._left(), self._cache))
        except (DatabaseUnavailable, QueryTimeout):
            raise  # Neo4j away, or the time up: nothing more to do
        except HeapdbError:
            return None  # refused as a client's question would be (its references still loading)
        self.done.append((step, time.monotonic() - started))
        return answer

    def _read(self, snapshots: list[Snapshot]) -> list[Snapshot]:
        database = self._database()
        for pages in (OBJECT_PAGES, REFERENCE_PAGES):
            for snapshot in snapshots:
                for step, cypher in pages:
                    started = time.monotonic()
                    database.read(cypher, {"sid": snapshot.sid}, timeout=self._left())
                    self.done.append((f"{step} {snapshot.tag}", time.monotonic() - started))
        return snapshots

    def _left(self) -> float:
        """Seconds left for the next query; :class:`OutOfTime` when none are."""
        left = self._deadline - time.monotonic()
        if self._stopping.is_set() or left < TIME_LEFT_FLOOR:
            raise OutOfTime
        return left


class LookAhead:
    """While the service runs: the cross-snapshot answers about the newest snapshots worked out as
    soon as the snapshots change, before a client asks (see the module's docs).

    A thread reads the listing every ``every`` seconds (one small query). When the ready snapshots
    (which, and how far their loads are) differ from the last look, it asks :func:`_compared` of the
    :data:`MAX_SNAPSHOTS` newest full ones, one question at a time, through the service's cache:
    those already known cost nothing, a client asking one being worked out waits for this
    computation rather than starting its own, and the reports are cut per limit from one answer
    (:data:`heapdb.queries.compare.PREFIX_DIFFS`). A question refused (a load still writing what it
    reads) is asked again at the next change; Neo4j away ends nothing, the next look tries again."""

    def __init__(
        self,
        database: Callable[[], Database],
        cache: AnswerCache,
        timeout: float,
        say: Callable[[str], None],
        every: float = LOOK_SECONDS,
        newest: int = MAX_SNAPSHOTS,
    ) -> None:
        self._database = database
        self._cache = cache
        self._timeout = timeout
        self._say = say
        self._every = every
        self._newest = newest
        self._stopping = threading.Event()
        self._seen: tuple[Any, ...] | None = None
        self.asked = 0  # questions asked since the start, answered or not (for tests and the log)

    def start(self) -> None:
        threading.Thread(target=self._run, name="heapdb-look-ahead", daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()

    def _run(self) -> None:
        while not self._stopping.wait(self._every):
            try:
                self.look()
            except (HeapdbError, neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError):
                self._seen = None  # Neo4j away, say: look again from scratch

    def look(self) -> int:
        """One look: the questions asked when the snapshots changed since the last (0 otherwise)."""
        database = self._database()
        listed = Questions(database, self._timeout, self._cache).snapshots()
        full = [s for s in reversed(listed) if not s.summary][: self._newest]
        state = tuple((s.sid, s.objects_ready, s.references_ready) for s in full)
        if state == self._seen:
            return 0
        self._seen = state
        started, asked = time.monotonic(), 0
        for _step, ask in _compared(full):
            if self._stopping.is_set():
                break
            asked += 1
            self._ask(database, ask)
        self.asked += asked
        if asked:
            self._say(
                f"look-ahead: {asked} cross-snapshot questions about the newest snapshots in {time.monotonic() - started:.1f} s"
            )
        return asked

    def _ask(self, database: Database, ask: Ask) -> None:
        while not self._stopping.is_set():
            try:
                ask(Questions(database, self._timeout, self._cache))
                return
            except StillComputing:
                continue  # asking again waits on the same computation: one heavy question at a time
            except DatabaseUnavailable:
                raise  # Neo4j away: the next look starts from scratch
            except HeapdbError:
                # Refused, or over the query timeout, as a client's question would be: asked again at
                # the next change, not at every look (a question that times out would cost its
                # timeout each second).
                return


def _questions(newest: list[Snapshot]) -> Iterator[tuple[str, Ask]]:
    """The questions to ask, as (step, ask): every kind about the newest snapshot first (so that each
    stored query is planned early), then the cross-snapshot ones, then the other snapshots."""
    if not newest:
        return
    yield from _about(newest[0].tag, find=True)
    yield from _compared(newest)
    for snapshot in newest[1:]:
        yield from _about(snapshot.tag, find=False)


def _compared(newest: list[Snapshot]) -> Iterator[tuple[str, Ask]]:
    """The cross-snapshot questions about snapshots listed newest first: diff between consecutive
    ones (the newest pair first), growth over them all, leaks over the newest three."""
    oldest_first = newest[::-1]
    for before, after in reversed(list(zip(oldest_first, oldest_first[1:]))):
        for by in ("type", "path", *_matching("object", before, after)):
            yield f"diff by {by} {before.tag} {after.tag}", _diff(before.tag, after.tag, by)
    if len(newest) >= 3:
        for by in ("type", "path"):
            yield f"growth by {by}", _growth([s.tag for s in oldest_first], by)
        base, target, final = (s.tag for s in oldest_first[-3:])
        for by in ("path", *_matching("id", *oldest_first[-3:])):
            yield f"leaks by {by} {base} {target} {final}", _leaks(base, target, final, by)


def _matching(by: str, *snapshots: Snapshot) -> tuple[str, ...]:
    """``(by,)`` when the snapshots are small enough to match their objects in the warm-up, else ``()``."""
    return (by,) if all((s.object_count or 0) < MATCHED_OBJECTS for s in snapshots) else ()


def _about(tag: str, find: bool) -> Iterator[tuple[str, Ask]]:
    """One snapshot's reports, and the object questions about its largest retainers."""
    top: list[ObjectInfo] = []
    yield f"top {tag}", lambda q: top.extend(q.top(tag))
    yield f"types {tag}", lambda q: q.types(tag)
    yield f"suspects {tag}", lambda q: q.suspects(tag)
    # `top` is filled by now: a generator runs on only when the step before it was asked.
    for largest in top[:EXERCISED]:
        for method in ("why_alive", "dominators", "retains", "object"):
            yield f"{method} {tag} {largest.id}", _about_object(method, tag, largest.id)
    if find and top:
        yield f"find {tag} {top[0].type}", lambda q: q.find(tag, params.Find(type=top[0].type))


def _diff(before: str, after: str, by: str) -> Ask:
    return lambda q: q.diff(before, after, params.Diff.model_validate({"by": by}))


def _leaks(base: str, target: str, final: str, by: str) -> Ask:
    return lambda q: q.leaks(base, target, final, params.Leaks.model_validate({"by": by}))


def _growth(tags: list[str], by: str) -> Ask:
    return lambda q: q.growth(tags, params.Growth.model_validate({"by": by}))


def _about_object(method: str, tag: str, object_id: int) -> Ask:
    """An object question (a :class:`Questions` method taking a tag and an object id), with its defaults."""
    return lambda q: getattr(q, method)(tag, object_id)


def schedule(
    app: Any, database: Callable[[], Database], cache: AnswerCache | None, timeout: float | None = None
) -> WarmUp:
    """Warm up as the app starts, for at most ``HEAPDB_WARM_UP`` seconds: a start-up handler, which
    uvicorn runs before it opens the port; then, with a cache and the warm-up on, look ahead
    (:class:`LookAhead`, its queries bounded by ``timeout``) until the app stops."""

    def say(message: str) -> None:
        print(f"heapdb: {message}", file=sys.stderr, flush=True)

    seconds = settings.WARM_UP.value()
    warm_up = WarmUp(database, cache, seconds, say)
    app.router.on_startup.append(warm_up.start)
    app.router.on_shutdown.append(warm_up.stop)
    if cache is not None and seconds > 0:
        look_ahead = LookAhead(database, cache, params.query_timeout(timeout), say)
        app.router.on_startup.append(look_ahead.start)
        app.router.on_shutdown.append(look_ahead.stop)
    return warm_up
