"""Writing an analysed snapshot into Neo4j: :func:`load`.

In short (``docs/data-model.md`` has the whole model): one ``:Snapshot`` node per load, ``:Object``
nodes keyed by ``(sid, id)`` that also name their immediate dominator (``dom``) and the holder their
first retainer path arrives from (``via``), ``:PathGroup`` and ``:TypeGroup`` totals, the ``:Root``
label on the snapshot's root, then ``:REF`` relationships for the references that retain and
``:WEAK_REF`` for those that do not. Rows are sent in batches of UNWIND, several transactions at a
time. The snapshot answers once the objects and groups are written, while the references still
stream in (see :func:`load`); until then it is invisible (see :mod:`.lifecycle`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from heapdb import progress
from heapdb.db import Database, translate_errors
from heapdb.loader.store.lifecycle import HEARTBEAT_SECONDS, claim, hide, start_purge
from heapdb.loader.store.schema import STORE_VERSION, ensure_schema
from heapdb.loader.store.summaries import NO_OBJECT, LoadInput, reference_label
from heapdb.units import shorten

DEFAULT_BATCH = 20_000  # rows per write transaction


@dataclass
class LoadReport:
    """What a load wrote, and how long each phase took (seconds by phase name, in order)."""

    tag: str
    sid: int
    objects: int
    references: int
    seconds: dict[str, float] = field(default_factory=dict)
    ready_seconds: float = 0.0  # from the start of the write until the snapshot answered questions

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())


# --- rows -------------------------------------------------------------------------------------


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


def node_rows(data: LoadInput, ranks: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> list[list[Any]]:
    """The rows of ``CREATE_OBJECTS`` for objects ``lo`` to ``hi`` (see its column list)."""
    g = data.graph
    strings, kinds = g.strings, g.node_kinds
    detached = g.detachedness
    holders = data.tree_ids
    labels = data.first_hop_labels(lo, hi)
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
        holders.dom[lo:hi].tolist(),
        holders.via[lo:hi].tolist(),
        labels,
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
            (dom if dom != NO_OBJECT else None),
            (via if via != NO_OBJECT else None),
            (label[0] if label else None),
            (label[1] if label else None),
        ]
        for i, t, n, k, s, r, c, d, reach, det, p, rk, tr, dom, via, label in columns
    ]


def _edge_rows(data: LoadInput, sources: np.ndarray, lo: int, hi: int, retaining: bool) -> list[list[Any]]:
    g = data.graph
    selected = np.flatnonzero(data.retaining[lo:hi] == retaining) + lo
    return [
        [src, dst, *reference_label(g, kind, name)]
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
                  rank: r[11], type_rank: r[12], dom: r[13], via: r[14], via_kind: r[15], via_name: r[16]})
FOREACH (_ IN CASE WHEN r[9] THEN [1] ELSE [] END | SET o.detached = true)
"""


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
    on_ready: Callable[[LoadReport], None] = lambda _r: None,
) -> LoadReport:
    """Write an analysed graph into Neo4j under ``tag``, in two steps.

    First the objects (each carrying its immediate dominator and first-path holder) and the group
    totals; then the snapshot becomes ``ready`` with ``references_ready: false``, ``on_ready`` is
    called, and every question that needs no references answers. Then the references, after which
    ``references_ready`` turns true. A load that fails or is interrupted at any point ends invisible.
    """
    g = data.graph
    ensure_schema(database)
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
        "started_at": _now(),
        "references_ready": False,
        "references_written": 0,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "heartbeat": _now(),
        "meta": json.dumps({**{k: v for k, v in g.meta.items() if _jsonable(v)}, **(meta or {})}, sort_keys=True),
    }
    sid, replaced, leftovers = claim(database, tag, replace, properties)
    report = LoadReport(tag=tag, sid=sid, objects=g.node_count, references=g.edge_count)
    if leftovers:
        say(f"the leftovers of an earlier, unfinished load of {tag!r} are freed in the background")
        hide(database, leftovers)
        start_purge(database)
    with _Heartbeat(database, sid) as heartbeat:
        try:
            _write_objects_and_groups(database, data, sid, report, batch_size, workers)
            _switch(database, sid, replaced, report)
            if replaced:
                start_purge(database)
            on_ready(report)
            _write_references(database, data, sid, report, batch_size, workers, heartbeat)
        except BaseException:
            # Whatever went wrong (a lost connection, Ctrl-C), the snapshot must not stay visible or
            # look like a load in progress; if even this fails, the next heapdb command finds the
            # loader gone and hides it (see lifecycle).
            with contextlib.suppress(Exception):
                hide(database, [sid])
                start_purge(database)
            raise
    database.write(
        "MATCH (n:Snapshot {sid: $sid}) SET n.references_ready = true, n.references_written = $count, "
        "n.loaded_at = $now, n.load_seconds = $seconds REMOVE n.pid, n.host, n.heartbeat",
        {"sid": sid, "count": g.edge_count, "now": _now(), "seconds": report.total_seconds},
    )
    return report


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_objects_and_groups(
    database: Database, data: LoadInput, sid: int, report: LoadReport, batch_size: int, workers: int
) -> None:
    g = data.graph
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
    for label, statement, groups in (
        ("path groups", CREATE_PATH_GROUPS, data.path_groups()),
        ("type groups", CREATE_TYPE_GROUPS, data.type_groups()),
    ):
        with progress.bar(f"write {label}", total=len(groups), unit="group") as bar:
            _run_batches(
                database, statement, sid, (groups[lo:hi] for lo, hi in _chunks(len(groups), batch_size)), bar, workers
            )
    report.seconds["groups"] = time.monotonic() - started


def _switch(database: Database, sid: int, replaced: list[int], report: LoadReport) -> None:
    """In one transaction the new snapshot becomes the tag's and the old ones stop being."""
    report.ready_seconds = report.total_seconds
    database.write(
        "MATCH (n:Snapshot {sid: $sid}) "
        "OPTIONAL MATCH (old:Snapshot) WHERE old.sid IN $replaced SET old.status = 'dropping' "
        "WITH DISTINCT n SET n.status = 'ready', n.ready_at = $now, n.ready_seconds = $seconds",
        {"sid": sid, "replaced": replaced, "now": _now(), "seconds": report.ready_seconds},
    )


def _write_references(
    database: Database,
    data: LoadInput,
    sid: int,
    report: LoadReport,
    batch_size: int,
    workers: int,
    heartbeat: _Heartbeat,
) -> None:
    g = data.graph
    started = time.monotonic()
    sources = g.edge_sources()
    with progress.bar("write references", total=g.edge_count, unit="ref") as bar:
        for statement, retaining in ((CREATE_REFS, True), (CREATE_WEAK_REFS, False)):
            _run_batches(
                database,
                statement,
                sid,
                (_edge_rows(data, sources, lo, hi, retaining) for lo, hi in _chunks(g.edge_count, batch_size)),
                _Counting(bar, heartbeat),
                workers,
            )
    report.seconds["references"] = time.monotonic() - started


class _Heartbeat:
    """Tells other heapdb processes, every HEARTBEAT_SECONDS, that this load is alive and how far it got.

    A load killed on another host cannot be found by its pid; its stale heartbeat gives it away.
    """

    def __init__(self, database: Database, sid: int) -> None:
        self.database, self.sid = database, sid
        self.written = 0  # references written so far, shown by `heapdb snapshots`
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heapdb-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(Exception):  # a missed beat is harmless; the load reports real failures
                self.database.write(
                    "MATCH (n:Snapshot {sid: $sid}) SET n.heartbeat = $now, n.references_written = $written",
                    {"sid": self.sid, "now": _now(), "written": self.written},
                )


@dataclass
class _Counting:
    """A progress bar that also keeps the heartbeat's count of written references."""

    bar: Any
    heartbeat: _Heartbeat

    def update(self, n: int) -> None:
        self.bar.update(n)
        self.heartbeat.written += n


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
