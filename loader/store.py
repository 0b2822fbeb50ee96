"""Writing analysed snapshots into Neo4j, listing them and dropping them.

The data model is described, with example Cypher, in ``docs/data-model.md``. In short: one
``:Snapshot`` node per load, ``:Object`` nodes keyed by ``(sid, id)``, ``:REF`` relationships for the
references that retain, ``:WEAK_REF`` for those that do not, ``:DOMINATES`` from each object's
immediate dominator, and the ``:Root`` label on the snapshot's root.

Loads are atomic as far as readers can tell: a snapshot's objects belong to its ``sid`` (a number
allocated per load), and the ``:Snapshot`` node that gives the tag to that ``sid`` says ``status:
'loading'`` until the last batch is written. Every query starts from a ``ready`` snapshot, so a load
that fails, is interrupted or is killed leaves nothing visible; the next load of the tag, or
``heapdb drop``, deletes the leftovers. ``--replace`` switches the tag to the new ``sid`` in one
transaction and deletes the old objects afterwards.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from heapdb import progress
from heapdb.db import Database, translate_errors
from heapdb.errors import HeapdbError, NotFound
from heapdb.loader.analysis import Analysis, outermost_members
from heapdb.loader.graph import EDGE_KIND_NAMES, NUMERIC_NAME_KINDS, HeapGraph
from heapdb.loader.paths import FirstPaths, first_paths, path_hops
from heapdb.units import shorten

DEFAULT_BATCH = 20_000
# What a load writes, versioned: a snapshot stored under an older version lacks what queries now read
# and must be loaded again. 2: top ranks, group retained sizes counting each byte once, nested V8
# root groups folded in path signatures, :FIRST relationships.
STORE_VERSION = 2
TOP_RANKS = 1000  # how far top lists go (the API's largest limit); see LoadInput.top_ranks

SCHEMA = (
    "CREATE CONSTRAINT heapdb_snapshot_sid IF NOT EXISTS FOR (s:Snapshot) REQUIRE s.sid IS UNIQUE",
    "CREATE INDEX heapdb_snapshot_tag IF NOT EXISTS FOR (s:Snapshot) ON (s.tag)",
    "CREATE CONSTRAINT heapdb_object_key IF NOT EXISTS FOR (o:Object) REQUIRE (o.sid, o.id) IS UNIQUE",
    "CREATE CONSTRAINT heapdb_path_group_key IF NOT EXISTS FOR (g:PathGroup) REQUIRE (g.sid, g.sig) IS UNIQUE",
    "CREATE INDEX heapdb_object_path IF NOT EXISTS FOR (o:Object) ON (o.sid, o.path_sig)",
    "CREATE CONSTRAINT heapdb_type_group_key IF NOT EXISTS FOR (t:TypeGroup) REQUIRE (t.sid, t.type) IS UNIQUE",
    # Only the first TOP_RANKS objects of a snapshot (overall, and per type) carry these properties.
    "CREATE INDEX heapdb_object_rank IF NOT EXISTS FOR (o:Object) ON (o.sid, o.rank)",
    "CREATE INDEX heapdb_object_type_rank IF NOT EXISTS FOR (o:Object) ON (o.sid, o.type, o.type_rank)",
)


class LoadError(HeapdbError):
    """A load that cannot go ahead (the tag exists, another load of it runs)."""


@dataclass
class LoadInput:
    """What the loader writes: the graph, its analysis, and which edges retain."""

    graph: HeapGraph
    retained_size: np.ndarray
    retained_count: np.ndarray
    distance: np.ndarray
    idom: np.ndarray
    reachable: np.ndarray
    retaining: np.ndarray  # bool[m]: the edge retains (stored as :REF), else :WEAK_REF
    paths: FirstPaths  # each object's first retainer path and its signature

    @classmethod
    def from_analysis(cls, graph: HeapGraph, result: Analysis) -> LoadInput:
        return cls(
            graph=graph,
            retained_size=result.retained_size,
            retained_count=result.retained_count,
            distance=result.distance,
            idom=result.idom,
            reachable=result.reachable,
            retaining=result.retaining,
            paths=first_paths(graph, result.retaining),
        )

    def path_groups(self) -> list[list[Any]]:
        """One row per distinct first-path signature: [sig, path text, hops, *group figures]."""
        rows = []
        for sig, first, figures in self._groups(self.paths.signature):
            hops = path_hops(self.graph, self.paths, first)
            rows.append([int(sig), " / ".join(hops), hops, *figures])
        return rows

    def type_groups(self) -> list[list[Any]]:
        """One row per type: [type, *group figures]."""
        g = self.graph
        return [[g.strings[int(t)], *figures] for t, _first, figures in self._groups(g.type.astype(np.int64))]

    def _groups(self, key: np.ndarray) -> list[tuple[int, int, list[int]]]:
        """Reachable objects (the root and synthetic nodes aside) grouped by ``key``.

        Per group: the key, its first member, and [objects, self size, retained size, largest
        retained size]. The retained size counts each byte once, by Chrome DevTools' rule (see
        :func:`~heapdb.loader.analysis.outermost_members`): members below another member of the
        group in the dominator tree, or of zero size, add nothing.
        """
        g = self.graph
        members = self._members()
        if not members.any():
            return []
        index = np.flatnonzero(members)
        keys, first, inverse, counts = np.unique(key[index], return_index=True, return_inverse=True, return_counts=True)
        self_size = np.bincount(inverse, weights=g.self_size[index], minlength=keys.size)
        group = np.zeros(g.node_count, dtype=np.int64)
        group[index] = inverse
        outermost = outermost_members(self.idom, g.root, group, members & (g.self_size > 0), keys.size)[index]
        retained = np.bincount(inverse, weights=np.where(outermost, self.retained_size[index], 0), minlength=keys.size)
        largest = np.zeros(keys.size, dtype=np.int64)
        np.maximum.at(largest, inverse, self.retained_size[index])
        return [
            (int(k), int(index[f]), [int(c), int(a), int(r), int(x)])
            for k, f, c, a, r, x in zip(keys.tolist(), first.tolist(), counts.tolist(), self_size.tolist(), retained.tolist(), largest.tolist())
        ]

    def _members(self) -> np.ndarray:
        """bool[n]: the objects groups and top lists count: reachable, not the root, not synthetic."""
        g = self.graph
        synthetic = np.isin(g.kind, [i for i, k in enumerate(g.node_kinds) if k == "synthetic"])
        members = self.reachable & ~synthetic
        members[g.root] = False
        return members

    def top_ranks(self, depth: int = TOP_RANKS) -> tuple[np.ndarray, np.ndarray]:
        """Each object's place among the largest retainers, overall and within its type (0: not in the first ``depth``).

        Stored at load so the ``top`` question reads at most ``depth`` objects through an index
        instead of sorting millions; only ranked objects carry the properties, so the index stays
        small. Order: retained size descending, then id.
        """
        g = self.graph
        candidates = np.flatnonzero(self._members())
        order = candidates[np.lexsort((g.ids[candidates], -self.retained_size[candidates]))]
        rank = np.zeros(g.node_count, dtype=np.int64)
        rank[order[:depth]] = np.arange(1, min(depth, order.size) + 1)
        by_type = order[np.argsort(g.type[order], kind="stable")]  # stable: each type keeps the size order
        types = g.type[by_type]
        starts = np.flatnonzero(np.r_[True, types[1:] != types[:-1]]) if types.size else np.zeros(0, dtype=np.int64)
        place = np.arange(types.size) - np.repeat(starts, np.diff(np.r_[starts, types.size]))
        type_rank = np.zeros(g.node_count, dtype=np.int64)
        kept = place < depth
        type_rank[by_type[kept]] = place[kept] + 1
        return rank, type_rank


@dataclass
class LoadReport:
    tag: str
    sid: int
    objects: int
    references: int
    dominator_edges: int
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())


def ensure_schema(database: Database) -> None:
    """Create heapdb's constraints and indexes if missing, and wait until they are online."""
    for statement in SCHEMA:
        database.write(statement)
    with translate_errors(database.connection), database.session() as session:
        session.run("CALL db.awaitIndexes(300)").consume()


# --- snapshots --------------------------------------------------------------------------------


def list_snapshots(database: Database, *, include_incomplete: bool = False) -> list[dict[str, Any]]:
    """All snapshots, oldest first; loads in progress or abandoned only when asked for."""
    rows = database.read(
        "MATCH (s:Snapshot) WHERE $all OR s.status = 'ready' "
        "RETURN s {.*} AS s ORDER BY s.loaded_at, s.sid",
        {"all": include_incomplete},
    )
    out = []
    for row in rows:
        snapshot = row["s"]
        if isinstance(snapshot.get("meta"), str):
            snapshot["meta"] = json.loads(snapshot["meta"])
        out.append(snapshot)
    return out


def get_snapshot(database: Database, tag: str) -> dict[str, Any]:
    """The ready snapshot with this tag, or :class:`NotFound`."""
    rows = database.read("MATCH (s:Snapshot {tag: $tag, status: 'ready'}) RETURN s {.*} AS s", {"tag": tag})
    if not rows:
        raise NotFound(f"no snapshot tagged {tag!r} (see `heapdb snapshots`)")
    return rows[0]["s"]


def _delete_objects(database: Database, sid: int, batch: int = 20_000) -> None:
    """Delete a snapshot's objects and references, committing every ``batch`` rows.

    Relationships go first, by themselves: a hub object can have millions of them, and DETACH DELETE
    would take them all in one transaction. Every reference of a snapshot starts at one of its objects.
    """
    with translate_errors(database.connection), database.session() as session:
        session.run(
            "MATCH (o:Object {sid: $sid})-[r]->() WHERE o.id IS NOT NULL "
            "CALL (r) { DELETE r } IN TRANSACTIONS OF $batch ROWS",
            sid=sid,
            batch=batch,
        ).consume()
        session.run(
            "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL "
            "CALL (o) { DELETE o } IN TRANSACTIONS OF $batch ROWS",
            sid=sid,
            batch=batch,
        ).consume()
        for label, key in (("PathGroup", "sig"), ("TypeGroup", "type")):
            session.run(
                f"MATCH (g:{label} {{sid: $sid}}) WHERE g.{key} IS NOT NULL CALL (g) {{ DELETE g }} IN TRANSACTIONS OF $batch ROWS",
                sid=sid,
                batch=batch,
            ).consume()
    database.write("MATCH (s:Snapshot {sid: $sid}) DELETE s", {"sid": sid})


def drop(database: Database, tag: str) -> int:
    """Delete every snapshot with this tag, ready or left over. Returns how many were deleted."""
    ensure_schema(database)
    rows = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.sid AS sid, s.status AS status, s.pid AS pid, s.host AS host", {"tag": tag})
    if not rows:
        raise NotFound(f"no snapshot tagged {tag!r}")
    for row in rows:
        if row["status"] == "loading" and _load_alive(row):
            raise LoadError(f"snapshot {tag!r} is being loaded right now (pid {row['pid']} on {row['host']}); drop it when that ends")
    for row in rows:
        database.write("MATCH (s:Snapshot {sid: $sid}) SET s.status = 'dropping'", {"sid": row["sid"]})
        _delete_objects(database, row["sid"])
    return len(rows)


def _load_alive(row: dict[str, Any]) -> bool:
    """Whether the process that started a load still runs (only knowable on the same host)."""
    if row.get("host") != socket.gethostname() or not row.get("pid"):
        return False
    try:
        os.kill(int(row["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return int(row["pid"]) != os.getpid()


def _claim(database: Database, tag: str, replace: bool, properties: dict[str, Any]) -> tuple[int, list[int], list[int]]:
    """Create the new snapshot in state ``loading``; return its sid, the ready sids it will replace and leftovers."""
    rows = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.sid AS sid, s.status AS status, s.pid AS pid, s.host AS host", {"tag": tag})
    ready = [r["sid"] for r in rows if r["status"] == "ready"]
    if ready and not replace:
        raise LoadError(f"a snapshot tagged {tag!r} exists already; use --replace to load over it, or `heapdb drop {tag}`")
    for row in rows:
        if row["status"] == "loading" and _load_alive(row):
            raise LoadError(f"snapshot {tag!r} is being loaded right now by pid {row['pid']}")
    leftovers = [r["sid"] for r in rows if r["status"] != "ready"]
    for attempt in range(5):
        try:
            created = database.write(
                "OPTIONAL MATCH (s:Snapshot) WITH coalesce(max(s.sid), 0) + 1 AS sid "
                "CREATE (n:Snapshot {sid: sid, tag: $tag, status: 'loading'}) SET n += $props RETURN sid",
                {"tag": tag, "props": properties},
            )
            return int(created[0]["sid"]), ready, leftovers
        except HeapdbError:
            if attempt == 4:  # two loads raced for the same sid five times: give up loudly
                raise
    raise AssertionError("unreachable")


# --- rows -------------------------------------------------------------------------------------


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


def _node_rows(data: LoadInput, ranks: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> list[list[Any]]:
    g = data.graph
    strings, kinds = g.strings, g.node_kinds
    detached = g.detachedness
    columns = zip(
        g.ids[lo:hi].tolist(),
        g.type[lo:hi].tolist(),
        g.name[lo:hi].tolist(),
        g.kind[lo:hi].tolist(),
        g.self_size[lo:hi].tolist(),
        data.retained_size[lo:hi].tolist(),
        data.retained_count[lo:hi].tolist(),
        data.distance[lo:hi].tolist(),
        data.reachable[lo:hi].tolist(),
        (detached[lo:hi].tolist() if detached is not None else [0] * (hi - lo)),
        data.paths.signature[lo:hi].tolist(),
        ranks[0][lo:hi].tolist(),
        ranks[1][lo:hi].tolist(),
    )
    return [
        [i, strings[t], shorten(strings[n]), kinds[k], s, r, c, (d if d >= 0 else None), bool(reach), det == 2, (p or None), (rk or None), (tr or None)]
        for i, t, n, k, s, r, c, d, reach, det, p, rk, tr in columns
    ]


def _edge_rows(data: LoadInput, sources: np.ndarray, lo: int, hi: int, retaining: bool) -> list[list[Any]]:
    g = data.graph
    selected = np.flatnonzero(data.retaining[lo:hi] == retaining) + lo
    return [[src, dst, *_reference_label(g, kind, name)] for src, dst, kind, name in zip(
        g.ids[sources[selected]].tolist(),
        g.ids[g.edge_to[selected]].tolist(),
        g.edge_kind[selected].tolist(),
        g.edge_name[selected].tolist(),
    )]


CREATE_OBJECTS = """
UNWIND $rows AS r
CREATE (o:Object {sid: $sid, id: r[0], type: r[1], name: r[2], kind: r[3], self_size: r[4],
                  retained_size: r[5], retained_count: r[6], distance: r[7], reachable: r[8], path_sig: r[10],
                  rank: r[11], type_rank: r[12]})
FOREACH (_ IN CASE WHEN r[9] THEN [1] ELSE [] END | SET o.detached = true)
"""

def _first_rows(data: LoadInput, nodes: np.ndarray) -> list[list[Any]]:
    """[holder id, object id, kind, name] of the reference each object's first path arrives by."""
    g = data.graph
    edges = data.paths.parent_edge[nodes]
    sources = np.searchsorted(g.edge_start, edges, side="right") - 1
    return [[a, b, *_reference_label(g, kind, name)] for a, b, kind, name in zip(
        g.ids[sources].tolist(), g.ids[nodes].tolist(), g.edge_kind[edges].tolist(), g.edge_name[edges].tolist()
    )]


def _reference_label(g: HeapGraph, kind: int, name: int) -> tuple[str, str]:
    """A reference's stored kind and name: element indexes as text, other names from the string table."""
    label = str(name) if kind in _NUMERIC_KINDS else shorten(g.strings[name])
    return EDGE_KIND_NAMES[kind], label


_NUMERIC_KINDS = frozenset(int(k) for k in NUMERIC_NAME_KINDS)


CREATE_REFS = """
UNWIND $rows AS r
MATCH (a:Object {sid: $sid, id: r[0]}), (b:Object {sid: $sid, id: r[1]})
CREATE (a)-[:REF {kind: r[2], name: r[3]}]->(b)
"""

CREATE_WEAK_REFS = CREATE_REFS.replace(":REF", ":WEAK_REF")

CREATE_PATH_GROUPS = """
UNWIND $rows AS r
CREATE (:PathGroup {sid: $sid, sig: r[0], path: r[1], hops: r[2], objects: r[3], self_size: r[4], retained_size: r[5],
                    max_retained_size: r[6]})
"""

CREATE_TYPE_GROUPS = """
UNWIND $rows AS r
CREATE (:TypeGroup {sid: $sid, type: r[0], objects: r[1], self_size: r[2], retained_size: r[3], max_retained_size: r[4]})
"""

CREATE_FIRST = """
UNWIND $rows AS r
MATCH (a:Object {sid: $sid, id: r[0]}), (b:Object {sid: $sid, id: r[1]})
CREATE (a)-[:FIRST {kind: r[2], name: r[3]}]->(b)
"""

CREATE_DOMINATES = """
UNWIND $rows AS r
MATCH (a:Object {sid: $sid, id: r[0]}), (b:Object {sid: $sid, id: r[1]})
CREATE (a)-[:DOMINATES]->(b)
"""


def _run_batches(
    database: Database,
    statement: str,
    sid: int,
    batches: Iterator[list[list[Any]]],
    bar: Any,
    workers: int,
) -> int:
    """Send row batches, each in its own write transaction, ``workers`` at a time."""

    def send(rows: list[list[Any]]) -> int:
        with translate_errors(database.connection), database.session() as session:
            session.execute_write(lambda tx: tx.run(statement, rows=rows, sid=sid).consume())
        return len(rows)

    written = 0
    # Building the next batch's rows in Python overlaps with Neo4j writing the previous one.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = []
        for rows in batches:
            if not rows:
                continue
            pending.append(pool.submit(send, rows))
            while len(pending) >= workers * 2:
                done = pending.pop(0).result()
                written += done
                bar.update(done)
        for future in pending:
            done = future.result()
            written += done
            bar.update(done)
    return written


def load(
    database: Database,
    data: LoadInput,
    tag: str,
    *,
    replace: bool = False,
    meta: dict[str, str] | None = None,
    source: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    workers: int = 2,
    say: Callable[[str], None] = lambda _m: None,
) -> LoadReport:
    """Write an analysed graph into Neo4j under ``tag``; visible to queries only once complete."""
    g = data.graph
    ensure_schema(database)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    properties = {
        "store_version": STORE_VERSION,
        "format": g.meta.get("format", "unknown"),
        "runtime": str(g.meta.get("runtime", "")),
        "source": source or "",
        "object_count": g.node_count,
        "reference_count": g.edge_count,
        "total_size": int(g.self_size.sum()),
        "reachable_size": int(g.self_size[data.reachable].sum()),
        "unreachable_count": int(g.node_count - np.count_nonzero(data.reachable)),
        "root_id": int(g.ids[g.root]),
        "started_at": now,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "meta": json.dumps({**{k: v for k, v in g.meta.items() if _jsonable(v)}, **(meta or {})}, sort_keys=True),
    }
    sid, replaced, leftovers = _claim(database, tag, replace, properties)
    report = LoadReport(tag=tag, sid=sid, objects=g.node_count, references=g.edge_count, dominator_edges=0)
    # From here on a failure, Ctrl-C or kill leaves the snapshot in `loading`: invisible to queries,
    # and removed by the next load or drop of the tag. Deleting on the way out would be wrong after a
    # lost connection and slow after Ctrl-C.
    for old in leftovers:
        say(f"removing the leftovers of an earlier, unfinished load of {tag!r}")
        _delete_objects(database, old)

    started = time.monotonic()
    ranks = data.top_ranks()
    with progress.bar("write objects", total=g.node_count, unit="obj") as bar:
        _run_batches(database, CREATE_OBJECTS, sid, (_node_rows(data, ranks, lo, hi) for lo, hi in _chunks(g.node_count, batch_size)), bar, workers)
    database.write("MATCH (o:Object {sid: $sid, id: $id}) SET o:Root", {"sid": sid, "id": int(g.ids[g.root])})
    report.seconds["objects"] = time.monotonic() - started

    started = time.monotonic()
    sources = g.edge_sources()
    with progress.bar("write references", total=g.edge_count, unit="ref") as bar:
        for statement, retaining in ((CREATE_REFS, True), (CREATE_WEAK_REFS, False)):
            _run_batches(
                database, statement, sid, (_edge_rows(data, sources, lo, hi, retaining) for lo, hi in _chunks(g.edge_count, batch_size)), bar, workers
            )
    del sources
    report.seconds["references"] = time.monotonic() - started

    started = time.monotonic()
    dominated = np.flatnonzero(data.idom >= 0)
    report.dominator_edges = int(dominated.size)
    with progress.bar("write dominator tree", total=int(dominated.size), unit="edge") as bar:
        batches = (
            [[a, b] for a, b in zip(g.ids[data.idom[dominated[lo:hi]]].tolist(), g.ids[dominated[lo:hi]].tolist())]
            for lo, hi in _chunks(int(dominated.size), batch_size)
        )
        _run_batches(database, CREATE_DOMINATES, sid, batches, bar, workers)
    report.seconds["dominators"] = time.monotonic() - started

    # The first paths as their own relationship type: every reachable object has exactly one incoming
    # :FIRST, which Neo4j finds directly even on an object with a million incoming :REF, so
    # why-alive reads a path in as many steps as it is long.
    started = time.monotonic()
    reached = np.flatnonzero(data.paths.parent_edge >= 0)
    with progress.bar("write first paths", total=int(reached.size), unit="ref") as bar:
        _run_batches(database, CREATE_FIRST, sid, (_first_rows(data, reached[lo:hi]) for lo, hi in _chunks(int(reached.size), batch_size)), bar, workers)
    report.seconds["first paths"] = time.monotonic() - started

    started = time.monotonic()
    for label, statement, groups in (
        ("path groups", CREATE_PATH_GROUPS, data.path_groups()),
        ("type groups", CREATE_TYPE_GROUPS, data.type_groups()),
    ):
        with progress.bar(f"write {label}", total=len(groups), unit="group") as bar:
            _run_batches(database, statement, sid, (groups[lo:hi] for lo, hi in _chunks(len(groups), batch_size)), bar, workers)
    report.seconds["groups"] = time.monotonic() - started

    # The switch: in one transaction the new snapshot becomes the tag's, the old one stops being.
    database.write(
        "MATCH (n:Snapshot {sid: $sid}) "
        "OPTIONAL MATCH (old:Snapshot) WHERE old.sid IN $replaced SET old.status = 'dropping' "
        "WITH DISTINCT n SET n.status = 'ready', n.loaded_at = $now, n.load_seconds = $seconds REMOVE n.pid",
        {"sid": sid, "replaced": replaced, "now": datetime.now(timezone.utc).isoformat(timespec="seconds"), "seconds": report.total_seconds},
    )
    for old in replaced:
        started = time.monotonic()
        _delete_objects(database, old)
        report.seconds["drop replaced"] = time.monotonic() - started
    return report


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
