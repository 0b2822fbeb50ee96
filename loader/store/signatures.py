"""Leak signatures remembered across builds: ``:Build``, ``:Signature`` and ``:SignatureObservation``.

``heapdb gate`` finds leaks as retainer-path signatures (:mod:`heapdb.loader.paths`: indexes,
digits and repeated hops normalised, so a signature is the same in every build). Recording a gate
(:func:`record_builds`) remembers, in one transaction:

- each build it compared, as a ``:Build`` (its name: the snapshot's ``build`` metadata, else the tag);
- each leak signature it found, as a ``:Signature`` (path, type, known-leak reason);
- for every remembered signature and every recorded build whose snapshot is still loaded, what the
  build held that way, as a ``:SignatureObservation`` (retained bytes, objects): a signature found
  at build 4 is looked up in builds 1 to 3 too, when they are still there. A retainer path's
  signature is looked up in the build's ``:PathGroup`` totals here; an inspection row's (a
  duplicated content, a component, a lifecycle leak group: ``Tracked.inspection``) in the build's
  stored inspection, which only the questions read, so the caller gives those (:class:`Observed`);
- then each signature's summary, recomputed from its observations (:func:`summarise`): first and
  last build it was present in, the builds where it grew, and its status.

Observations hold values, not references to snapshot records, so dropping a snapshot (or
replacing its tag) leaves the history as it was. Builds are ordered by their name's number when it
is one (``--meta build=17``), the others after them in load order (:func:`order_key`).
The data model is in ``docs/data-model.md``; the reading side is :mod:`heapdb.queries.gate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import neo4j

from heapdb.db import Database, translate_errors
from heapdb.loader.store.snapshots import Snapshot

STATUSES = ("new", "recurring", "fixed", "known")
BUILD_META = "build"  # the snapshot metadata key (`heapdb load --meta build=N`) that names a build

SCHEMA = (
    "CREATE CONSTRAINT heapdb_build_key IF NOT EXISTS FOR (b:Build) REQUIRE b.build IS UNIQUE",
    "CREATE CONSTRAINT heapdb_signature_key IF NOT EXISTS FOR (s:Signature) REQUIRE s.sig IS UNIQUE",
    "CREATE CONSTRAINT heapdb_signature_observation_key IF NOT EXISTS "
    "FOR (o:SignatureObservation) REQUIRE (o.sig, o.build) IS UNIQUE",
)


def build_name(snapshot: Snapshot) -> str:
    """The build a snapshot belongs to: its ``build`` metadata, else its tag."""
    value = snapshot.meta.get(BUILD_META)
    return str(value) if value not in (None, "") else snapshot.tag


def build_number(name: str) -> float | None:
    """A build name that is a number, as one (so that build 10 comes after build 9); else None."""
    try:
        number = float(name)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def order_key(number: float | None, sid: int) -> tuple[bool, float, int]:
    """Where a build sorts: numbered builds by number, then the others in load order (sid)."""
    return (number is None, number if number is not None else 0.0, sid)


@dataclass(frozen=True)
class Tracked:
    """A leak signature to remember, as the gate found it."""

    sig: int
    path: str
    hops: tuple[str, ...]
    type: str
    known_leak: str | None = None
    # The gate check whose inspection rows hold it (duplicate-strings...); None: a retainer path,
    # looked up in each build's :PathGroup totals.
    inspection: str | None = None


@dataclass(frozen=True)
class Observed:
    """What one build held of an inspection row's signature, as the caller read it from the build's
    stored inspection (``present``: by that check's own floor)."""

    sig: int
    build: str
    retained_size: int  # the bytes the gate compares (wasted, retained, unused)
    objects: int
    present: bool


@dataclass(frozen=True)
class Summary:
    """A signature's history in brief, recomputed from its observations at every record."""

    first_seen: str | None
    last_seen: str | None
    grew: tuple[str, ...]
    status: str


def summarise(observations: Sequence[tuple[str, int, bool]], *, known: bool, noise: int) -> Summary:
    """The summary of one signature's observations, given in build order as ``(build, retained
    bytes, present)``.

    Status: ``known`` when a known_leak rule covers it; else ``fixed`` when the latest build does not
    have it; else ``new`` when the latest build is the first that has it, ``recurring`` when an
    earlier one had it too (it persists, or came back after a fix). A build *grew* it when it
    retained more than ``noise`` bytes over the build before.
    """
    present = [build for build, _, here in observations if here]
    grew = tuple(
        build
        for (_, before, _), (build, after, here) in zip(observations, observations[1:], strict=False)
        if here and after - before > noise
    )
    first, last = (present[0], present[-1]) if present else (None, None)
    if known:
        status = "known"
    elif not observations or not observations[-1][2]:
        status = "fixed"
    else:
        status = "new" if first == observations[-1][0] else "recurring"
    return Summary(first, last, grew, status)


def ensure_signature_schema(database: Database) -> None:
    for statement in SCHEMA:
        database.write(statement)


_MERGE_BUILDS = """
UNWIND $builds AS build
MERGE (b:Build {build: build.build})
SET b.tag = build.tag, b.sid = build.sid, b.number = build.number, b.recorded_at = $now
"""

_MERGE_SIGNATURES = """
UNWIND $tracked AS t
MERGE (s:Signature {sig: t.sig})
ON CREATE SET s.path = t.path, s.hops = t.hops, s.type = t.type, s.created_at = $now
SET s.known_leak = coalesce(t.known_leak, s.known_leak), s.inspection = t.inspection
"""

# The recorded builds' observations of every signature, and earlier builds' observations of the
# signatures they were not looked up in yet (while their snapshots are still loaded: a dropped one
# adds nothing, and what it added before stays). The bytes observed are the most retained under the
# signature's path, as the gate compares them (queries/gate-paths.cypher says why).
_OBSERVE = """
MATCH (b:Build)
MATCH (snap:Snapshot {sid: b.sid, status: 'ready'}) WHERE snap.tag = b.tag
MATCH (s:Signature) WHERE s.inspection IS NULL
WITH b, s WHERE b.build IN $recorded OR NOT EXISTS { MATCH (:SignatureObservation {sig: s.sig, build: b.build}) }
OPTIONAL MATCH (g:PathGroup {sid: b.sid, sig: s.sig})
WITH b, s, g, coalesce(g.held, g.retained_size, 0) AS held
MERGE (o:SignatureObservation {sig: s.sig, build: b.build})
SET o.retained_size = held, o.objects = coalesce(g.objects, 0),
    o.self_size = coalesce(g.self_size, 0), o.present = held >= $noise
"""

# Inspection rows' observations, as the caller read them (Observed).
_OBSERVE_GIVEN = """
UNWIND $observed AS r
MERGE (o:SignatureObservation {sig: r.sig, build: r.build})
SET o.retained_size = r.retained_size, o.objects = r.objects, o.self_size = 0, o.present = r.present
"""

_READ_ALL = """
MATCH (s:Signature)
OPTIONAL MATCH (o:SignatureObservation {sig: s.sig})
OPTIONAL MATCH (b:Build {build: o.build})
WITH s, o, b ORDER BY b.sid
RETURN s.sig AS sig, s.known_leak AS known_leak,
       [x IN collect({build: o.build, retained: o.retained_size, present: o.present, number: b.number, sid: b.sid})
        WHERE x.build IS NOT NULL] AS observations
"""

_SET_SUMMARIES = """
UNWIND $summaries AS r
MATCH (s:Signature {sig: r.sig})
SET s.first_seen = r.first_seen, s.last_seen = r.last_seen, s.grew = r.grew, s.status = r.status, s.updated_at = $now
"""


def in_build_order(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows with ``number`` and ``sid`` (of their build), sorted by :func:`order_key`."""
    return sorted(rows, key=lambda r: order_key(r.get("number"), r.get("sid") or 0))


def record_builds(
    database: Database,
    snapshots: Sequence[Snapshot],
    tracked: Sequence[Tracked],
    *,
    noise: int,
    observed: Sequence[Observed] = (),
) -> None:
    """Remember ``snapshots`` as builds and ``tracked`` as leak signatures, look every path
    signature up in them (and in earlier builds still loaded), take ``observed`` as the inspection
    rows' observations, and recompute every signature's summary, all in one transaction. A path
    signature counts as present in a build where it retains at least ``noise`` bytes."""
    ensure_signature_schema(database)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    builds = {
        build_name(s): {"build": build_name(s), "tag": s.tag, "sid": s.sid, "number": build_number(build_name(s))}
        for s in snapshots
    }

    def work(tx: neo4j.ManagedTransaction) -> None:
        tx.run(_MERGE_BUILDS, builds=list(builds.values()), now=now).consume()
        tx.run(
            _MERGE_SIGNATURES,
            tracked=[
                {
                    "sig": t.sig,
                    "path": t.path,
                    "hops": list(t.hops),
                    "type": t.type,
                    "known_leak": t.known_leak,
                    "inspection": t.inspection,
                }
                for t in tracked
            ],
            now=now,
        ).consume()
        tx.run(_OBSERVE, recorded=list(builds), noise=noise).consume()
        tx.run(_OBSERVE_GIVEN, observed=[vars(o) for o in observed]).consume()
        summaries = []
        for row in tx.run(_READ_ALL).data():
            observations = [
                (o["build"], o["retained"], bool(o["present"])) for o in in_build_order(row["observations"])
            ]
            summary = summarise(observations, known=row["known_leak"] is not None, noise=noise)
            summaries.append(
                {
                    "sig": row["sig"],
                    "first_seen": summary.first_seen,
                    "last_seen": summary.last_seen,
                    "grew": list(summary.grew),
                    "status": summary.status,
                }
            )
        tx.run(_SET_SUMMARIES, summaries=summaries, now=now).consume()

    with translate_errors(database.connection), database.session() as session:
        session.execute_write(work)
