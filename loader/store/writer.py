"""Writing an analysed snapshot into Neo4j: :func:`load`.

In short (``docs/data-model.md`` has the whole model): one ``:Snapshot`` node per load, ``:Object``
nodes keyed by ``(sid, id)``, ``:REF`` relationships for the references that retain, ``:WEAK_REF``
for those that do not, ``:DOMINATES`` from each object's immediate dominator, ``:FIRST`` along each
object's first path, ``:PathGroup`` and ``:TypeGroup`` totals, and the ``:Root`` label on the
snapshot's root. Rows are sent in batches of UNWIND, several transactions at a time; the snapshot
becomes visible only once everything is written (see :mod:`.lifecycle`).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from heapdb import progress
from heapdb.db import Database, translate_errors
from heapdb.loader.graph import EDGE_KIND_NAMES, NUMERIC_NAME_KINDS, HeapGraph
from heapdb.loader.store.lifecycle import claim, delete_objects
from heapdb.loader.store.schema import STORE_VERSION, ensure_schema
from heapdb.loader.store.summaries import LoadInput
from heapdb.units import shorten

DEFAULT_BATCH = 20_000  # rows per write transaction


@dataclass
class LoadReport:
    """What a load wrote, and how long each phase took (seconds by phase name, in order)."""

    tag: str
    sid: int
    objects: int
    references: int
    dominator_edges: int
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())


# --- rows -------------------------------------------------------------------------------------


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


def node_rows(data: LoadInput, ranks: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> list[list[Any]]:
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
        [
            i,
            strings[t],
            shorten(strings[n]),
            kinds[k],
            s,
            r,
            c,
            (d if d >= 0 else None),
            bool(reach),
            det == 2,
            (p or None),
            (rk or None),
            (tr or None),
        ]
        for i, t, n, k, s, r, c, d, reach, det, p, rk, tr in columns
    ]


def _edge_rows(data: LoadInput, sources: np.ndarray, lo: int, hi: int, retaining: bool) -> list[list[Any]]:
    g = data.graph
    selected = np.flatnonzero(data.retaining[lo:hi] == retaining) + lo
    return [
        [src, dst, *_reference_label(g, kind, name)]
        for src, dst, kind, name in zip(
            g.ids[sources[selected]].tolist(),
            g.ids[g.edge_to[selected]].tolist(),
            g.edge_kind[selected].tolist(),
            g.edge_name[selected].tolist(),
        )
    ]


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
    return [
        [a, b, *_reference_label(g, kind, name)]
        for a, b, kind, name in zip(
            g.ids[sources].tolist(), g.ids[nodes].tolist(), g.edge_kind[edges].tolist(), g.edge_name[edges].tolist()
        )
    ]


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
    now = datetime.now(UTC).isoformat(timespec="seconds")
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
    sid, replaced, leftovers = claim(database, tag, replace, properties)
    report = LoadReport(tag=tag, sid=sid, objects=g.node_count, references=g.edge_count, dominator_edges=0)
    # From here on a failure, Ctrl-C or kill leaves the snapshot in `loading`: invisible to queries,
    # and removed by the next load or drop of the tag. Deleting on the way out would be wrong after a
    # lost connection and slow after Ctrl-C.
    for old in leftovers:
        say(f"removing the leftovers of an earlier, unfinished load of {tag!r}")
        delete_objects(database, old)

    started = time.monotonic()
    ranks = data.top_ranks()
    with progress.bar("write objects", total=g.node_count, unit="obj") as bar:
        _run_batches(
            database,
            CREATE_OBJECTS,
            sid,
            (node_rows(data, ranks, lo, hi) for lo, hi in _chunks(g.node_count, batch_size)),
            bar,
            workers,
        )
    database.write("MATCH (o:Object {sid: $sid, id: $id}) SET o:Root", {"sid": sid, "id": int(g.ids[g.root])})
    report.seconds["objects"] = time.monotonic() - started

    started = time.monotonic()
    sources = g.edge_sources()
    with progress.bar("write references", total=g.edge_count, unit="ref") as bar:
        for statement, retaining in ((CREATE_REFS, True), (CREATE_WEAK_REFS, False)):
            _run_batches(
                database,
                statement,
                sid,
                (_edge_rows(data, sources, lo, hi, retaining) for lo, hi in _chunks(g.edge_count, batch_size)),
                bar,
                workers,
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
        _run_batches(
            database,
            CREATE_FIRST,
            sid,
            (_first_rows(data, reached[lo:hi]) for lo, hi in _chunks(int(reached.size), batch_size)),
            bar,
            workers,
        )
    report.seconds["first paths"] = time.monotonic() - started

    started = time.monotonic()
    for label, statement, groups in (
        ("path groups", CREATE_PATH_GROUPS, data.path_groups()),
        ("type groups", CREATE_TYPE_GROUPS, data.type_groups()),
    ):
        with progress.bar(f"write {label}", total=len(groups), unit="group") as bar:
            _run_batches(
                database, statement, sid, (groups[lo:hi] for lo, hi in _chunks(len(groups), batch_size)), bar, workers
            )
    report.seconds["groups"] = time.monotonic() - started

    # The switch: in one transaction the new snapshot becomes the tag's, the old one stops being.
    database.write(
        "MATCH (n:Snapshot {sid: $sid}) "
        "OPTIONAL MATCH (old:Snapshot) WHERE old.sid IN $replaced SET old.status = 'dropping' "
        "WITH DISTINCT n SET n.status = 'ready', n.loaded_at = $now, n.load_seconds = $seconds REMOVE n.pid",
        {
            "sid": sid,
            "replaced": replaced,
            "now": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": report.total_seconds,
        },
    )
    for old in replaced:
        started = time.monotonic()
        delete_objects(database, old)
        report.seconds["drop replaced"] = time.monotonic() - started
    return report


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
